#include "gpumon/process_runner.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscale::gpu {
namespace {

TEST(ProcessRunnerTest, CapturesStdoutStderrAndExitCode) {
  Result<ProcessOutput> output =
      RunProcess({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, Seconds{10});
  ASSERT_TRUE(output) << output.error().ToString();
  EXPECT_EQ(output->stdout_text, "out\n");
  EXPECT_EQ(output->stderr_text, "err\n");
  EXPECT_EQ(output->exit_code, 3);
}

TEST(ProcessRunnerTest, ArgumentsAreNotInterpretedByAShell) {
  Result<ProcessOutput> output = RunProcess({"echo", "$HOME; rm -rf /"}, Seconds{10});
  ASSERT_TRUE(output);
  EXPECT_EQ(output->stdout_text, "$HOME; rm -rf /\n");
}

TEST(ProcessRunnerTest, MissingProgramIsUnavailable) {
  Result<ProcessOutput> output = RunProcess({"gpuscale-no-such-tool"}, Seconds{10});
  ASSERT_FALSE(output);
  EXPECT_EQ(output.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(output.error().message.find("gpuscale-no-such-tool"), std::string::npos);
}

TEST(ProcessRunnerTest, KillsProcessGroupOnTimeout) {
  // The shell's child `sleep` holds the pipe open too: only killing the group ends it.
  Result<ProcessOutput> output =
      RunProcess({"/bin/sh", "-c", "sleep 30; echo late"}, Seconds{0.05});
  ASSERT_FALSE(output);
  EXPECT_EQ(output.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(output.error().message.find("did not finish"), std::string::npos);
}

TEST(ProcessRunnerTest, LargeOutputIsReadCompletely) {
  Result<ProcessOutput> output = RunProcess({"/bin/sh", "-c",
                                             "i=0; while [ $i -lt 20000 ]; do echo 0123456789; "
                                             "i=$((i+1)); done"},
                                            Seconds{30});
  ASSERT_TRUE(output);
  EXPECT_EQ(output->stdout_text.size(), 20000u * 11u);
}

}  // namespace
}  // namespace gpuscale::gpu
