#include "scale/disagg_policy.h"

#include <gtest/gtest.h>

#include <string>

#include "scale/metric_names.h"

namespace gpuscale::scale {
namespace {

namespace names = metric_names;

// One tick of a pool in steady state: `rps` requests/s finishing, each with `prompt` prompt
// and `output` generated tokens, `kv` KV use per ready replica.
struct PoolLoad {
  double rps = 0;
  double prompt = 0, output = 0;
  double kv = 0.2;
  double ttft_violation = 0, tpot_violation = 0;
};

ScalingInput PoolInput(double now, int replicas, const PoolLoad& load) {
  ScalingInput in;
  in.now = Seconds{now};
  in.current_replicas = in.ready_replicas = replicas;
  auto per_replica = [&](std::string_view name, double v) {
    in.metrics[std::string(name)].per_replica.assign(replicas, v);
  };
  auto service = [&](std::string_view name, double v) {
    in.metrics[std::string(name)].service_value = v;
  };
  per_replica(names::kWaiting, 0);
  per_replica(names::kRunning, 5);
  per_replica(names::kKvUsage, load.kv);
  service(names::kSuccessRate30s, load.rps);
  service(names::kSuccessRate2m, load.rps);
  service(names::kPromptTokensRate30s, load.rps * load.prompt);
  service(names::kGenerationTokensRate30s, load.rps * load.output);
  service(names::kTtftViolationRatio, load.ttft_violation);
  service(names::kTpotViolationRatio, load.tpot_violation);
  return in;
}

DisaggPolicyConfig Config(PoolRole role, double capacity) {
  DisaggPolicyConfig c;
  c.role = role;
  c.min_replicas = 1;
  c.max_replicas = 100;
  c.capacity_tokens_per_second = capacity;
  c.target_utilization = 1;
  c.burst_z = 0;
  c.learn_capacity = false;
  c.recurring_bursts = false;
  return c;
}

// What a pool's replica does per request: a prefill replica makes one token, a decode replica
// generates the rest and prefills nothing (its prompt counter still counts the prompt).
PoolLoad AsSeenBy(PoolRole role, double rps, double prompt, double output) {
  return role == PoolRole::kPrefill ? PoolLoad{rps, prompt, 1} : PoolLoad{rps, prompt, output - 1};
}

struct NeedCase {
  const char* name;
  PoolRole role;
  double capacity;  // tokens/s per replica
  double rps, prompt, output;
  int need;
};

TEST(DisaggPolicyTest, SizesEachRoleFromItsOwnTokens) {
  const NeedCase cases[] = {
      // (4000 + 1) x 20 = 80,020 prompt tokens/s at 10,000 per replica -> 9.
      {"prefill counts prompts", PoolRole::kPrefill, 10000, 20, 4000, 100, 9},
      // 20 x 99 generated tokens/s at 500 per replica -> 4; the 80k prompt tokens/s are not
      // decode work.
      {"decode counts outputs", PoolRole::kDecode, 500, 20, 4000, 100, 4},
      {"prefill, short prompts", PoolRole::kPrefill, 10000, 20, 100, 1000, 1},
      {"decode, long outputs", PoolRole::kDecode, 500, 20, 100, 1000, 40},
  };
  for (const NeedCase& c : cases) {
    DisaggPolicy policy(Config(c.role, c.capacity));
    const Decision d =
        policy.Evaluate(PoolInput(0, 2, AsSeenBy(c.role, c.rps, c.prompt, c.output)));
    EXPECT_EQ(d.desired_replicas, c.need) << c.name << ": " << d.reason;
    EXPECT_EQ(d.reason.rfind(std::string(PoolRoleName(c.role)) + ": ", 0), 0u) << d.reason;
  }
}

// The pools' ratio follows the mix: at the same request rate, a prompt-heavy mix needs more
// prefill than decode replicas and an output-heavy one the reverse (AIBrix #2613).
TEST(DisaggPolicyTest, PoolRatioFollowsThePromptOutputMix) {
  auto needs = [](double prompt, double output) {
    DisaggPolicy prefill(Config(PoolRole::kPrefill, 10000));
    DisaggPolicy decode(Config(PoolRole::kDecode, 1000));
    const int p =
        prefill.Evaluate(PoolInput(0, 1, AsSeenBy(PoolRole::kPrefill, 10, prompt, output)))
            .desired_replicas;
    const int d = decode.Evaluate(PoolInput(0, 1, AsSeenBy(PoolRole::kDecode, 10, prompt, output)))
                      .desired_replicas;
    return std::pair{p, d};
  };
  const auto [p_long_prompt, d_long_prompt] = needs(8000, 50);
  const auto [p_long_output, d_long_output] = needs(200, 1000);
  EXPECT_GT(p_long_prompt, d_long_prompt);
  EXPECT_GT(d_long_output, p_long_output);
  EXPECT_GT(static_cast<double>(p_long_prompt) / d_long_prompt,
            static_cast<double>(p_long_output) / d_long_output);
}

TEST(DisaggPolicyTest, DecodeKeepsKvUseUnderTarget) {
  DisaggPolicy policy(Config(PoolRole::kDecode, 100000));
  PoolLoad load = AsSeenBy(PoolRole::kDecode, 1, 1000, 10);
  load.kv = 0.95;  // 4 replicas x 0.95 = 3.8 caches' worth at 0.85 each -> 5
  const Decision d = policy.Evaluate(PoolInput(0, 4, load));
  EXPECT_EQ(d.desired_replicas, 5) << d.reason;
  EXPECT_NE(d.reason.find("KV cache"), std::string::npos) << d.reason;
  // The prefill pool has no KV floor: its cache holds prompts only while they prefill.
  DisaggPolicy prefill(Config(PoolRole::kPrefill, 100000));
  EXPECT_LE(prefill.Evaluate(PoolInput(0, 4, load)).desired_replicas, 4);
}

// TPOT violations do not grow the prefill pool (decode latency is not its to answer for);
// its TTFT ones do (with a queue). The decode pool answers for TPOT, and for its replicas'
// TTFT: the wait for a decode slot.
TEST(DisaggPolicyTest, ReactsOnlyToItsRolesViolations) {
  struct Case {
    PoolRole role;
    double ttft, tpot;
    int grows;  // 1 when the pool adds a replica
  };
  const Case cases[] = {{PoolRole::kPrefill, 0, 0.5, 0},
                        {PoolRole::kPrefill, 0.5, 0, 1},
                        {PoolRole::kDecode, 0.5, 0, 1},
                        {PoolRole::kDecode, 0, 0.5, 1}};
  for (const Case& c : cases) {
    DisaggPolicy policy(Config(c.role, 1e9));
    ScalingInput in = PoolInput(0, 3, {1, 100, 10, 0.1, c.ttft, c.tpot});
    in.metrics[std::string(names::kWaiting)].per_replica.assign(3, 5);
    EXPECT_EQ(policy.Evaluate(in).desired_replicas, 3 + c.grows)
        << PoolRoleName(c.role) << " ttft " << c.ttft << " tpot " << c.tpot;
  }
  const std::vector<std::string> prefill_names =
      DisaggPolicy(Config(PoolRole::kPrefill, 1)).MetricNames();
  EXPECT_EQ(std::count(prefill_names.begin(), prefill_names.end(),
                       std::string(names::kTpotViolationRatio)),
            0);
  const std::vector<std::string> decode = DisaggPolicy(Config(PoolRole::kDecode, 1)).MetricNames();
  EXPECT_EQ(std::count(decode.begin(), decode.end(), std::string(names::kTtftViolationRatio)), 1);
}

}  // namespace
}  // namespace gpuscale::scale
