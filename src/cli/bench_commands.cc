#include "cli/command.h"

namespace gpuscale::cli {

void AddBenchCommands(CLI::App& /*app*/, CommandContext& /*ctx*/) {}

}  // namespace gpuscale::cli
