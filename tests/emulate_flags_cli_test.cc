// `gpuscale emulate`'s engine-flag errors through the whole CLI (in-process): vLLM-style
// unknown flags fail naming the flag unless --accept-unknown-flags, and bad values name
// their flag. (Servers that accept the flags are exercised in experiment_runner_test.cc.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/command.h"
#include "cli_test_util.h"

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
      {{"emulate", "--enable-prefix-caching", "--block-size", "0"}, "--block-size"},
      {{"emulate", "--kv-events-endpoint", "tcp://127.0.0.1:*"}, "--enable-prefix-caching"},
      {{"emulate", "--enable-prefix-caching", "--kv-events-endpoint", "nonsense"},
       "--kv-events-endpoint"},
  };
  for (const CliCase& c : cases) {
    const cli_test::RunResult r = cli_test::RunInProcess(c.args);
    EXPECT_EQ(r.exit_code, cli::kExitUsage) << c.args[1];
    EXPECT_NE(r.err.find(c.expected_in_error), std::string::npos) << c.args[1] << ": " << r.err;
    EXPECT_EQ(r.out.find("listening"), std::string::npos) << "no server was started";
  }
}

}  // namespace
}  // namespace gpuscale
