#include "config/sim_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "sim/disagg.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

Result<SimConfigFile> ParseSimYaml(const std::string& text) {
  auto root = yaml::ParseYaml(text, "test");
  if (!root) return Unexpected<Error>(root.error());
  return ParseSimConfig(*root);
}

constexpr const char* kFull = R"(cluster: {nodes: 2, gpus_per_node: 4, gpu_type: A100}
service:
  name: chat
  gpus_per_replica: 2
  min_replicas: 1
  max_replicas: 4
  cold_start_seconds: 45
replica_model: {max_batch_size: 128, max_batched_tokens: 4096}
router: round_robin
control_interval_seconds: 10
scrape_interval_seconds: 2
slo: {ttft_seconds: 2.5, tpot_seconds: 0.1, target_ratio: 0.95}
faults:
  crash_at_seconds: [100, 200]
  metrics_outages: [{from_seconds: 10, to_seconds: 20}]
policy: {family: slo, slo: {initial_capacity_rps: 5}}
)";

TEST(SimConfigTest, ParsesEverySection) {
  auto file = ParseSimYaml(kFull);
  ASSERT_TRUE(file) << file.error().ToString();
  const auto& c = file->sim;
  EXPECT_EQ(c.cluster.nodes, 2);
  EXPECT_EQ(c.cluster.gpu_type, "A100");
  EXPECT_EQ(c.service.gpus_per_replica, 2);
  EXPECT_EQ(c.model.tensor_parallel, 2);
  EXPECT_EQ(c.model.max_batch_size, 128);
  EXPECT_EQ(c.service.cold_start, Seconds{45});
  EXPECT_EQ(c.router.kind, route::PickerKind::kRoundRobin);
  EXPECT_EQ(c.scrape_interval, Seconds{2});
  EXPECT_DOUBLE_EQ(c.slo.ttft_seconds, 2.5);
  EXPECT_EQ(c.faults.crash_at_seconds.size(), 2u);
  ASSERT_EQ(c.faults.metrics_outages.size(), 1u);
  EXPECT_EQ(file->policy["min_replicas"].as<int>(), 1);  // copied from service
  EXPECT_EQ(file->policy["max_replicas"].as<int>(), 4);
}

TEST(SimConfigTest, RouterTakesANameOrAMappingWithSlowStart) {
  auto named = ParseSimYaml("router: least_outstanding\npolicy: {family: slo}\n");
  ASSERT_TRUE(named) << named.error().ToString();
  EXPECT_EQ(named->sim.router.kind, route::PickerKind::kLeastOutstanding);
  EXPECT_EQ(named->sim.router.slow_start_seconds, 0);
  auto mapped = ParseSimYaml(
      "router: {kind: least_outstanding, slow_start_seconds: 20}\n"
      "policy: {family: slo}\n");
  ASSERT_TRUE(mapped) << mapped.error().ToString();
  EXPECT_EQ(mapped->sim.router.kind, route::PickerKind::kLeastOutstanding);
  EXPECT_EQ(mapped->sim.router.slow_start_seconds, 20);
  auto kind_only = ParseSimYaml("router: {kind: round_robin}\npolicy: {family: slo}\n");
  ASSERT_TRUE(kind_only) << kind_only.error().ToString();
  EXPECT_EQ(kind_only->sim.router.kind, route::PickerKind::kRoundRobin);
  auto cache =
      ParseSimYaml("router: {kind: prefix_cache, prefix_index: precise}\npolicy: {family: slo}\n");
  ASSERT_TRUE(cache) << cache.error().ToString();
  EXPECT_EQ(cache->sim.router.kind, route::PickerKind::kPrefixCache);
  EXPECT_EQ(cache->sim.router.prefix_index, route::PrefixIndexMode::kPrecise);
  auto affinity = ParseSimYaml("router: {prefix_affinity: true}\npolicy: {family: slo}\n");
  ASSERT_TRUE(affinity) << affinity.error().ToString();
  EXPECT_TRUE(affinity->sim.router.prefix_affinity);
  auto empty = ParseSimYaml("router:\npolicy: {family: slo}\n");
  ASSERT_TRUE(empty) << empty.error().ToString();
  EXPECT_EQ(empty->sim.router, route::PickerSpec{});
  auto unknown =
      ParseSimYaml("router: {kind: least_outstanding, slowstart: 20}\npolicy: {family: slo}\n");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().ToString().find("router.slowstart"), std::string::npos)
      << unknown.error().ToString();
}

