// One daemon per state directory: a second lock fails naming the holder's PID, the lock is
// released with its holder (also when the holding process dies), and the descriptor does not
// leak into exec'd children.
#include "daemon/state_dir_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "testing/wait_until.h"

namespace gpuscale::daemon {
namespace {

class StateDirLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpuscale-lock-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(StateDirLockTest, ASecondHolderIsRefusedNamingThePid) {
  Result<StateDirLock> first = StateDirLock::Acquire(dir_ + "/state");
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  Result<StateDirLock> second = StateDirLock::Acquire(dir_ + "/state");
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(second.error().field, "state_dir");
  EXPECT_NE(second.error().message.find("pid " + std::to_string(getpid())), std::string::npos)
      << second.error().message;
  { StateDirLock released = std::move(*first); }
  EXPECT_TRUE(StateDirLock::Acquire(dir_ + "/state").has_value()) << "released with its holder";
}

TEST_F(StateDirLockTest, TheLockDiesWithItsProcessAndIsNotInherited) {
  const pid_t child = fork();
  if (child == 0) {
    Result<StateDirLock> lock = StateDirLock::Acquire(dir_);
    // An exec'd program must not hold it: sleep outlives this process image otherwise.
    if (lock) execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(1);
  }
  ASSERT_GT(child, 0);
  // The child took the lock and exec'd: sleep holds no lock descriptor, so it is free.
  Result<StateDirLock> mine = Result<StateDirLock>(Unavailable("not tried"));
  gpuscale::testing::WaitUntil(
      [&] {
        if (!std::filesystem::exists(dir_ + "/gpuscale.lock")) return false;
        mine = StateDirLock::Acquire(dir_);
        return mine.has_value();
      },
      std::chrono::seconds(2), std::chrono::milliseconds(20));
  EXPECT_TRUE(mine.has_value()) << "the exec'd child still holds the lock";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace gpuscale::daemon
