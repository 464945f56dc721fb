#include "orch/process_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gpumon/process_runner.h"
#include "testing/wait_until.h"

namespace gpuscale::orch {
namespace {

using namespace std::chrono_literals;

// What `gpuscale serve`'s SIGCHLD handling asks (Daemon::OnChildExited): has a watched child
// (a replica) exited? A tool run to completion (squeue, nvidia-smi) is never watched.
TEST(ChildWatchTest, OnlyAWatchedChildsExitCountsUntilItIsReaped) {
  Result<gpu::ProcessOutput> tool = gpu::RunProcess({"true"}, Seconds{5});
  ASSERT_TRUE(tool.has_value()) << tool.error().ToString();
  EXPECT_FALSE(AnyWatchedExited());

  Result<int> replica = SpawnDetached({{"sleep", "0.2"}, ChildEnvironment({}), "/dev/null", ""});
  ASSERT_TRUE(replica.has_value()) << replica.error().ToString();
  WatchExit(*replica);
  EXPECT_FALSE(AnyWatchedExited()) << "still running";
  gpuscale::testing::WaitUntil([] { return AnyWatchedExited(); }, 2000ms, 20ms);
  EXPECT_TRUE(AnyWatchedExited()) << "exited, not reaped yet";
  EXPECT_TRUE(AnyWatchedExited()) << "asking does not reap it";
  EXPECT_EQ(CheckExited(*replica), 0);
  EXPECT_FALSE(AnyWatchedExited()) << "reaped by the orchestrator: no longer watched";
}

}  // namespace
}  // namespace gpuscale::orch
