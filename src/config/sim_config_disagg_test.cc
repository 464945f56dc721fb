#include <gtest/gtest.h>

#include "config/sim_config.h"
#include "sim/disagg.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

Result<SimConfigFile> Parse(const std::string& text) {
  auto root = yaml::ParseYaml(text, "test");
  if (!root) return Unexpected<Error>(root.error());
  return ParseSimConfig(*root);
}

constexpr const char* kDisagg = R"(cluster: {nodes: 2, gpus_per_node: 8}
service: {name: chat, cold_start_seconds: 45}
slo: {ttft_seconds: 2.5, tpot_seconds: 0.1}
disaggregated:
  gpu_budget: 12
  link: rdma-100g
  prefill:
    max_replicas: 8
    initial_replicas: 2
    policy: {family: disagg, disagg: {role: prefill}}
  decode:
    gpus_per_replica: 2
    min_replicas: 2
    max_replicas: 4
    policy: {family: disagg, disagg: {role: decode, capacity_tokens_per_second: 3000}}
)";

TEST(SimConfigDisaggTest, ParsesPoolsBudgetLinkAndPolicies) {
  auto file = Parse(kDisagg);
  ASSERT_TRUE(file) << file.error().ToString();
  ASSERT_TRUE(file->sim.disaggregated.has_value());
  const sim::DisaggSpec& d = *file->sim.disaggregated;
  EXPECT_EQ(d.gpu_budget, 12);
  EXPECT_EQ(d.link.gbps, 100);
  EXPECT_EQ(d.prefill.name, "chat-prefill");
  EXPECT_EQ(d.prefill.max_replicas, 8);
  EXPECT_EQ(d.prefill.initial_replicas, 2);
  EXPECT_EQ(d.prefill.cold_start.count(), 45);  // from service
  EXPECT_EQ(d.decode.gpus_per_replica, 2);
  EXPECT_EQ(d.decode.min_replicas, 2);
  EXPECT_EQ(file->decode_policy["max_replicas"].as<int>(), 4);  // merged from the pool

  auto model = sim::MakeReplicaModel({});
  ASSERT_TRUE(model);
  auto prefill = MakeDisaggPoolPolicy(*file, scale::PoolRole::kPrefill, **model);
  ASSERT_TRUE(prefill) << prefill.error().ToString();
  auto* p = dynamic_cast<scale::DisaggPolicy*>(prefill->policy.get());
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->config().mix_capacities.empty());  // from the replica model
  EXPECT_EQ(p->MaxReplicas(), 8);
  auto decode = MakeDisaggPoolPolicy(*file, scale::PoolRole::kDecode, **model);
  ASSERT_TRUE(decode) << decode.error().ToString();
  EXPECT_EQ(dynamic_cast<scale::DisaggPolicy&>(*decode->policy).capacity(), 3000);
}

struct BadCase {
  const char* name;
  std::string from, to;  // a replacement in kDisagg
  std::string field;
  int line;  // 0: no line in the message
};

TEST(SimConfigDisaggTest, ErrorsNameFieldAndLine) {
  const BadCase cases[] = {
      {"link", "rdma-100g", "infiniband", "disaggregated.link", 6},
      {"pool key", "max_replicas: 8", "max_replica: 8", "disaggregated.prefill", 8},
      {"pool bound", "max_replicas: 4", "max_replicas: 1", "disaggregated.decode.max_replicas", 14},
      {"budget below minimums", "gpu_budget: 12", "gpu_budget: 4", "disaggregated.gpu_budget", 0},
      {"top-level policy", "disaggregated:", "policy: {family: slo}\ndisaggregated:", "policy", 4},
      {"missing pool policy", "    policy: {family: disagg, disagg: {role: prefill}}\n", "",
       "disaggregated.prefill.policy", 0},
  };
  for (const BadCase& c : cases) {
    std::string text = kDisagg;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.name;
    text.replace(at, c.from.size(), c.to);
    auto file = Parse(text);
    ASSERT_FALSE(file) << c.name;
    EXPECT_EQ(file.error().field.rfind(c.field, 0), 0u)
        << c.name << ": " << file.error().ToString();
    if (c.line > 0) {
      EXPECT_NE(file.error().ToString().find("line " + std::to_string(c.line)), std::string::npos)
          << c.name << ": " << file.error().ToString();
    }
  }
}

TEST(SimConfigDisaggTest, PolicyRoleMustMatchItsPool) {
  std::string text = kDisagg;
  text.replace(text.find("{role: prefill}"), 15, "{role: decode}");
  auto file = Parse(text);
  ASSERT_TRUE(file) << file.error().ToString();
  auto model = sim::MakeReplicaModel({});
  ASSERT_TRUE(model);
  auto policy = MakeDisaggPoolPolicy(*file, scale::PoolRole::kPrefill, **model);
  ASSERT_FALSE(policy);
  EXPECT_EQ(policy.error().field, "disaggregated.prefill.policy.disagg.role");
}

TEST(DisaggPolicyParserTest, LivePolicyNeedsACapacity) {
  auto root = yaml::ParseYaml(
      "family: disagg\nmin_replicas: 1\nmax_replicas: 4\n"
      "disagg: {role: decode}\n",
      "test");
  ASSERT_TRUE(root);
  auto spec = ParsePolicy(*root);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().field, "disagg.capacity_tokens_per_second");
  auto ok = yaml::ParseYaml(
      "family: disagg\nmin_replicas: 1\nmax_replicas: 4\n"
      "disagg: {role: decode, capacity_tokens_per_second: 2000, "
      "kv_target_ratio: 0.9}\n",
      "test");
  ASSERT_TRUE(ok);
  auto good = ParsePolicy(*ok);
  ASSERT_TRUE(good) << good.error().ToString();
  EXPECT_EQ(good->policy->Family(), "disagg");
}

}  // namespace
}  // namespace gpuscale::config
