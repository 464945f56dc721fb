// The `disaggregated:` block of a daemon service: what it reads, what it defaults, how it
// round-trips through the stored YAML, and the errors (field and line) it gives.
#include <gtest/gtest.h>

#include <string>

#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {
namespace {

constexpr char kDisaggService[] = R"(name: chat
models: [llama]
slo: {ttft_seconds: 0.5}
disaggregated:
  gpu_budget: 6
  prefill:
    command: [emu, --role, prefill, --port, "{port}"]
    env: {A: "1"}
    gpus_per_replica: 1
    min_replicas: 1
    max_replicas: 4
    policy: {family: disagg, disagg: {capacity_tokens_per_second: 5000}}
  decode:
    command: [emu, --role, decode, --port, "{port}"]
    gpus_per_replica: 2
    min_replicas: 1
    max_replicas: 2
    policy: {family: disagg, disagg: {role: decode, capacity_tokens_per_second: 300}}
)";

std::string DisaggErrorText(const Result<ServiceConfig>& s) {
  return s ? "ok" : s.error().ToString();
}

TEST(DisaggServiceConfigTest, ReadsBothPoolsAndTheirSums) {
  Result<ServiceConfig> s = ParseServiceConfigText(kDisaggService, "test");
  ASSERT_TRUE(s) << DisaggErrorText(s);
  ASSERT_TRUE(s->disaggregated);
  const DisaggSpec& d = *s->disaggregated;
  EXPECT_EQ(d.gpu_budget, 6);
  EXPECT_EQ(d.prefill.command[2], "prefill");
  EXPECT_EQ(d.prefill.env.size(), 1u);
  EXPECT_EQ(d.decode.gpus_per_replica, 2);
  EXPECT_EQ(d.prefill.max_replicas, 4);
  EXPECT_EQ(d.prefill.policy_family, "disagg");
  // The prefill block named no role: the pool's was filled in.
  EXPECT_NE(d.prefill.policy_yaml.find("role: prefill"), std::string::npos)
      << d.prefill.policy_yaml;
  EXPECT_TRUE(s->command.empty());
  EXPECT_EQ(s->min_replicas, 2);
  EXPECT_EQ(s->max_replicas, 6);
  EXPECT_EQ(s->policy_family, "disagg");
}

TEST(DisaggServiceConfigTest, RoundTripsThroughCanonicalYaml) {
  Result<ServiceConfig> s = ParseServiceConfigText(kDisaggService, "test");
  ASSERT_TRUE(s) << DisaggErrorText(s);
  const std::string text = ServiceConfigToYaml(*s);
  Result<ServiceConfig> again = ParseServiceConfigText(text, "canonical");
  ASSERT_TRUE(again) << DisaggErrorText(again) << "\n" << text;
  EXPECT_EQ(*again, *s) << text;
}

// Each pool runs as a service of its own: its fields, the shared ones, a name no service can
// have, and its SLO read from its own replicas.
TEST(DisaggServiceConfigTest, PoolServiceConfigIsThePoolAsAService) {
  Result<ServiceConfig> s = ParseServiceConfigText(kDisaggService, "test");
  ASSERT_TRUE(s) << DisaggErrorText(s);
  const ServiceConfig decode = PoolServiceConfig(*s, 1);
  EXPECT_EQ(decode.name, "chat.decode");
  EXPECT_FALSE(decode.disaggregated);
  EXPECT_EQ(decode.command[2], "decode");
  EXPECT_EQ(decode.gpus_per_replica, 2);
  EXPECT_EQ(decode.max_replicas, 2);
  EXPECT_EQ(decode.models, s->models);
  EXPECT_EQ(decode.slo.ttft_seconds, 0.5);
  EXPECT_EQ(decode.slo.source, SloSource::kReplicas);
  Result<alloc::PoolBudget> budget = MakePoolBudget(*s->disaggregated);
  ASSERT_TRUE(budget);
  EXPECT_EQ(budget->budget(), 6);
}

struct DisaggParseCase {
  const char* name;
  std::string from, to;  // replaced in kDisaggService (from "" = appended)
  std::string field;     // the error's field
  std::string message;   // a part of its message
};

