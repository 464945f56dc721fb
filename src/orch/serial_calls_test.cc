#include "orch/serial_calls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace gpuscale::orch {
namespace {

// Calls that record where and in which order they ran; answers that record when applied.
struct Recorder {
  std::vector<std::string> ran;      // by the worker (read after WaitIdle)
  std::vector<std::string> applied;  // by the owner
  std::vector<double> applied_at;
  SerialCalls::Call Make(const std::string& name) {
    return [this, name]() -> SerialCalls::Apply {
      ran.push_back(name);
      return [this, name](Seconds now) {
        applied.push_back(name);
        applied_at.push_back(now.count());
      };
    };
  }
};

TEST(SerialCallsTest, RunsCallsInPostingOrderAndAppliesAnswersOnlyInApplyDone) {
  for (SerialCalls::Mode mode : {SerialCalls::Mode::kThread, SerialCalls::Mode::kInline}) {
    Recorder r;
    SerialCalls calls(mode);
    calls.Post(r.Make("list"));
    calls.Post(r.Make("submit"));
    calls.Post(r.Make("cancel"));
    EXPECT_EQ(calls.pending(), 3u);
    calls.WaitIdle();
    EXPECT_EQ(r.ran, (std::vector<std::string>{"list", "submit", "cancel"}));
    EXPECT_TRUE(r.applied.empty());  // nothing is applied behind the owner's back
    EXPECT_EQ(calls.ApplyDone(Seconds{7}), 3u);
    EXPECT_EQ(r.applied, (std::vector<std::string>{"list", "submit", "cancel"}));
    EXPECT_EQ(r.applied_at, (std::vector<double>{7, 7, 7}));
    EXPECT_EQ(calls.pending(), 0u);
    EXPECT_EQ(calls.ApplyDone(Seconds{8}), 0u);
  }
}

TEST(SerialCallsTest, AThreadEndsWhenIdleAndANewOneTakesLaterCalls) {
  Recorder r;
  SerialCalls calls;
  calls.Post(r.Make("a"));
  calls.WaitIdle();
  calls.Post(r.Make("b"));  // the first worker has ended: a new one runs this
  calls.WaitIdle();
  calls.Post(r.Make("c"));
  calls.WaitIdle();
  EXPECT_EQ(calls.ApplyDone(Seconds{1}), 3u);
  EXPECT_EQ(r.applied, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(SerialCallsTest, AHungCallHoldsOnlyTheCallsBehindIt) {
  Mutex mu;
  CondVar cv;
  bool released = false;
  std::atomic<int> ran{0};
  SerialCalls calls;
  calls.Post([&]() -> SerialCalls::Apply {
    MutexLock lock(mu);
    cv.Wait(mu, [&]() GS_REQUIRES(mu) { return released; });
    ++ran;
    return {};  // no answer to apply
  });
  calls.Post([&]() -> SerialCalls::Apply {
    ++ran;
    return {};
  });
  // Posting and applying do not wait for the hung call.
  EXPECT_EQ(calls.ApplyDone(Seconds{1}), 0u);
  EXPECT_EQ(ran.load(), 0);
  {
    MutexLock lock(mu);
    released = true;
    cv.NotifyAll();
  }
  calls.WaitIdle();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(calls.ApplyDone(Seconds{2}), 2u);
  EXPECT_EQ(calls.pending(), 0u);
}

// A service deleted while its controller hangs: destruction must not wait for the hung call
// (the daemon's tick would), and what was queued behind it never runs.
TEST(SerialCallsTest, DestructionReturnsAtOnceAndDropsWhatIsQueued) {
  // Owned by the calls too: the running one outlives the SerialCalls.
  struct Sync {
    Mutex mu;
    CondVar cv;
    bool started GS_GUARDED_BY(mu) = false;
    bool released GS_GUARDED_BY(mu) = false;
    bool finished GS_GUARDED_BY(mu) = false;
    int ran GS_GUARDED_BY(mu) = 0;
  };
  auto sync = std::make_shared<Sync>();
  {
    SerialCalls calls;
    calls.Post([sync]() -> SerialCalls::Apply {
      MutexLock lock(sync->mu);
      sync->started = true;
      sync->cv.NotifyAll();
      sync->cv.Wait(sync->mu, [&]() GS_REQUIRES(sync->mu) { return sync->released; });
      ++sync->ran;
      sync->finished = true;
      sync->cv.NotifyAll();
      return [](Seconds) { FAIL() << "an answer applied after its owner was gone"; };
    });
    calls.Post([sync]() -> SerialCalls::Apply {
      MutexLock lock(sync->mu);
      ++sync->ran;
      return {};
    });
    MutexLock lock(sync->mu);
    sync->cv.Wait(sync->mu, [&]() GS_REQUIRES(sync->mu) { return sync->started; });
  }  // the first call is blocked: destruction returns all the same
  MutexLock lock(sync->mu);
  sync->released = true;
  sync->cv.NotifyAll();
  sync->cv.Wait(sync->mu, [&]() GS_REQUIRES(sync->mu) { return sync->finished; });
  EXPECT_EQ(sync->ran, 1);
}

}  // namespace
}  // namespace gpuscale::orch
