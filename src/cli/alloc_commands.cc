#include "cli/command.h"

namespace gpuscale::cli {

void AddAllocCommands(CLI::App& /*app*/, CommandContext& /*ctx*/) {}

}  // namespace gpuscale::cli