TEST(SimConfigTest, AdmissionIsTheGatewaysBlockWithoutHeaders) {
  auto none = ParseSimYaml("policy: {family: slo}\n");
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_FALSE(none->sim.admission);
  auto file = ParseSimYaml(
      "admission: {max_in_flight_per_replica: 6, default_priority: sheddable,\n"
      "            sheddable_max_wait_seconds: 0.5}\npolicy: {family: slo}\n");
  ASSERT_TRUE(file) << file.error().ToString();
  ASSERT_TRUE(file->sim.admission);
  EXPECT_EQ(file->sim.admission->max_in_flight_per_replica, 6);
  EXPECT_EQ(file->sim.admission->default_priority, route::Priority::kSheddable);
  EXPECT_EQ(file->sim.admission->sheddable_max_wait, Seconds{0.5});
  EXPECT_EQ(file->sim.admission->critical_reserved_per_replica, 0);
  auto reserved = ParseSimYaml(
      "admission: {max_in_flight_per_replica: 6, critical_reserved_per_replica: 5}\n"
      "policy: {family: slo}\n");
  ASSERT_TRUE(reserved) << reserved.error().ToString();
  EXPECT_EQ(reserved->sim.admission->critical_reserved_per_replica, 5);
  auto empty = ParseSimYaml("admission: {}\npolicy: {family: slo}\n");
  ASSERT_TRUE(empty) << empty.error().ToString();
  EXPECT_EQ(empty->sim.admission, route::AdmissionConfig{});
}

TEST(SimConfigTest, BuildsFreshSloPolicies) {
  auto file = ParseSimYaml(kFull);
  ASSERT_TRUE(file);
  auto a = MakeSimPolicy(*file);
  auto b = MakeSimPolicy(*file);
  ASSERT_TRUE(a && b) << (a ? b.error().ToString() : a.error().ToString());
  EXPECT_EQ(a->policy->Family(), "slo");
  EXPECT_EQ(a->policy->MaxReplicas(), 4);
  EXPECT_NE(a->policy.get(), b->policy.get());
}

struct SimConfigBadCase {
  std::string text;
  std::string error;  // expected Error::ToString()
};

class SimConfigErrorTest : public ::testing::TestWithParam<SimConfigBadCase> {};

