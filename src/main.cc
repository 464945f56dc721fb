// gpuscale: wiring only; every subcommand lives in src/cli/.
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return gpuscale::cli::RunCli(args, std::cout, std::cerr);
}