TEST(DisaggServiceConfigTest, ErrorsNameTheFieldAndLine) {
  const DisaggParseCase cases[] = {
      {"command beside it", "models: [llama]\n", "models: [llama]\ncommand: [x]\n", "command",
       "one per pool"},
      {"policy beside it", "models: [llama]\n", "models: [llama]\npolicy: {family: rules}\n",
       "policy", "disaggregated.prefill.policy"},
      {"min_replicas beside it", "models: [llama]\n", "models: [llama]\nmin_replicas: 1\n",
       "min_replicas", "one per pool"},
      {"no budget", "  gpu_budget: 6\n", "", "disaggregated.gpu_budget", "required"},
      {"budget below the minimums", "gpu_budget: 6", "gpu_budget: 2", "disaggregated.gpu_budget",
       "minimums"},
      {"unknown key", "  gpu_budget: 6\n", "  gpu_budget: 6\n  link: nvlink\n",
       "disaggregated.link", "unknown"},
      {"unknown pool key", "    env: {A: \"1\"}\n", "    env: {A: \"1\"}\n    readiness_path: /x\n",
       "disaggregated.prefill.readiness_path", "unknown"},
      {"no decode pool", "  decode:\n", "  other:\n", "disaggregated.other", "unknown"},
      {"pool without command", "    command: [emu, --role, decode, --port, \"{port}\"]\n", "",
       "disaggregated.decode.command", "required"},
      {"role of the other pool", "role: decode, capacity", "role: prefill, capacity",
       "disaggregated.decode.policy.disagg.role", "is prefill in the decode pool"},
      {"no capacity", "{capacity_tokens_per_second: 5000}", "{}",
       "disaggregated.prefill.policy.disagg.capacity_tokens_per_second", "> 0"},
      {"pool bounds", "    max_replicas: 2\n", "    max_replicas: 0\n",
       "disaggregated.decode.max_replicas", ">= 1"},
      {"slurm engine", "models: [llama]\n", "models: [llama]\nengine: slurm\n", "engine",
       "engine: local"},
      {"gateway slo", "slo: {ttft_seconds: 0.5}", "slo: {ttft_seconds: 0.5, source: gateway}",
       "slo.source", "own replicas"},
  };
  for (const DisaggParseCase& c : cases) {
    std::string text = kDisaggService;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.name;
    text.replace(at, c.from.size(), c.to);
    Result<ServiceConfig> s = ParseServiceConfigText(text, "test");
    ASSERT_FALSE(s) << c.name;
    EXPECT_EQ(s.error().field, c.field) << c.name << ": " << s.error().ToString();
    EXPECT_NE(s.error().message.find(c.message), std::string::npos)
        << c.name << ": " << s.error().ToString();
  }
}

// A missing policy is the pool's `disagg` default, which needs the capacity a load test gives.
TEST(DisaggServiceConfigTest, APoolWithoutPolicyGetsTheDisaggFamily) {
  std::string text = kDisaggService;
  const std::string policy =
      "    policy: {family: disagg, disagg: {capacity_tokens_per_second: 5000}}\n";
  text.erase(text.find(policy), policy.size());
  Result<ServiceConfig> s = ParseServiceConfigText(text, "test");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().field, "disaggregated.prefill.policy.disagg.capacity_tokens_per_second")
      << s.error().ToString();
}

TEST(DisaggServiceConfigTest, BudgetErrorsCarryTheLine) {
  std::string text = kDisaggService;
  text.replace(text.find("gpu_budget: 6"), 13, "gpu_budget: 2");
  Result<ServiceConfig> s = ParseServiceConfigText(text, "test");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().ToString().find("line 5"), std::string::npos) << s.error().ToString();
}

// The example in examples/ is a valid daemon config.
TEST(DisaggServiceConfigTest, TheExampleConfigLoads) {
  Result<DaemonConfig> config =
      LoadDaemonConfig(std::string(GPUSCALE_SOURCE_DIR) + "/examples/disagg-service.yaml");
  ASSERT_TRUE(config) << config.error().ToString();
  ASSERT_EQ(config->services.size(), 1u);
  ASSERT_TRUE(config->services[0].disaggregated);
  EXPECT_EQ(config->services[0].disaggregated->gpu_budget, 4);
  EXPECT_EQ(config->services[0].disaggregated->decode.policy_family, "disagg");
}

}  // namespace
}  // namespace gpuscale::daemon
