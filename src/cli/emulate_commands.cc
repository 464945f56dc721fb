#include "cli/command.h"

namespace gpuscale::cli {

void AddEmulateCommands(CLI::App& /*app*/, CommandContext& /*ctx*/) {}

}  // namespace gpuscale::cli
