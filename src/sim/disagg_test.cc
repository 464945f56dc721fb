#include "sim/disagg.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "scale/disagg_policy.h"
#include "scale/metric_names.h"
#include "sim/replica_model_calibrated.h"
#include "sim/role_capacity.h"
#include "testing/fake_orchestrator.h"

namespace gpuscale::sim {
namespace {

// A load rising linearly from `from` to `to` requests/s over `seconds`, every request with
// the same lengths (deterministic arrivals: the times of a Poisson-free ramp).
Trace Ramp(double from, double to, double seconds, int in, int out) {
  Trace t;
  double now = 0;
  while (now < seconds) {
    t.requests.push_back({now, in, out});
    now += 1 / (from + (to - from) * now / seconds);
  }
  return t;
}

SimulationConfig DisaggConfig(int budget) {
  SimulationConfig c;
  c.cluster = {2, 8, "H100", 81559};
  c.slo = {2.5, 0.1, 0.99};
  DisaggSpec d;
  d.prefill.name = "llm-prefill";
  d.decode.name = "llm-decode";
  for (ServiceSpec* s : {&d.prefill, &d.decode}) {
    s->min_replicas = 1;
    s->max_replicas = 12;
    s->initial_replicas = 1;
    s->cold_start = Seconds{30};
  }
  d.gpu_budget = budget;
  c.disaggregated = d;
  return c;
}

struct Models {
  std::unique_ptr<ReplicaModel> model;
  DisaggModels view;
};

Models Llama8b() {
  Models m;
  m.model = std::move(*MakeReplicaModel({}));
  m.view = {m.model.get(), m.model.get(), FindModelSpec("llama-3-8b")->KvBytesPerToken()};
  return m;
}

std::unique_ptr<scale::Policy> Pool(scale::PoolRole role, const ServiceSpec& s,
                                    const ReplicaModel& model, const SloSpec& slo) {
  scale::DisaggPolicyConfig c;
  c.role = role;
  c.min_replicas = s.min_replicas;
  c.max_replicas = s.max_replicas;
  c.mix_capacities = role == scale::PoolRole::kPrefill ? PrefillCapacities(model, slo)
                                                       : DecodeCapacities(model, slo.tpot_seconds);
  c.capacity_tokens_per_second = c.mix_capacities.front().capacity_tokens_per_second;
  return std::make_unique<scale::DisaggPolicy>(c);
}

Result<DisaggResult> RunBoth(const SimulationConfig& c, const Models& m, const Trace& trace) {
  const DisaggSpec& d = *c.disaggregated;
  return RunDisaggSimulation(c, m.view, Pool(scale::PoolRole::kPrefill, d.prefill, *m.model, c.slo),
                             Pool(scale::PoolRole::kDecode, d.decode, *m.model, c.slo), trace);
}

TEST(DisaggSimTest, LoneRequestTtftIsPrefillPlusTransfer) {
  Models m = Llama8b();
  SimulationConfig c = DisaggConfig(4);
  c.disaggregated->link = {"1 Gb/s", 1};  // slow enough to see: 2000 x 128 KiB = 2.1 s
  Trace one;
  one.requests.push_back({0, 2000, 11});
  auto r = RunBoth(c, m, one);
  ASSERT_TRUE(r) << r.error().ToString();
  const double transfer = KvTransferSeconds(2000, m.view.kv_bytes_per_token, c.disaggregated->link);
  EXPECT_NEAR(transfer, 2000.0 * 131072 * 8 / 1e9, 1e-9);
  EXPECT_NEAR(r->report.transfer_s.p50, transfer, 1e-9);
  EXPECT_NEAR(r->report.total.ttft_s.p50, m.model->PrefillSeconds(2000) + transfer, 1e-6);
  EXPECT_EQ(r->report.total.completed, 1);
  EXPECT_EQ(r->report.prefill.attainment, 1.0);  // 2.1 + prefill < 2.5 s
}

TEST(DisaggSimTest, SameInputsGiveIdenticalRuns) {
  Models m = Llama8b();
  const SimulationConfig c = DisaggConfig(16);
  const Trace trace = Ramp(2, 12, 600, 3000, 200);
  auto a = RunBoth(c, m, trace);
  auto b = RunBoth(c, m, trace);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->report.total.slo_met, b->report.total.slo_met);
  EXPECT_EQ(a->report.total.events, b->report.total.events);
  EXPECT_EQ(a->report.total.gpu_hours, b->report.total.gpu_hours);
  EXPECT_EQ(a->report.total.e2e_s.p99, b->report.total.e2e_s.p99);
  ASSERT_EQ(a->prefill_timeline.size(), b->prefill_timeline.size());
  for (size_t i = 0; i < a->prefill_timeline.size(); ++i) {
    EXPECT_EQ(a->prefill_timeline[i].reason, b->prefill_timeline[i].reason);
    EXPECT_EQ(a->decode_timeline[i].reason, b->decode_timeline[i].reason);
  }
  EXPECT_EQ(a->report.total.requests, static_cast<int64_t>(trace.requests.size()));
}

// What each pool's policy saw at every tick, the pools asking for `prefill` and `decode`
// replicas.
struct PoolInputs {
  std::vector<scale::ScalingInput> prefill, decode;
};

PoolInputs RunRecorded(const SimulationConfig& c, const Trace& trace, int prefill, int decode) {
  Models m = Llama8b();
  PoolInputs seen;
  auto result = RunDisaggSimulation(
      c, m.view, std::make_unique<testing::RecordingPolicy>(prefill, &seen.prefill),
      std::make_unique<testing::RecordingPolicy>(decode, &seen.decode), trace);
  EXPECT_TRUE(result) << result.error().ToString();
  return seen;
}

// Each pool's tick scrapes its replicas before its policy reads them, as the daemon's tick
// does: the decode pool's tick at t = 5 sees the generations that started at t = 1, not the
// sample of the scrape at t = 0.
TEST(DisaggSimTest, PoolTickReadsTheReplicasAsTheyAreAtTheTick) {
  SimulationConfig c = DisaggConfig(4);
  c.control_interval = Seconds{5};
  c.scrape_interval = Seconds{5};
  Trace trace;
  for (int i = 0; i < 20; ++i) trace.requests.push_back({1.0, 100, 2000});  // ~20 s decode
  const PoolInputs seen = RunRecorded(c, trace, 1, 1);
  ASSERT_GE(seen.decode.size(), 2u);
  const scale::ScalingInput& at5 = seen.decode[1];
  ASSERT_EQ(at5.now.count(), 5);
  EXPECT_EQ(at5.metrics.at(std::string(scale::metric_names::kRunning)).per_replica,
            std::vector<double>{20});
}

// One loop ticks both pools, every second while either has a replica starting (the daemon's
// probe interval), every control interval otherwise.
TEST(DisaggSimTest, PoolsTickEverySecondWhileEitherHasAReplicaStarting) {
  SimulationConfig c = DisaggConfig(4);
  c.control_interval = Seconds{15};  // cold starts of 30 s (DisaggConfig)
  Trace trace;
  for (int i = 0; i < 60; ++i) trace.requests.push_back({i * 1.0, 100, 10});
  const PoolInputs seen = RunRecorded(c, trace, 1, 2);  // the second decode replica starts
  ASSERT_GE(seen.prefill.size(), 32u);
  ASSERT_EQ(seen.prefill.size(), seen.decode.size());
  for (int i = 0; i <= 30; ++i) EXPECT_EQ(seen.prefill[i].now.count(), i);
  EXPECT_EQ(seen.prefill[31].now.count(), 45);
  EXPECT_EQ(seen.decode[31].now.count(), 45);
}

// Aggregated runs stay deterministic beside the disaggregated ones (same trace, one pool).
TEST(DisaggSimTest, AggregatedModeStaysDeterministic) {
  Models m = Llama8b();
  SimulationConfig c = DisaggConfig(16);
  c.disaggregated.reset();
  c.service.max_replicas = 12;
  const Trace trace = Ramp(2, 12, 600, 3000, 200);
  auto policy = [] {
    auto p = std::make_unique<testing::ScriptedPolicy>(1, 12);
    p->desired = 3;
    return p;
  };
  auto a = RunSimulation(c, *m.model, policy(), trace);
  auto b = RunSimulation(c, *m.model, policy(), trace);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->report.slo_met, b->report.slo_met);
  EXPECT_EQ(a->report.events, b->report.events);
  EXPECT_EQ(a->report.gpu_hours, b->report.gpu_hours);
}

