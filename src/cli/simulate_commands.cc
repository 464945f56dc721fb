#include "cli/command.h"

namespace gpuscale::cli {

void AddSimulateCommands(CLI::App& /*app*/, CommandContext& /*ctx*/) {}

}  // namespace gpuscale::cli
