// `gpuscale emulate`'s engine-flag errors through the whole CLI (in-process): vLLM-style
// unknown flags fail naming the flag unless --accept-unknown-flags, and bad values name
// their flag. (Servers that accept the flags are exercised in experiment_runner_test.cc.)
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace gpuscale {
namespace {

struct CliCase {
  std::vector<std::string> args;
  std::string expected_in_error;
};

TEST(EmulateFlagsCliTest, BadEngineFlagsAreUsageErrorsNamingTheFlag) {
  const std::vector<CliCase> cases = {
      {{"emulate", "--swap-space", "4"}, "--swap-space"},
      {{"emulate", "--enforce-eager"}, "--accept-unknown-flags"},
      {{"emulate", "-tp", "two"}, "-tp"},
      {{"emulate", "--tensor-parallel-size", "0"}, "--tensor-parallel-size"},
      {{"emulate", "--quantization", "int2"}, "--quantization"},
      {{"emulate", "--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization"},
      {{"emulate", "--max-num-seqs", "0"}, "--max-batch-size"},
  };
  for (const CliCase& c : cases) {
    std::ostringstream out, err;
    EXPECT_EQ(cli::RunCli(c.args, out, err), cli::kExitUsage) << c.args[1];
    EXPECT_NE(err.str().find(c.expected_in_error), std::string::npos)
        << c.args[1] << ": " << err.str();
    EXPECT_EQ(out.str().find("listening"), std::string::npos) << "no server was started";
  }
}

}  // namespace
}  // namespace gpuscale