struct HeavyCase {
  const char* name;
  int in, out;
  bool prefill_heavy;
};

// The llm-d #1213 case and its mirror: long prompts with short outputs must grow the prefill
// pool (and leave decode small), short prompts with long outputs the decode pool.
TEST(DisaggSimTest, HeavyRoleScalesItsOwnPool) {
  const HeavyCase cases[] = {{"prefill-heavy", 8000, 16, true}, {"decode-heavy", 100, 1500, false}};
  Models m = Llama8b();
  for (const HeavyCase& c : cases) {
    const SimulationConfig config = DisaggConfig(16);
    auto r = RunBoth(config, m, Ramp(1, c.prefill_heavy ? 12 : 25, 1200, c.in, c.out));
    ASSERT_TRUE(r) << r.error().ToString();
    const PoolReport& heavy = c.prefill_heavy ? r->report.prefill : r->report.decode;
    const PoolReport& light = c.prefill_heavy ? r->report.decode : r->report.prefill;
    EXPECT_GE(heavy.peak_replicas, 3) << c.name;
    EXPECT_GT(heavy.scale_ups, 0) << c.name;
    EXPECT_GT(heavy.peak_replicas, light.peak_replicas) << c.name;
    EXPECT_GT(heavy.gpu_hours, light.gpu_hours) << c.name;
    EXPECT_GT(r->report.total.attainment, 0.9) << c.name;
  }
}

