#include "daemon/pool_ticks.h"

#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

ServiceTickResult PoolTickOf(int current, int desired, std::string reason, bool changed) {
  ServiceTickResult r;
  r.tick.now = Seconds{30};
  r.tick.current_replicas = current;
  r.tick.ready_replicas = current;
  r.tick.desired_replicas = desired;
  r.tick.decision.desired_replicas = desired;
  r.tick.decision.reason = std::move(reason);
  r.tick.decision.inputs.push_back({"vllm:num_requests_waiting", 3.0, 1.0});
  r.desired_changed = changed;
  return r;
}

TEST(CombinePoolTicksTest, SumsCountsAndNamesEachPoolsReason) {
  ServiceTickResult prefill = PoolTickOf(2, 3, "prefill: 9000 prompt tokens/s over capacity", true);
  ServiceTickResult decode = PoolTickOf(1, 1, "holding at 1", false);
  decode.metric_errors.push_back("replica x: timed out");
  decode.tick.errors.push_back("stop x: not_found");
  const ServiceTickResult both = CombinePoolTicks({{"prefill", &prefill}, {"decode", &decode}});
  EXPECT_EQ(both.tick.current_replicas, 3);
  EXPECT_EQ(both.tick.ready_replicas, 3);
  EXPECT_EQ(both.tick.desired_replicas, 4);
  EXPECT_TRUE(both.desired_changed);
  EXPECT_EQ(both.tick.decision.reason,
            "prefill: 9000 prompt tokens/s over capacity; decode: holding at 1");
  ASSERT_EQ(both.tick.decision.inputs.size(), 2u);
  EXPECT_EQ(both.tick.decision.inputs[0].metric, "prefill/vllm:num_requests_waiting");
  EXPECT_EQ(both.tick.decision.inputs[1].metric, "decode/vllm:num_requests_waiting");
  EXPECT_EQ(both.metric_errors, std::vector<std::string>{"decode: replica x: timed out"});
  EXPECT_EQ(both.tick.errors, std::vector<std::string>{"decode: stop x: not_found"});
}

TEST(CombinePoolTicksTest, UnchangedWhenNoPoolChanged) {
  ServiceTickResult prefill = PoolTickOf(1, 1, "a", false);
  ServiceTickResult decode = PoolTickOf(1, 1, "b", false);
  EXPECT_FALSE(CombinePoolTicks({{"prefill", &prefill}, {"decode", &decode}}).desired_changed);
}

}  // namespace
}  // namespace gpuscale::daemon
