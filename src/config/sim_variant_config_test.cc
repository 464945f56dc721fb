#include "config/sim_variant_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "config/profile_file.h"
#include "config/sim_config.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

Result<SimConfigFile> ParseWithService(const std::string& service) {
  auto root = yaml::ParseYaml(
      "cluster: {nodes: 2, gpus_per_node: 8}\nservice:\n" + service + "policy: {family: slo}\n",
      "test");
  if (!root) return Unexpected<Error>(root.error());
  return ParseSimConfig(*root);
}

constexpr const char* kTwoVariants = R"(  max_replicas: 8
  variants:
    - {name: h100, gpu_type: H100, gpus_per_replica: 2, price_per_gpu_hour: 4}
    - {name: a100-spot, gpu_type: a100, gpus_per_replica: 4, price_per_gpu_hour: 2.5,
       spot: true, spot_discount_ratio: 0.6, preemption_notice_seconds: 30,
       preemptions_per_hour: 0.1}
  gpu_limits: {H100: 8, A100: 16}
  budget_per_hour: 60
  on_demand_base_ratio: 0.25
  long_prompt_ttft_share: 0
)";

TEST(SimVariantConfigTest, ParsesVariantsLimitsAndBudget) {
  auto file = ParseWithService(kTwoVariants);
  ASSERT_TRUE(file) << file.error().ToString();
  const sim::VariantPlan& plan = file->sim.service.fleet;
  ASSERT_EQ(plan.variants.size(), 2u);
  EXPECT_EQ(plan.variants[0].gpu_type, "h100");
  EXPECT_FALSE(plan.variants[0].spot);
  EXPECT_DOUBLE_EQ(plan.variants[0].PricePerReplicaHour(), 8);
  const sim::VariantSpec& spot = plan.variants[1];
  EXPECT_EQ(spot.gpu_type, "a100");
  EXPECT_TRUE(spot.spot);
  EXPECT_DOUBLE_EQ(spot.price_per_gpu_hour, 1.0);  // 2.5 x (1 - 0.6)
  EXPECT_EQ(spot.preemption_notice, Seconds{30});
  EXPECT_DOUBLE_EQ(spot.preemptions_per_hour, 0.1);
  ASSERT_EQ(plan.gpu_limits.size(), 2u);
  EXPECT_EQ(plan.gpu_limits[1], (sim::GpuTypeLimit{"a100", 16}));
  EXPECT_DOUBLE_EQ(plan.budget_per_hour, 60);
  EXPECT_DOUBLE_EQ(plan.on_demand_base_ratio, 0.25);
  EXPECT_DOUBLE_EQ(plan.long_prompt_ttft_share, 0);  // off (default 0.5)
  EXPECT_EQ(file->sim.service.gpus_per_replica, 2);  // the first variant's
  EXPECT_EQ(sim::EffectiveVariants(file->sim), plan.variants);
}

TEST(SimVariantConfigTest, ReadsThePreemptionSeed) {
  auto root = yaml::ParseYaml("faults: {preemption_seed: 9}\npolicy: {family: slo}\n", "test");
  ASSERT_TRUE(root);
  auto file = ParseSimConfig(*root);
  ASSERT_TRUE(file) << file.error().ToString();
  EXPECT_EQ(file->sim.faults.preemption_seed, 9u);
}

TEST(SimVariantConfigTest, SingleShapeIsOneImplicitVariant) {
  auto file = ParseWithService("  gpus_per_replica: 2\n");
  ASSERT_TRUE(file) << file.error().ToString();
  EXPECT_TRUE(file->sim.service.fleet.variants.empty());
  const auto variants = sim::EffectiveVariants(file->sim);
  ASSERT_EQ(variants.size(), 1u);
  EXPECT_EQ(variants[0].name, "default");
  EXPECT_EQ(variants[0].gpu_type, "h100");
  EXPECT_EQ(variants[0].gpus_per_replica, 2);
  EXPECT_DOUBLE_EQ(variants[0].price_per_gpu_hour, 0);
}

struct VariantErrorCase {
  const char* service;
  const char* field;    // expected in the error
  const char* message;  // expected in the error
};