// AIBrix #2613: the pools' ratio follows the load's mix. Fifteen minutes of short prompts with
// long outputs, then fifteen of long prompts with short outputs: the
// ready prefill/decode ratio at the end of the second half is well above the first's.
TEST(DisaggSimTest, PoolRatioFollowsAShiftInTheMix) {
  Models m = Llama8b();
  Trace trace = Ramp(12, 12, 900, 100, 800);
  for (const TraceRequest& r : Ramp(8, 8, 900, 8000, 16).requests) {
    trace.requests.push_back({900 + r.arrival_s, r.input_tokens, r.output_tokens});
  }
  auto r = RunBoth(DisaggConfig(16), m, trace);
  ASSERT_TRUE(r) << r.error().ToString();
  auto ratio_at = [&](double t) {
    for (size_t i = 0; i < r->prefill_timeline.size(); ++i) {
      if (r->prefill_timeline[i].time_s >= t) {
        return static_cast<double>(r->prefill_timeline[i].ready) /
               std::max(r->decode_timeline[i].ready, 1);
      }
    }
    return -1.0;
  };
  const double decode_heavy = ratio_at(880), prefill_heavy = ratio_at(1780);
  EXPECT_LT(decode_heavy, 1) << decode_heavy;
  EXPECT_GT(prefill_heavy, 1) << prefill_heavy;
  EXPECT_GT(r->report.total.attainment, 0.9);
  EXPECT_LE(r->report.peak_gpus, 16);
}

// Both pools overloaded on a budget of 6 GPUs: the GPUs held never exceed it, and neither pool
// is pushed below its minimum of 2 by the other's scale-up (Dynamo #12428).
TEST(DisaggSimTest, PoolsNeverExceedTheSharedBudgetNorStarveAMinimum) {
  Models m = Llama8b();
  SimulationConfig c = DisaggConfig(6);
  c.disaggregated->prefill.min_replicas = c.disaggregated->decode.min_replicas = 2;
  c.disaggregated->prefill.initial_replicas = c.disaggregated->decode.initial_replicas = 2;
  auto r = RunBoth(c, m, Ramp(5, 40, 900, 4000, 600));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_LE(r->report.peak_gpus, 6);
  EXPECT_EQ(r->report.gpu_budget, 6);
  ASSERT_EQ(r->prefill_timeline.size(), r->decode_timeline.size());
  int pending = 0;
  for (size_t i = 0; i < r->prefill_timeline.size(); ++i) {
    const TimelineRow& p = r->prefill_timeline[i];
    const TimelineRow& d = r->decode_timeline[i];
    EXPECT_LE(p.gpus_in_use + d.gpus_in_use, 6) << "t=" << p.time_s;
    EXPECT_GE(p.gpus_in_use, 2) << "t=" << p.time_s;
    EXPECT_GE(d.gpus_in_use, 2) << "t=" << p.time_s;
    pending += p.pending + d.pending;
  }
  EXPECT_GT(pending, 0);  // the budget did refuse placements
}

