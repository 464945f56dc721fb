#include "cli/command.h"

namespace gpuscale::cli {

void AddServeCommands(CLI::App& /*app*/, CommandContext& /*ctx*/) {}

}  // namespace gpuscale::cli