TEST(SimVariantConfigTest, ErrorsNameTheFieldAndLine) {
  const VariantErrorCase cases[] = {
      {"  variants:\n    - {name: a, gpu_type: L4, price_per_gpu_hour: 1}\n",
       "service.variants[0].gpu_type", "unknown GPU type 'L4'"},
      {"  variants:\n    - {name: a, gpu_type: H100}\n", "service.variants[0].price_per_gpu_hour",
       "required field is missing"},
      {"  variants:\n    - {name: a, gpu_type: H100, price_per_gpu_hour: 0}\n",
       "service.variants[0].price_per_gpu_hour", "must be > 0"},
      {"  variants:\n    - {name: a, gpu_type: H100, price_per_gpu_hour: 1}\n"
       "    - {name: a, gpu_type: A100, price_per_gpu_hour: 1}\n",
       "service.variants[1].name", "duplicate variant name 'a'"},
      {"  variants:\n    - {name: a, gpu_type: H100, price_per_gpu_hour: 1, "
       "preemptions_per_hour: 1}\n",
       "service.variants[0].preemptions_per_hour", "only a spot variant"},
      {"  gpus_per_replica: 2\n  variants:\n    - {name: a, gpu_type: H100, "
       "price_per_gpu_hour: 1}\n",
       "service.gpus_per_replica", "per variant"},
      {"  budget_per_hour: 5\n", "service.budget_per_hour", "needs service.variants"},
      {"  variants:\n    - {name: a, gpu_type: H100, price_per_gpu_hour: 1}\n"
       "  long_prompt_ttft_share: 1.5\n",
       "service.long_prompt_ttft_share", "must be in [0, 1]"},
      {"  variants:\n    - {name: a, gpu_type: H100, price_per_gpu_hour: 1}\n"
       "  gpu_limits: {TPU: 4}\n",
       "service.gpu_limits.TPU", "unknown GPU type"},
      {"  variants:\n    - {name: a, gpu_type: H100, price_per_gpu_hour: 1, "
       "gpus_per_replica: 16}\n",
       "service.variants[0].gpus_per_replica", "gpus_per_node"},
  };
  for (const VariantErrorCase& c : cases) {
    auto file = ParseWithService(c.service);
    ASSERT_FALSE(file) << c.service;
    const std::string text = file.error().ToString();
    EXPECT_NE(text.find(c.field), std::string::npos) << text;
    EXPECT_NE(text.find(c.message), std::string::npos) << text;
    if (std::string(c.field).starts_with("service.variants") &&
        std::string(c.field).find("gpus_per_replica") == std::string::npos) {
      EXPECT_NE(text.find("(line "), std::string::npos) << text;
    }
  }
}

TEST(SimVariantConfigTest, RejectsAProfileMeasuredOnAnotherGpuType) {
  profile::CapacityProfile p;
  p.model = "llama-2-70b";
  p.source = "simulator";
  p.replica_model =
      sim::ReplicaModelConfig{.model = "llama-2-70b", .gpu = "h100", .tensor_parallel = 4};
  p.capacity_tokens_per_second = 5000;
  p.measurement.point_seconds = 300;
  p.measurement.warmup_seconds = 60;
  p.output_token_weight = 4;
  profile::MixProfile mix;
  mix.mix = {256, 64};
  mix.capacity_rps = 2;
  mix.capacity_tokens_per_second = 800;
  p.mixes.push_back(mix);
  const std::string path = ::testing::TempDir() + "/variant_profile_h100x4.yaml";
  std::ofstream(path) << ProfileToYaml(p);
  auto wrong = ParseWithService(
      "  variants:\n    - {name: a, gpu_type: A100, gpus_per_replica: 4, "
      "price_per_gpu_hour: 1, profile: " +
      path + "}\n");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().field, "service.variants[0].profile");
  EXPECT_NE(wrong.error().message.find("measured on h100 x4"), std::string::npos)
      << wrong.error().message;
  auto right = ParseWithService(
      "  variants:\n    - {name: a, gpu_type: H100, gpus_per_replica: 4, "
      "price_per_gpu_hour: 1, profile: " +
      path + "}\n");
  ASSERT_TRUE(right) << right.error().ToString();
  EXPECT_DOUBLE_EQ(right->sim.service.fleet.variants[0].capacity_tokens_per_second, 5000);
}

}  // namespace
}  // namespace gpuscale::config