TEST(DisaggSimTest, RejectsBudgetBelowTheMinimums) {
  Models m = Llama8b();
  SimulationConfig c = DisaggConfig(3);
  c.disaggregated->prefill.min_replicas = 2;
  c.disaggregated->decode.min_replicas = 2;
  auto r = RunBoth(c, m, Ramp(1, 1, 10, 100, 10));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "disaggregated.gpu_budget");
}

TEST(DisaggSimTest, ParsesLinkPresetsAndNumbers) {
  struct Case {
    const char* text;
    double gbps;  // < 0: an error
  };
  const Case cases[] = {{"rdma-100g", 100}, {"rdma-400g", 400}, {"nvlink", 3600},
                        {"25", 25},         {"0", -1},          {"fast", -1}};
  for (const Case& c : cases) {
    auto link = ParseLink(c.text, "h100");
    if (c.gbps < 0) {
      ASSERT_FALSE(link) << c.text;
      EXPECT_EQ(link.error().field, "link");
      continue;
    }
    ASSERT_TRUE(link) << c.text << ": " << link.error().ToString();
    EXPECT_NEAR(link->gbps, c.gbps, 1e-6) << c.text;
  }
}

// The prefill profile is a load test at the TTFT target: a tighter target sustains less, and
// neither sustains more than the replica's saturation throughput: full 8192-token chunks of
// that mix's prompts, each paying its own attention (PrefillWork).
TEST(RoleCapacityTest, PrefillCapacityFollowsTheTtftTarget) {
  Models m = Llama8b();
  const auto tight = PrefillCapacities(*m.model, {0.3, 0.05, 0.99});
  const auto loose = PrefillCapacities(*m.model, {5, 0.05, 0.99});
  ASSERT_EQ(tight.size(), loose.size());
  for (size_t i = 0; i < tight.size(); ++i) {
    const int64_t p = static_cast<int64_t>(loose[i].prompt_tokens);
    PrefillWork chunk;
    for (int64_t n = 0; n + std::min<int64_t>(p, 8192) <= 8192; n += p) {
      chunk.AddChunk(0, std::min<int64_t>(p, 8192));
    }
    const double saturation = chunk.tokens / m.model->MixedStepSeconds(chunk, 0, 0);
    EXPECT_LE(loose[i].capacity_tokens_per_second, saturation * 1.0001) << p;
    if (tight[i].prompt_tokens > 4096) continue;  // too long for 0.3 s alone
    EXPECT_LT(tight[i].capacity_tokens_per_second, loose[i].capacity_tokens_per_second) << p;
  }
}

TEST(RoleCapacityTest, DecodeCapacityFallsWithContextAndPrefillIsPositive) {
  Models m = Llama8b();
  for (const scale::MixCapacity& p : PrefillCapacities(*m.model, {1, 0.05, 0.99})) {
    EXPECT_GT(p.capacity_tokens_per_second, 1000) << p.prompt_tokens;
  }
  const auto decode = DecodeCapacities(*m.model, 0.05);
  auto at = [&](double prompt, double output) {
    for (const auto& d : decode) {
      if (d.prompt_tokens == prompt && d.output_tokens == output)
        return d.capacity_tokens_per_second;
    }
    return -1.0;
  };
  EXPECT_GT(at(128, 256), at(8192, 256));
  EXPECT_GT(at(8192, 256), at(32768, 256));
  EXPECT_GT(at(32768, 1024), 0);
}

}  // namespace
}  // namespace gpuscale::sim
