#include "cli/command.h"

namespace gpuscale::cli {

void AddPolicyCommands(CLI::App& /*app*/, CommandContext& /*ctx*/) {}

}  // namespace gpuscale::cli
