#include "state/event_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "state/store_health.h"
#include "store/store.h"

namespace gpuscale::state {
namespace {

TEST(EventLogTest, WaitersSeeNewEventsTimeOutOrStop) {
  Result<std::unique_ptr<store::Store>> store = store::Store::Open(":memory:", Seconds{0});
  ASSERT_TRUE(store);
  StoreHealth health{{}};
  EventLog log((*store)->events(), health);
  ASSERT_TRUE(log.Open());
  EXPECT_EQ(log.WaitAfter(0, Seconds{0.01}), 0);  // nothing yet: times out
  store::EventRow e;
  e.at = Seconds{1};
  e.kind = "service_created";
  e.service = "chat";
  std::vector<store::EventRow> events = {e, e};
  log.Append(events);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(log.WaitAfter(0, Seconds{5}), 2);  // returns at once
  ASSERT_EQ(log.Query({})->size(), 2u);
  log.Stop();
  EXPECT_EQ(log.WaitAfter(2, Seconds{60}), 2);  // stopped: no wait
  EXPECT_TRUE(health.Failures().empty());
}

// A waiter blocked in WaitAfter is woken by an append from another thread.
TEST(EventLogTest, AnAppendFromAnotherThreadWakesAWaiter) {
  Result<std::unique_ptr<store::Store>> store = store::Store::Open(":memory:", Seconds{0});
  ASSERT_TRUE(store);
  StoreHealth health{{}};
  EventLog log((*store)->events(), health);
  ASSERT_TRUE(log.Open());
  // An hour's timeout: a waiter that only the timeout returns fails the check below.
  std::future<int64_t> woken =
      std::async(std::launch::async, [&] { return log.WaitAfter(0, Seconds{3600}); });
  // Real time for the waiter to block (nothing tells that it waits in WaitAfter); an append
  // that lands first still passes, as WaitAfter then returns at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  store::EventRow e;
  e.kind = "service_created";
  std::vector<store::EventRow> events = {e};
  log.Append(events);
  const bool returned = woken.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  log.Stop();  // frees a waiter the append did not wake
  ASSERT_TRUE(returned) << "the append did not wake the waiter";
  EXPECT_EQ(woken.get(), 1);
}

}  // namespace
}  // namespace gpuscale::state