TEST_P(SimConfigErrorTest, NamesFieldAndLine) {
  auto file = ParseSimYaml(GetParam().text);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().ToString(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SimConfigErrorTest,
    ::testing::Values(
        SimConfigBadCase{"service:\n  cold_start_seconds: soon\npolicy: {family: slo}\n",
                         "service.cold_start_seconds: expected a number, got 'soon' (line 2)"},
        SimConfigBadCase{"router: random\npolicy: {family: slo}\n",
                         "router: expected one of least_outstanding, round_robin, prefix_cache, "
                         "got 'random' (line 1)"},
        SimConfigBadCase{"router: {kind: random}\npolicy: {family: slo}\n",
                         "router.kind: expected one of least_outstanding, round_robin, "
                         "prefix_cache, got 'random' (line 1)"},
        SimConfigBadCase{
            "router:\n  slow_start_seconds: -5\npolicy: {family: slo}\n",
            "router.slow_start_seconds: expected a finite number of seconds >= 0, got -5 "
            "(line 2)"},
        SimConfigBadCase{
            "router: {slow_start_seconds: .inf}\npolicy: {family: slo}\n",
            "router.slow_start_seconds: expected a finite number of seconds >= 0, got inf "
            "(line 1)"},
        SimConfigBadCase{
            "router:\n  kind: round_robin\n  slow_start_seconds: 20\npolicy: {family: slo}\n",
            "router.slow_start_seconds: applies to least_outstanding only (line 3)"},
        SimConfigBadCase{
            "router: {kind: round_robin, prefix_index: precise}\npolicy: {family: slo}\n",
            "router.prefix_index: applies to prefix_cache only (line 1)"},
        SimConfigBadCase{"router: {affinity_load_factor: 1}\npolicy: {family: slo}\n",
                         "router.affinity_load_factor: expected a factor in (1, 100], got 1 "
                         "(line 1)"},
        SimConfigBadCase{"router: [least_outstanding]\npolicy: {family: slo}\n",
                         "router: expected one of least_outstanding, round_robin, prefix_cache, or "
                         "a mapping {kind: ...} "
                         "(line 1)"},
        SimConfigBadCase{"admission:\n  tenant_header: x-tenant\npolicy: {family: slo}\n",
                         "admission.tenant_header: unknown field; accepted fields: "
                         "max_in_flight_per_replica, critical_reserved_per_replica, "
                         "default_priority, model_priority, sheddable_max_wait_seconds (line 2)"},
        SimConfigBadCase{"admission: {critical_reserved_per_replica: 2}\npolicy: {family: slo}\n",
                         "admission.critical_reserved_per_replica: reserves slots of "
                         "max_in_flight_per_replica, which is 0 (no limit): set it too (line 1)"},
        SimConfigBadCase{"admission: {max_in_flight_per_replica: 8,\n"
                         "            critical_reserved_per_replica: 8}\npolicy: {family: slo}\n",
                         "admission.critical_reserved_per_replica: expected fewer than "
                         "max_in_flight_per_replica (8), got 8: standard and sheddable requests "
                         "would get no slot (line 2)"},
        SimConfigBadCase{"admission: {max_in_flight_per_replica: 8, critical_reserved_per_replica: "
                         "-1}\npolicy: {family: slo}\n",
                         "admission.critical_reserved_per_replica: expected 0 (none) or more "
                         "(line 1)"},
        SimConfigBadCase{"admission: {default_priority: urgent}\npolicy: {family: slo}\n",
                         "admission.default_priority: expected critical, standard or sheddable, "
                         "got 'urgent' (line 1)"},
        SimConfigBadCase{"admission: {sheddable_max_wait_seconds: 0}\npolicy: {family: slo}\n",
                         "admission.sheddable_max_wait_seconds: expected a finite number of "
                         "seconds > 0, got 0 (line 1)"},
        SimConfigBadCase{"slo:\n  target_ratio: 1.5\npolicy: {family: slo}\n",
                         "slo.target_ratio: must be in (0, 1] (line 2)"},
        SimConfigBadCase{
            "replica_model:\n  kv_cache_tokens: 2e113\npolicy: {family: slo}\n",
            "replica_model.kv_cache_tokens: must be a number in [0, 1000000000000] (line 2)"},
        SimConfigBadCase{"replica_model: {kv_cache_tokens: .nan}\npolicy: {family: slo}\n",
                         "replica_model.kv_cache_tokens: expected a number, got '.nan' (line 1)"},
        SimConfigBadCase{"cluster: {nodes: 1}\n", "policy: required field is missing"},
        SimConfigBadCase{
            "service: {max_replicas: 4}\npolicy:\n  family: slo\n  max_replicas: 8\n",
            "policy.max_replicas: 8 differs from service.max_replicas = 4; set it in one "
            "place (line 4)"},
        SimConfigBadCase{
            "faults:\n  metrics_outages:\n    - {from_seconds: 5, to_seconds: 1}\n"
            "policy: {family: slo}\n",
            "faults.metrics_outages[0].to_seconds: must be >= from_seconds (line 3)"}));

TEST(SimConfigTest, InitialReplicasTakesAutoOrANumber) {
  auto automatic = ParseSimYaml("service: {initial_replicas: auto}\npolicy: {family: slo}\n");
  ASSERT_TRUE(automatic) << automatic.error().ToString();
  EXPECT_EQ(automatic->sim.service.initial_replicas, sim::ServiceSpec::kAutoInitialReplicas);
  auto fixed = ParseSimYaml("service: {initial_replicas: 3}\npolicy: {family: slo}\n");
  ASSERT_TRUE(fixed) << fixed.error().ToString();
  EXPECT_EQ(fixed->sim.service.ReadyAtStart(), 3);
  auto bad = ParseSimYaml("service: {initial_replicas: many}\npolicy: {family: slo}\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().ToString().find("service.initial_replicas"), std::string::npos)
      << bad.error().ToString();
}

TEST(SimConfigTest, RejectsUnknownKeys) {
  auto file = ParseSimYaml("scrape_interval: 5\npolicy: {family: slo}\n");
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().ToString().find("scrape_interval"), std::string::npos);
}

TEST(SimConfigTest, PolicyErrorsArePrefixed) {
  auto file = ParseSimYaml("policy: {family: slo, slo: {burst_z: -1}}\n");
  ASSERT_TRUE(file);
  auto policy = MakeSimPolicy(*file);
  ASSERT_FALSE(policy);
  EXPECT_EQ(policy.error().field.rfind("policy.", 0), 0u) << policy.error().field;
}

TEST(SimConfigTest, ExampleConfigsParse) {
  for (const char* workload : {"conv", "code", "general"}) {
    std::optional<route::PickerSpec> router;
    for (const char* name : {"slo", "hpa", "keda", "rules", "ratio", "kpa"}) {
      std::string path = std::string(GPUSCALE_SOURCE_DIR) + "/examples/sim/" + workload + "/" +
                         name + ".yaml";
      auto file = LoadSimConfigFile(path);
      ASSERT_TRUE(file) << path << ": " << file.error().ToString();
      auto policy = MakeSimPolicy(*file);
      EXPECT_TRUE(policy) << path << ": " << policy.error().ToString();
      // The results table compares policies behind one gateway.
      if (!router) router = file->sim.router;
      EXPECT_EQ(file->sim.router, *router) << path;
    }
  }
}

// Every example names `router: least_outstanding`, which the picker got before the router
// block had one reader: least outstanding, no slow start, no prefix affinity.
TEST(SimConfigTest, EveryExampleRoutesLeastOutstandingWithoutSlowStart) {
  namespace fs = std::filesystem;
  int examples = 0;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(GPUSCALE_SOURCE_DIR) / "examples" / "sim")) {
    if (entry.path().extension() != ".yaml") continue;
    ++examples;
    auto file = LoadSimConfigFile(entry.path().string());
    ASSERT_TRUE(file) << entry.path() << ": " << file.error().ToString();
    EXPECT_EQ(file->sim.router, route::PickerSpec{}) << entry.path();
  }
  EXPECT_GE(examples, 24);
}

