#include "cli/command.h"

namespace gpuscale::cli {

void AddGpuCommands(CLI::App& /*app*/, CommandContext& /*ctx*/) {}

}  // namespace gpuscale::cli
