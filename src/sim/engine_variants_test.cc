// The engine with a mixed fleet (issue 47): replicas of several variants, placed cheapest per
// capacity first, each on its own GPU type, and the run priced per variant.
#include <gtest/gtest.h>

#include "sim/sim_orchestrator.h"
#include "sim/simulation.h"
#include "testing/fake_orchestrator.h"
#include "testing/fake_replica_model.h"

namespace gpuscale::sim {
namespace {

Trace SteadyArrivals(int n, double gap) {
  Trace t;
  for (int i = 0; i < n; ++i) t.requests.push_back({i * gap, 200, 50});
  return t;
}

std::unique_ptr<testing::ScriptedPolicy> FixedDesired(int replicas) {
  auto p = std::make_unique<testing::ScriptedPolicy>(0, 16);
  p->desired = replicas;
  return p;
}

VariantSpec MakeVariant(std::string name, std::string type, double price) {
  VariantSpec v;
  v.name = std::move(name);
  v.gpu_type = std::move(type);
  v.gpus_per_replica = 4;
  v.price_per_gpu_hour = price;
  return v;
}

// Llama-2-70B on 4 x A100 (listed first: the policy's unit) and 4 x H100, one 8-GPU node of
// each type: two replicas of either fit.
SimulationConfig MixedFleetConfig(double a100_price, double h100_price) {
  SimulationConfig c;
  c.cluster = {1, 8, "H100", 81559};
  c.model.model = "llama-2-70b";
  c.service.gpus_per_replica = 4;
  c.service.min_replicas = 1;
  c.service.max_replicas = 8;
  c.service.cold_start = Seconds{30};
  c.slo = {2.0, 0.1, 0.99};  // a 70B model's SLO; at 50 ms TPOT an A100 x4 barely decodes
  c.service.fleet.variants = {MakeVariant("a100", "a100", a100_price),
                              MakeVariant("h100", "h100", h100_price)};
  return c;
}

const VariantReport& FindVariant(const SimReport& r, const std::string& name) {
  for (const auto& v : r.variants) {
    if (v.name == name) return v;
  }
  static const VariantReport kNone;
  ADD_FAILURE() << "no variant " << name;
  return kNone;
}

TEST(EngineVariantsTest, TheH100IsFasterPerReplica) {
  std::vector<std::unique_ptr<ReplicaModel>> models;
  auto variants = BuildVariants(MixedFleetConfig(1, 1), models);
  ASSERT_TRUE(variants) << variants.error().ToString();
  ASSERT_EQ(variants->size(), 2u);
  EXPECT_DOUBLE_EQ((*variants)[0].capacity, 1);
  // ~1.5 (what the tests below rely on): HBM bandwidth 3.35 vs 2.04 TB/s.
  EXPECT_GT((*variants)[1].capacity, 1.3);
  EXPECT_LT((*variants)[1].capacity, 2);
}

// Long prompts to the faster type: the A100 takes prompts it prefills within half the 2 s
// TTFT target (Llama-2-70B x4: ~0.97 s for 4096 tokens, 2.28 s for 8192), the H100, whose
// prefill is faster, takes any.
TEST(EngineVariantsTest, TheSlowerTypeTakesOnlyPromptsItPrefillsInHalfTheTtftTarget) {
  std::vector<std::unique_ptr<ReplicaModel>> models;
  auto variants = BuildVariants(MixedFleetConfig(1, 1), models);
  ASSERT_TRUE(variants) << variants.error().ToString();
  const int64_t a100 = (*variants)[0].max_prompt_tokens;
  EXPECT_GT(a100, 4096);
  EXPECT_LT(a100, 4800);
  EXPECT_LE((*variants)[0].model->PrefillSeconds(a100), 1.0);
  EXPECT_GT((*variants)[0].model->PrefillSeconds(a100 + 1), 1.0);
  EXPECT_EQ((*variants)[1].max_prompt_tokens, 0);
  // One type, or types as fast: no limit anywhere.
  testing::AffineReplicaModel same;
  std::vector<VariantRuntime> twins(2);
  twins[0].model = twins[1].model = &same;
  SetLongPromptLimits(twins, 1.0, 0.5);
  EXPECT_EQ(twins[0].max_prompt_tokens, 0);
  EXPECT_EQ(twins[1].max_prompt_tokens, 0);
  // Affine: 10 ms + 50 us per token within 0.5 s -> 9800 tokens.
  EXPECT_EQ(LongPromptLimit(same, 1.0, 0.5), 9800);
  // Share 0 turns the rule off.
  auto config = MixedFleetConfig(1, 1);
  config.service.fleet.long_prompt_ttft_share = 0;
  auto off = BuildVariants(config, models);
  ASSERT_TRUE(off);
  EXPECT_EQ((*off)[0].max_prompt_tokens, 0);
}

TEST(EngineVariantsTest, GrowsTheCheapestPerCapacityFirstThenTheNextWhenItsGpusRunOut) {
  // Equal prices per GPU-hour: the faster H100 is cheaper per capacity. Three A100-sized
  // replicas wanted: two H100 replicas (all 8 H100s) bring ~2.6 or more, then one A100 if the
  // reconciler still wants capacity.
  const SimulationConfig config = MixedFleetConfig(2, 2);
  auto model = MakeReplicaModel(VariantModelConfig(config.model, config.service.fleet.variants[0]));
  ASSERT_TRUE(model);
  auto result = RunSimulation(config, **model, FixedDesired(3), SteadyArrivals(300, 0.5));
  ASSERT_TRUE(result) << result.error().ToString();
  const SimReport& r = result->report;
  ASSERT_EQ(r.variants.size(), 2u);
  EXPECT_EQ(FindVariant(r, "h100").replicas_placed, 2);  // the initial replica and the next
  EXPECT_LE(FindVariant(r, "a100").replicas_placed, 1);
  EXPECT_NEAR(r.cost, 2 * r.gpu_hours, 1e-9);
  EXPECT_NEAR(FindVariant(r, "h100").cost + FindVariant(r, "a100").cost, r.cost, 1e-9);
}

TEST(EngineVariantsTest, ACheaperTypeWinsAndALimitSendsTheRestToTheOther) {
  // The A100 at a quarter of the H100's price per GPU-hour is cheaper per capacity.
  SimulationConfig config = MixedFleetConfig(1, 4);
  auto model = MakeReplicaModel(VariantModelConfig(config.model, config.service.fleet.variants[0]));
  ASSERT_TRUE(model);
  auto cheap = RunSimulation(config, **model, FixedDesired(2), SteadyArrivals(300, 0.5));
  ASSERT_TRUE(cheap) << cheap.error().ToString();
  EXPECT_EQ(FindVariant(cheap->report, "a100").replicas_placed, 2);
  EXPECT_EQ(FindVariant(cheap->report, "h100").replicas_placed, 0);
  // At most 4 A100s: the second replica goes to the H100s.
  config.service.fleet.gpu_limits = {{"a100", 4}};
  auto limited = RunSimulation(config, **model, FixedDesired(2), SteadyArrivals(300, 0.5));
  ASSERT_TRUE(limited) << limited.error().ToString();
  EXPECT_EQ(FindVariant(limited->report, "a100").replicas_placed, 1);
  EXPECT_EQ(FindVariant(limited->report, "h100").replicas_placed, 1);
  EXPECT_GT(limited->report.cost, cheap->report.cost);
}

// All spot A100s preempted at 20 an hour with a 60 s notice: short requests drain in time.
SimulationConfig SpotConfig(double notice_s) {
  SimulationConfig c = MixedFleetConfig(1, 4);
  c.service.fleet.variants[0].spot = true;
  c.service.fleet.variants[0].preemptions_per_hour = 20;
  c.service.fleet.variants[0].preemption_notice = Seconds{notice_s};
  return c;
}

TEST(EngineVariantsTest, SpotPreemptionIsSeededDrainsWithinTheNoticeAndIsReplaced) {
  const SimulationConfig config = SpotConfig(60);
  auto model = MakeReplicaModel(VariantModelConfig(config.model, config.service.fleet.variants[0]));
  ASSERT_TRUE(model);
  auto run = [&](const SimulationConfig& c) {
    auto result = RunSimulation(c, **model, FixedDesired(2), SteadyArrivals(1200, 0.5));
    EXPECT_TRUE(result) << result.error().ToString();
    return result->report;
  };
  const SimReport a = run(config);
  ASSERT_GT(a.preempted, 0);
  EXPECT_EQ(a.lost_to_preemption, 0);  // 50-token answers finish well within 60 s
  EXPECT_EQ(a.aborted, 0);
  EXPECT_EQ(a.completed, a.requests);
  // Each preempted replica was replaced: more placements than the two wanted at once.
  EXPECT_GE(FindVariant(a, "a100").replicas_placed + FindVariant(a, "h100").replicas_placed,
            2 + a.preempted);
  // The same seed, the same preemptions; another seed, others.
  const SimReport b = run(config);
  EXPECT_EQ(a.preempted, b.preempted);
  EXPECT_DOUBLE_EQ(a.cost, b.cost);
  EXPECT_DOUBLE_EQ(a.ttft_s.p99, b.ttft_s.p99);
  SimulationConfig other = config;
  other.faults.preemption_seed = 7;
  const SimReport c = run(other);
  EXPECT_NE(c.cost, a.cost);
}

TEST(EngineVariantsTest, RequestsRunningWhenTheNoticeEndsAreLost) {
  const SimulationConfig config = SpotConfig(0);  // reclaimed at once
  auto model = MakeReplicaModel(VariantModelConfig(config.model, config.service.fleet.variants[0]));
  ASSERT_TRUE(model);
  auto result = RunSimulation(config, **model, FixedDesired(2), SteadyArrivals(1200, 0.5));
  ASSERT_TRUE(result) << result.error().ToString();
  ASSERT_GT(result->report.preempted, 0);
  EXPECT_GT(result->report.lost_to_preemption, 0);
  EXPECT_GE(result->report.aborted, result->report.lost_to_preemption);
}

TEST(EngineVariantsTest, ASingleShapeServiceIsOneUnpricedVariant) {
  testing::AffineReplicaModel model;
  SimulationConfig c;
  c.cluster = {1, 8, "H100", 81559};
  auto result = RunSimulation(c, model, FixedDesired(2), SteadyArrivals(100, 0.5));
  ASSERT_TRUE(result) << result.error().ToString();
  ASSERT_EQ(result->report.variants.size(), 1u);
  EXPECT_EQ(result->report.variants[0].name, "default");
  EXPECT_DOUBLE_EQ(result->report.variants[0].gpu_hours, result->report.gpu_hours);
  EXPECT_DOUBLE_EQ(result->report.cost, 0);
}

}  // namespace
}  // namespace gpuscale::sim