// A prefill/decode disaggregated service (sim/disagg.h).
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
  auto file = ParseSimYaml(kDisagg);
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

struct DisaggBadCase {
  const char* name;
  std::string from, to;  // a replacement in kDisagg
  std::string field;
  int line;  // 0: no line in the message
};

TEST(SimConfigDisaggTest, ErrorsNameFieldAndLine) {
  const DisaggBadCase cases[] = {
      {"link", "rdma-100g", "infiniband", "disaggregated.link", 6},
      {"pool key", "max_replicas: 8", "max_replica: 8", "disaggregated.prefill", 8},
      {"pool bound", "max_replicas: 4", "max_replicas: 1", "disaggregated.decode.max_replicas", 14},
      {"budget below minimums", "gpu_budget: 12", "gpu_budget: 4", "disaggregated.gpu_budget", 0},
      {"top-level policy", "disaggregated:", "policy: {family: slo}\ndisaggregated:", "policy", 4},
      {"missing pool policy", "    policy: {family: disagg, disagg: {role: prefill}}\n", "",
       "disaggregated.prefill.policy", 0},
  };
  for (const DisaggBadCase& c : cases) {
    std::string text = kDisagg;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.name;
    text.replace(at, c.from.size(), c.to);
    auto file = ParseSimYaml(text);
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
  auto file = ParseSimYaml(text);
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
