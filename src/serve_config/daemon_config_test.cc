#include "serve_config/daemon_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/policy_config.h"
#include "testing/scoped_env.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {
namespace {

using testing::ScopedEnv;

using ::testing::HasSubstr;

constexpr char kMinimalService[] = R"(
name: chat
command: [vllm, serve, m, --port, "{port}"]
)";

// The error text "field: message" of a failed parse (or "ok").
template <typename T>
std::string ErrorText(const Result<T>& result) {
  return result ? "ok" : result.error().ToString();
}

TEST(DaemonConfigTest, EmptyFileGivesDefaults) {
  auto config = ParseDaemonConfigText("", "test");
  ASSERT_TRUE(config) << ErrorText(config);
  EXPECT_EQ(config->gpu.backend.kind, "auto");
  EXPECT_EQ(config->api.host, "127.0.0.1");
  EXPECT_EQ(config->api.port, 8080);
  EXPECT_EQ(config->loop_interval, Seconds{15});
  EXPECT_TRUE(config->services.empty());
  EXPECT_THAT(config->state_dir, HasSubstr("gpuscale"));
}

TEST(DaemonConfigTest, ServiceDefaultsWithoutPolicyAreStoreRules) {
  auto s = ParseServiceConfigText(kMinimalService, "test");
  ASSERT_TRUE(s) << ErrorText(s);
  EXPECT_EQ(s->name, "chat");
  EXPECT_EQ(s->command.size(), 5u);
  EXPECT_EQ(s->gpus_per_replica, 1);
  EXPECT_EQ(s->readiness_path, "/health");
  EXPECT_EQ(s->metrics_path, "/metrics");
  EXPECT_EQ(s->startup_timeout, Seconds{900});
  EXPECT_EQ(s->drain_timeout, Seconds{300});
  EXPECT_EQ(s->min_replicas, 1);
  EXPECT_EQ(s->max_replicas, 1);
  EXPECT_EQ(s->slo, (SloThresholds{.ttft_seconds = 1.0, .tpot_seconds = 0.05}));
  EXPECT_EQ(s->policy_yaml, "");
  EXPECT_EQ(s->policy_family, "rules");
}

TEST(DaemonConfigTest, SloKeepsTheDefaultOfAKeyItLeavesOut) {
  auto s =
      ParseServiceConfigText(std::string(kMinimalService) + "slo: {ttft_seconds: 0.5}\n", "test");
  ASSERT_TRUE(s) << ErrorText(s);
  EXPECT_EQ(s->slo, (SloThresholds{.ttft_seconds = 0.5, .tpot_seconds = 0.05}));
}

TEST(DaemonConfigTest, SloSourceIsReadAndRoundTrips) {
  for (const auto& [text, source] :
       std::vector<std::pair<std::string, SloSource>>{{"auto", SloSource::kAuto},
                                                      {"gateway", SloSource::kGateway},
                                                      {"replicas", SloSource::kReplicas}}) {
    auto s = ParseServiceConfigText(std::string(kMinimalService) + "slo: {source: " + text + "}\n",
                                    "test");
    ASSERT_TRUE(s) << ErrorText(s);
    EXPECT_EQ(s->slo.source, source) << text;
    auto again = ParseServiceConfigText(ServiceConfigToYaml(*s), "canonical");
    ASSERT_TRUE(again) << ErrorText(again);
    EXPECT_EQ(again->slo, s->slo) << text;
  }
}

TEST(DaemonConfigTest, ReadsEveryTopLevelField) {
  auto config = ParseDaemonConfigText(R"(
gpu: {backend: nvidia-smi, nvidia_smi: /opt/smi, cache_ttl_seconds: 0.5,
      sample_interval_seconds: 2, inventory: inv.yaml, nvml_library: /x/libnvml.so,
      prices: {H100-80GB: 2.49, A100-80GB: 1.29}}
api: {listen: "0.0.0.0:0", token: sekret, max_connections: 100, max_event_streams: 7}
state_dir: /var/lib/gpuscale
loop_interval_seconds: 2.5
prometheus: {url: "http://prom:9090", timeout_seconds: 3}
scrape: {cutoff_ratio: 0.25, stale_after_ticks: 5, view_only_interval_seconds: 10}
retention: {max_age_days: 1.5, max_megabytes: 200}
)",
                                      "test");
  ASSERT_TRUE(config) << ErrorText(config);
  EXPECT_EQ(config->gpu.backend.kind, "nvidia-smi");
  EXPECT_EQ(config->gpu.backend.nvidia_smi_path, "/opt/smi");
  EXPECT_EQ(config->gpu.backend.inventory_path, "inv.yaml");
  EXPECT_EQ(config->gpu.backend.nvml_library_path, "/x/libnvml.so");
  EXPECT_EQ(config->gpu.cache_ttl, Seconds{0.5});
  EXPECT_EQ(config->gpu.sample_interval, Seconds{2});
  EXPECT_EQ(config->gpu.backend.prices,
            (gpu::PriceTable{{"A100-80GB", 1.29}, {"H100-80GB", 2.49}}));
  EXPECT_EQ(config->api.host, "0.0.0.0");
  EXPECT_EQ(config->api.port, 0);
  EXPECT_EQ(config->api.token, "sekret");
  EXPECT_EQ(config->api.max_connections, 100);
  EXPECT_EQ(config->api.max_event_streams, 7);
  EXPECT_EQ(config->state_dir, "/var/lib/gpuscale");
  EXPECT_EQ(config->loop_interval, Seconds{2.5});
  EXPECT_EQ(config->prometheus.url, "http://prom:9090");
  EXPECT_EQ(config->prometheus.timeout, Seconds{3});
  EXPECT_EQ(config->scrape.cutoff_ratio, 0.25);
  EXPECT_EQ(config->scrape.stale_after_ticks, 5);
  EXPECT_EQ(config->scrape.view_only_interval, Seconds{10});
  EXPECT_EQ(config->retention.max_age, Seconds{1.5 * 86400});
  EXPECT_EQ(config->retention.max_bytes, int64_t{200} << 20);
}

TEST(DaemonConfigTest, ReadsTheGatewaysHealthChecksAndStreamIdleTimeout) {
  auto config = ParseDaemonConfigText(
      "gateway: {health_check_interval_seconds: 0, health_check_timeout_seconds: 0.5,\n"
      "          health_check_failures: 4, health_check_path: /ping,\n"
      "          stream_idle_timeout_seconds: 12}\n"
      "api: {max_connections_per_client: 0}\n",
      "test");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->gateway.health_check_interval.count(), 0);  // off
  EXPECT_EQ(config->gateway.health_check_timeout.count(), 0.5);
  EXPECT_EQ(config->gateway.health_check_failures, 4);
  EXPECT_EQ(config->gateway.health_check_path, "/ping");
  EXPECT_EQ(config->gateway.stream_idle_timeout.count(), 12);
  EXPECT_EQ(config->api.max_connections_per_client, 0);
  auto defaults = ParseDaemonConfigText("", "test");
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->gateway.health_check_interval.count(), 2);
  EXPECT_EQ(defaults->api.max_connections_per_client, 1024);
}

TEST(DaemonConfigTest, ReadsTheGatewaysAdmission) {
  auto config = ParseDaemonConfigText(
      "gateway:\n"
      "  admission:\n"
      "    max_in_flight_per_replica: 8\n"
      "    tenant_header: x-tenant\n"
      "    default_priority: critical\n"
      "    model_priority: {batch-model: sheddable}\n"
      "    sheddable_max_wait_seconds: 0.5\n"
      "    tenant_tokens_per_minute: 90000\n",
      "test");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const gateway::AdmissionConfig& a = config->gateway.admission;
  EXPECT_EQ(a.max_in_flight_per_replica, 8);
  EXPECT_EQ(a.priority_header, "x-gpuscale-priority");
  EXPECT_EQ(a.tenant_header, "x-tenant");
  EXPECT_EQ(a.default_priority, route::Priority::kCritical);
  EXPECT_EQ(a.model_priority.at("batch-model"), route::Priority::kSheddable);
  EXPECT_EQ(a.sheddable_max_wait.count(), 0.5);
  EXPECT_EQ(a.tenant_tokens_per_minute, 90000);
  auto defaults = ParseDaemonConfigText("", "test");
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->gateway.admission, gateway::AdmissionConfig{});
}

// `gateway.router` goes through the reader the simulator's `router` uses
// (config/router_config.h): the mapping and the bare kind both work, and the default is the
// simulator's (least outstanding, no slow start; docs/gateway.md, "Routing").
TEST(DaemonConfigTest, ReadsTheGatewayRouterInEitherForm) {
  auto defaults = ParseDaemonConfigText("", "test");
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->gateway.picker, route::PickerSpec{});
  EXPECT_EQ(defaults->gateway.picker.slow_start_seconds, 0);
  auto mapped = ParseDaemonConfigText(
      "gateway:\n  router: {kind: least_outstanding, slow_start_seconds: 10,\n"
      "           prefix_affinity: true, affinity_load_factor: 1.5}\n",
      "test");
  ASSERT_TRUE(mapped.has_value()) << mapped.error().ToString();
  EXPECT_EQ(mapped->gateway.picker,
            (route::PickerSpec{
                .slow_start_seconds = 10, .prefix_affinity = true, .affinity_load_factor = 1.5}));
  auto bare = ParseDaemonConfigText("gateway: {router: round_robin}\n", "test");
  ASSERT_TRUE(bare.has_value()) << bare.error().ToString();
  EXPECT_EQ(bare->gateway.picker, route::PickerSpec{.kind = route::PickerKind::kRoundRobin});
}

// The live gateway routes on prefix caches too (docs/gateway.md, "Prefix cache").
TEST(DaemonConfigTest, ReadsTheGatewayPrefixCacheRouter) {
  auto config = ParseDaemonConfigText(
      "gateway:\n  router: {kind: prefix_cache, prefix_index: precise}\n"
      "  prefix_cache: {block_tokens: 32, capacity_blocks: 5000, ttl_seconds: 60,\n"
      "                 kv_events_topic: kv}\n",
      "test");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->gateway.picker,
            (route::PickerSpec{.kind = route::PickerKind::kPrefixCache,
                               .prefix_index = route::PrefixIndexMode::kPrecise}));
  EXPECT_EQ(config->gateway.prefix_cache,
            (gateway::PrefixCacheConfig{32, 5000, Seconds{60}, "kv"}));
  auto zero = ParseDaemonConfigText("gateway:\n  prefix_cache: {block_tokens: 0}\n", "test");
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().ToString(),
            "gateway.prefix_cache.block_tokens: expected an integer in [1, 65536], got 0 (line 2)");
}

TEST(DaemonConfigTest, RetentionKeepsAWeekAndAGibibyteWhenAbsentAndZeroMeansNoSizeCap) {
  for (const char* yaml : {"", "retention:", "retention: {}"}) {
    auto config = ParseDaemonConfigText(yaml, "test");
    ASSERT_TRUE(config) << yaml << ": " << ErrorText(config);
    EXPECT_EQ(config->retention.max_age, Seconds{7 * 86400}) << yaml;
    EXPECT_EQ(config->retention.max_bytes, int64_t{1} << 30) << yaml;
  }
  auto uncapped = ParseDaemonConfigText("retention: {max_megabytes: 0}", "test");
  ASSERT_TRUE(uncapped) << ErrorText(uncapped);
  EXPECT_EQ(uncapped->retention.max_bytes, 0);
}

TEST(DaemonConfigTest, ScrapeSectionDefaultsToHalfTheIntervalAndThreeTicks) {
  for (const char* yaml : {"", "scrape:", "scrape: {}"}) {
    auto config = ParseDaemonConfigText(yaml, "test");
    ASSERT_TRUE(config) << yaml << ": " << ErrorText(config);
    EXPECT_EQ(config->scrape.cutoff_ratio, 0.5) << yaml;
    EXPECT_EQ(config->scrape.stale_after_ticks, 3) << yaml;
    EXPECT_EQ(config->scrape.view_only_interval, Seconds{5}) << yaml;
  }
}

TEST(DaemonConfigTest, TasksSectionKeepsTheTaskManagerDefaultsWhenAbsent) {
  for (const char* yaml : {"", "tasks:", "tasks: {}"}) {
    auto config = ParseDaemonConfigText(yaml, "test");
    ASSERT_TRUE(config) << yaml << ": " << ErrorText(config);
    EXPECT_EQ(config->tasks.recheck_interval, Seconds{2}) << yaml;
    EXPECT_EQ(config->tasks.max_head_skips, 3) << yaml;
    EXPECT_FALSE(config->tasks.stop_grace.has_value()) << yaml;
  }
}

TEST(DaemonConfigTest, TasksSectionReadsEveryField) {
  auto config = ParseDaemonConfigText(R"(
tasks:
  recheck_interval_seconds: 0.5
  max_head_skips: 0
  stop_grace_seconds: 0
)",
                                      "test");
  ASSERT_TRUE(config) << ErrorText(config);
  EXPECT_EQ(config->tasks.recheck_interval, Seconds{0.5});
  EXPECT_EQ(config->tasks.max_head_skips, 0);  // strict FIFO
  ASSERT_TRUE(config->tasks.stop_grace.has_value());
  EXPECT_EQ(*config->tasks.stop_grace, Seconds{0});  // SIGKILL at once
}

TEST(DaemonConfigTest, ListenAcceptsBracketedIpv6) {
  auto config = ParseDaemonConfigText("api: {listen: \"[::1]:9000\"}", "test");
  ASSERT_TRUE(config) << ErrorText(config);
  EXPECT_EQ(config->api.host, "::1");
  EXPECT_EQ(config->api.port, 9000);
}

struct BadConfigCase {
  const char* name;
  const char* yaml;
  const char* want;  // substring of "field: message"
};

void PrintTo(const BadConfigCase& c, std::ostream* os) { *os << c.name; }

class BadDaemonConfigTest : public ::testing::TestWithParam<BadConfigCase> {};

TEST_P(BadDaemonConfigTest, NamesFieldAndLine) {
  auto config = ParseDaemonConfigText(GetParam().yaml, "test");
  ASSERT_FALSE(config) << GetParam().name;
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(config.error().ToString(), HasSubstr(GetParam().want));
}

// Services start on line 2 ("services:") with the first entry's `name` on line 3.
const BadConfigCase kBadConfigs[] = {
    {"UnknownTopKey", "gpus: {}", "gpus: unknown field; accepted fields: gpu, api"},
    {"UnknownGpuKey", "gpu: {backnd: nvml}", "gpu.backnd: unknown field"},
    {"BadBackend", "gpu: {backend: cuda}",
     "gpu.backend: expected one of auto, nvml, "
     "nvidia-smi, simulated, got 'cuda' (line 1)"},
    {"NegativeTtl", "gpu: {cache_ttl_seconds: -1}",
     "gpu.cache_ttl_seconds: expected a finite number of seconds >= 0"},
    {"ZeroSampling", "gpu: {sample_interval_seconds: 0}", "gpu.sample_interval_seconds"},
    {"ListenNoPort", "api: {listen: localhost}", "api.listen: expected host:port"},
    {"ListenBigPort", "api: {listen: \"h:70000\"}", "api.listen: expected host:port"},
    {"ListenNoHost", "api: {listen: \":80\"}", "api.listen"},
    {"ListenJunkPort", "api: {listen: \"h:80x\"}", "api.listen"},
    {"TokenAndFile", "api: {token: a, token_file: /etc/passwd}",
     "api.token_file: set either api.token or api.token_file, not both"},
    {"MissingTokenFile", "api: {token_file: /nonexistent/gpuscale-token}",
     "api.token_file: cannot read token file '/nonexistent/gpuscale-token'"},
    {"ZeroStreams", "api: {max_event_streams: 0}", "api.max_event_streams"},
    {"ZeroLoop", "loop_interval_seconds: 0",
     "loop_interval_seconds: expected a finite number of seconds > 0"},
    {"LoopInfinite", "loop_interval_seconds: .inf", "loop_interval_seconds: expected a finite"},
    {"LoopNotNumber", "loop_interval_seconds: soon", "loop_interval_seconds: expected a number"},
    {"HttpsPrometheus", "prometheus: {url: \"https://p:9090\"}",
     "prometheus.url: expected an http://"},
    {"PrometheusNoUrl", "prometheus: {timeout_seconds: 1}", "prometheus.url: required field"},
    {"CutoffZero", "scrape:\n  cutoff_ratio: 0",
     "scrape.cutoff_ratio: expected a share of the loop interval in (0, 1], got 0 (line 2)"},
    {"CutoffOverOne", "scrape: {cutoff_ratio: 1.5}", "scrape.cutoff_ratio: expected a share"},
    {"CutoffNaN", "scrape: {cutoff_ratio: .nan}", "scrape.cutoff_ratio: expected a number"},
    {"StaleZero", "scrape: {stale_after_ticks: 0}",
     "scrape.stale_after_ticks: expected an integer >= 1, got 0"},
    {"ScrapeUnknownKey", "scrape: {timeout_seconds: 1}",
     "scrape.timeout_seconds: unknown field; accepted fields: cutoff_ratio, stale_after_ticks, "
     "view_only_interval_seconds"},
    {"ViewOnlyZero", "scrape: {view_only_interval_seconds: 0}",
     "scrape.view_only_interval_seconds: expected a finite number of seconds > 0, got 0"},
    {"ViewOnlyHours", "scrape:\n  view_only_interval_seconds: 7200",
     "scrape.view_only_interval_seconds: expected at most 3600 seconds, got 7200 (line 2)"},
    {"RetentionNotMap", "retention: 7", "retention: expected a mapping"},
    {"RetentionUnknownKey", "retention: {max_age: 7}",
     "retention.max_age: unknown field; accepted fields: max_age_days, max_megabytes"},
    {"RetentionZeroDays", "retention:\n  max_age_days: 0",
     "retention.max_age_days: expected days in (0, 3650], got 0 (line 2)"},
    {"RetentionCenturies", "retention: {max_age_days: 36500}",
     "retention.max_age_days: expected days in (0, 3650], got 36500"},
    {"RetentionNegativeSize", "retention: {max_megabytes: -1}",
     "retention.max_megabytes: expected an integer >= 0, got -1"},
    {"RetentionSizeWithUnit", "retention: {max_megabytes: 1GB}",
     "retention.max_megabytes: expected an integer"},
    {"TasksNotMap", "tasks: 5", "tasks: expected a mapping"},
    {"TasksUnknownKey", "tasks: {recheck_seconds: 1}",
     "tasks.recheck_seconds: unknown field; accepted fields: recheck_interval_seconds, "
     "max_head_skips, stop_grace_seconds"},
    {"RecheckZero", "tasks:\n  recheck_interval_seconds: 0",
     "tasks.recheck_interval_seconds: expected a finite number of seconds > 0, got 0 (line 2)"},
    {"RecheckTooLong", "tasks:\n  recheck_interval_seconds: 7200",
     "tasks.recheck_interval_seconds: expected at most 3600 seconds, got 7200 (line 2)"},
    {"RecheckWord", "tasks: {recheck_interval_seconds: often}",
     "tasks.recheck_interval_seconds: expected a number"},
    {"HeadSkipsNegative", "tasks:\n  max_head_skips: -1",
     "tasks.max_head_skips: expected an integer >= 0, got -1 (line 2)"},
    {"HeadSkipsFraction", "tasks: {max_head_skips: 1.5}",
     "tasks.max_head_skips: expected an integer"},
    {"StopGraceNegative", "tasks:\n  stop_grace_seconds: -1",
     "tasks.stop_grace_seconds: expected a finite number of seconds >= 0, got -1 (line 2)"},
    {"StopGraceInfinite", "tasks: {stop_grace_seconds: .inf}",
     "tasks.stop_grace_seconds: expected a finite number"},
    {"StopGraceTooLong", "tasks: {stop_grace_seconds: 3601}",
     "tasks.stop_grace_seconds: expected at most 3600 seconds, got 3601"},
    {"PriceWord", "gpu:\n  prices:\n    H100-80GB: cheap",
     "gpu.prices.H100-80GB: expected a number, got 'cheap' (line 3)"},
    {"PriceNegative", "gpu:\n  prices: {A100-80GB: -1}",
     "gpu.prices.A100-80GB: expected a value in [0, 1000000], got -1 (line 2)"},
    {"GpuTypeBlank", "services:\n  - {name: chat, command: [x],\n     gpu_type: \"A100 80GB\"}",
     "services[0].gpu_type: expected a GPU type key such as H100-80GB (`gpuscale gpus` shows "
     "each GPU's type), got 'A100 80GB' (line 3)"},
    {"GpuTypeFleet",
     "services:\n  - {name: f, engine: fleet, fleet: {url: \"http://h:1\"}, command: [x],\n"
     "     gpus_per_replica: 0, gpu_type: A100-80GB}",
     "services[0].gpu_type: places the replicas of a local, non-disaggregated service only"},
    {"GpuTypeNoGpus",
     "services:\n  - {name: chat, command: [x], gpus_per_replica: 0,\n"
     "     gpu_type: A100-80GB}",
     "services[0].gpu_type: a service with gpus_per_replica: 0 holds no GPU (line 3)"},
    {"ServicesNotList", "services: {chat: {}}", "services: expected a list"},
    {"ServiceNameBad", "services:\n  - {name: Chat, command: [x]}",
     "services[0].name: expected 1-63 characters [a-z0-9-]"},
    {"ServiceNameDash", "services:\n  - {name: -chat, command: [x]}", "services[0].name"},
    {"ServiceNameLong",
     "services:\n  - {name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, "
     "command: [x]}",
     "services[0].name"},
    {"ServiceNoCommand", "services:\n  - {name: chat}", "services[0].command: required field"},
    {"CommandString", "services:\n  - {name: chat, command: \"vllm serve\"}",
     "services[0].command: expected a list of arguments"},
    {"CommandEmpty", "services:\n  - {name: chat, command: []}",
     "services[0].command: expected a "
     "command"},
    {"CommandNested", "services:\n  - {name: chat, command: [a, [b]]}",
     "services[0].command[1]: expected a (UTF-8) string"},
    {"CommandTypo", "services:\n  - {name: chat, command: [a, \"{prot}\"]}",
     "services[0].command[1]: unknown placeholder '{prot}'"},
    {"CommandInvalidUtf8", "services:\n  - {name: chat, command: [a, \"b\xff\"]}",
     "services[0].command[1]: expected a (UTF-8) string"},
    {"EnvInvalidUtf8", "services:\n  - {name: chat, command: [x], env: {A: \"\xc3\x28\"}}",
     "services[0].env.A: expected a (UTF-8) string value"},
    {"EnvList", "services:\n  - {name: chat, command: [x], env: [A]}",
     "services[0].env: expected a mapping"},
    {"EnvBadName", "services:\n  - {name: chat, command: [x], env: {\"A-B\": x}}",
     "services[0].env.A-B: expected an environment variable name"},
    {"EnvNested", "services:\n  - {name: chat, command: [x], env: {A: [x]}}",
     "services[0].env.A: expected a (UTF-8) string value"},
    {"GpusWord", "services:\n  - name: chat\n    command: [x]\n    gpus_per_replica: two",
     "services[0].gpus_per_replica: expected an integer, got 'two' (line 4)"},
    {"GpusNegative", "services:\n  - {name: chat, command: [x], gpus_per_replica: -1}",
     "services[0].gpus_per_replica: expected an integer >= 0, got -1"},
    {"MemoryNegative", "services:\n  - {name: chat, command: [x], min_memory_free_mb: -5}",
     "services[0].min_memory_free_mb: expected an integer >= 0"},
    {"ReadinessRelative", "services:\n  - {name: chat, command: [x], readiness_path: health}",
     "services[0].readiness_path: expected an HTTP path starting with '/'"},
    {"MetricsEmpty", "services:\n  - {name: chat, command: [x], metrics_path: \"\"}",
     "services[0].metrics_path"},
    {"StartupZero", "services:\n  - {name: chat, command: [x], startup_timeout_seconds: 0}",
     "services[0].startup_timeout_seconds: expected a finite number of seconds > 0"},
    {"DrainNegative", "services:\n  - {name: chat, command: [x], drain_timeout_seconds: -1}",
     "services[0].drain_timeout_seconds: expected a finite number of seconds >= 0"},
    {"SloList", "services:\n  - {name: chat, command: [x], slo: [1, 0.05]}",
     "services[0].slo: expected a mapping {ttft_seconds: 1, tpot_seconds: 0.05}"},
    {"SloUnknownKey", "services:\n  - {name: chat, command: [x], slo: {ttft: 1}}",
     "services[0].slo.ttft: unknown field"},
    {"SloWord", "services:\n  - name: chat\n    command: [x]\n    slo:\n      ttft_seconds: fast",
     "services[0].slo.ttft_seconds: expected a number, got 'fast' (line 5)"},
    {"SloZero", "services:\n  - {name: chat, command: [x], slo: {tpot_seconds: 0}}",
     "services[0].slo.tpot_seconds: expected seconds in (0, 3600], got 0"},
    {"SloNan", "services:\n  - {name: chat, command: [x], slo: {ttft_seconds: .nan}}",
     "services[0].slo.ttft_seconds: expected a number, got '.nan' (line 2)"},
    {"SloSourceUnknown", "services:\n  - {name: chat, command: [x], slo: {source: clients}}",
     "services[0].slo.source: expected auto, gateway or replicas, got 'clients'"},
    {"SloHours", "services:\n  - {name: chat, command: [x], slo: {ttft_seconds: 7200}}",
     "services[0].slo.ttft_seconds: expected seconds in (0, 3600], got 7200"},
    {"GatewayHealthPathRelative", "gateway: {health_check_path: health}",
     "gateway.health_check_path: expected a path such as /health, got 'health'"},
    {"GatewayHealthIntervalNegative", "gateway: {health_check_interval_seconds: -1}",
     "gateway.health_check_interval_seconds: expected a finite number of seconds >= 0"},
    {"GatewayHealthFailuresZero", "gateway: {health_check_failures: 0}",
     "gateway.health_check_failures"},
    {"GatewayAdmissionPriorityUnknown", "gateway:\n  admission:\n    default_priority: high",
     "gateway.admission.default_priority: expected critical, standard or sheddable, got 'high' "
     "(line 3)"},
    {"GatewayAdmissionModelPriorityUnknown",
     "gateway:\n  admission:\n    model_priority: {batch: low}",
     "gateway.admission.model_priority.batch: expected critical, standard or sheddable, got "
     "'low' (line 3)"},
    {"GatewayAdmissionLimitNegative", "gateway: {admission: {max_in_flight_per_replica: -1}}",
     "gateway.admission.max_in_flight_per_replica: expected 0 (no limit) or more"},
    {"GatewayAdmissionHeaderWithSpace", "gateway: {admission: {tenant_header: \"x tenant\"}}",
     "gateway.admission.tenant_header: expected a header name, got 'x tenant'"},
    {"GatewayAdmissionTokensNegative", "gateway: {admission: {tenant_tokens_per_minute: -5}}",
     "gateway.admission.tenant_tokens_per_minute: expected 0 (no limit) or a positive number"},
    {"GatewayAdmissionUnknownKey", "gateway: {admission: {priority: critical}}",
     "gateway.admission.priority: unknown field"},
    // The router's messages are config/router_config.h's and route::CheckPickerSpec's.
    {"GatewayRouterUnknownKind", "gateway:\n  router: {kind: random}",
     "gateway.router.kind: expected one of least_outstanding, round_robin, prefix_cache, got "
     "'random' "
     "(line 2)"},
    {"GatewayRouterUnknownKey", "gateway:\n  router:\n    slowstart: 3",
     "gateway.router.slowstart: unknown field; accepted fields: kind, slow_start_seconds, "
     "prefix_affinity, affinity_load_factor, prefix_index (line 3)"},
    {"GatewayRouterList", "gateway: {router: [round_robin]}",
     "gateway.router: expected one of least_outstanding, round_robin, prefix_cache, or a mapping"},
    {"GatewayRouterSlowStartNegative", "gateway:\n  router: {slow_start_seconds: -1}",
     "gateway.router.slow_start_seconds: expected a finite number of seconds >= 0, got -1 "
     "(line 2)"},
    {"GatewayRouterRoundRobinSlowStart",
     "gateway:\n  router:\n    kind: round_robin\n    slow_start_seconds: 30",
     "gateway.router.slow_start_seconds: applies to least_outstanding only (line 4)"},
    {"GatewayRouterRoundRobinAffinity",
     "gateway:\n  router:\n    kind: round_robin\n    prefix_affinity: true",
     "gateway.router.prefix_affinity: applies to least_outstanding only (line 4)"},
    {"GatewayRouterLoadFactorOne", "gateway:\n  router: {affinity_load_factor: 1}",
     "gateway.router.affinity_load_factor: expected a factor in (1, 100], got 1 (line 2)"},
    {"ApiPerClientNegative", "api: {max_connections_per_client: -1}",
     "api.max_connections_per_client"},
    {"MinNegative", "services:\n  - {name: chat, command: [x], min_replicas: -1}",
     "services[0].min_replicas: must be >= 0"},
    {"MaxBelowMin", "services:\n  - {name: chat, command: [x], min_replicas: 3, max_replicas: 2}",
     "services[0].max_replicas: must be >= 1 and >= min_replicas (3), got 2"},
    {"MaxZero", "services:\n  - {name: chat, command: [x], min_replicas: 0, max_replicas: 0}",
     "services[0].max_replicas"},
    {"MaxHuge", "services:\n  - {name: chat, command: [x], max_replicas: 2147483647}",
     "services[0].max_replicas: must be <= 100000, got 2147483647"},
    {"UnknownServiceKey", "services:\n  - {name: chat, command: [x], replicas: 2}",
     "services[0].replicas: unknown field"},
    {"Duplicate",
     "services:\n  - name: chat\n    command: [x]\n  - name: other\n    command: [x]\n"
     "  - name: chat\n    command: [y]",
     "services[2].name: duplicate service 'chat' (first at line 2)"},
    {"PolicyNotMap", "services:\n  - {name: chat, command: [x], policy: target}",
     "services[0].policy: expected a mapping"},
    {"PolicyBadFamily", "services:\n  - {name: chat, command: [x], policy: {family: magic}}",
     "services[0].policy.family: unknown policy family 'magic'"},
    {"PolicyBoundsDiffer",
     "services:\n  - name: chat\n    command: [x]\n    min_replicas: 1\n    max_replicas: 4\n"
     "    policy: {family: target, min_replicas: 2, target: {metrics: [{name: m, "
     "average_value: 5}]}}",
     "services[0].policy.min_replicas: is 2 but the service's services[0].min_replicas is 1"},
    {"PolicyNestedField",
     "services:\n  - name: chat\n    command: [x]\n    max_replicas: 4\n    policy:\n"
     "      family: target\n      target:\n        metrics:\n          - name: m\n"
     "            average_value: -5\n",
     "services[0].policy.target.metrics[0].average_value: must be > 0, got -5 (line 10)"},
    {"PolicyUnknownKey",
     "services:\n  - name: chat\n    command: [x]\n    policy: {family: target, tagret: {}}",
     "services[0].policy.tagret: unknown field"},
    {"YamlKeyIsMap", "services:\n  - {name: chat, command: [x], env: {{a: 1}: b}}", "services[0]"},
    {"UnknownEngine", "services:\n  - name: chat\n    command: [x]\n    engine: pbs",
     "services[0].engine: expected local, slurm or fleet, got 'pbs' (line 4)"},
    {"FleetNeedsItsUrl",
     "services:\n  - name: f\n    command: [x]\n    engine: fleet\n"
     "    gpus_per_replica: 0",
     "services[0].fleet: engine fleet needs `fleet: {url: http://host:port}`"},
    {"FleetBadUrl",
     "services:\n  - name: f\n    command: [x]\n    engine: fleet\n    gpus_per_replica: 0\n"
     "    fleet: {url: \"127.0.0.1:9300\"}",
     "services[0].fleet.url: expected http://host:port, got '127.0.0.1:9300'"},
    {"FleetHoldsNoGpus",
     "services:\n  - name: f\n    command: [x]\n    engine: fleet\n"
     "    fleet: {url: \"http://127.0.0.1:9300\"}",
     "services[0].gpus_per_replica: fleet replicas are emulated and hold no GPUs"},
    {"FleetBlockOnLocal", "services:\n  - name: f\n    command: [x]\n    fleet: {url: x}",
     "services[0].fleet: a fleet block needs `engine: fleet` (the engine is local)"},
    {"SlurmBlockOnLocal", "services:\n  - name: chat\n    command: [x]\n    slurm: {}",
     "services[0].slurm: a slurm block needs `engine: slurm`"},
    {"SlurmUnknownKey",
     "services:\n  - name: chat\n    command: [x]\n    engine: slurm\n    slurm: {partion: gpu}",
     "services[0].slurm.partion: unknown field"},
    {"SlurmBadTransport",
     "services:\n  - name: chat\n    command: [x]\n    engine: slurm\n    slurm:\n"
     "      transport: ssh\n",
     "services[0].slurm.transport: expected cli or rest, got 'ssh' (line 6)"},
    {"SlurmRestNeedsUrl",
     "services:\n  - name: chat\n    command: [x]\n    engine: slurm\n"
     "    slurm: {transport: rest}",
     "services[0].slurm.url: transport rest needs slurmrestd's url"},
    {"SlurmSocketUnsupported",
     "services:\n  - name: chat\n    command: [x]\n    engine: slurm\n"
     "    slurm: {transport: rest, socket: /run/slurmrestd.sock}",
     "services[0].slurm.socket: slurmrestd over a unix socket is not supported"},
    {"SlurmRestNoSbatchArgs",
     "services:\n  - name: chat\n    command: [x]\n    engine: slurm\n"
     "    slurm: {transport: rest, url: \"http://h:6820\", extra_sbatch_args: [--qos=a]}",
     "services[0].slurm.extra_sbatch_args: only the cli transport"},
    {"SlurmCliNoToken",
     "services:\n  - name: chat\n    command: [x]\n    engine: slurm\n"
     "    slurm: {token: abc}",
     "services[0].slurm.token: only used by `transport: rest`"},
    {"SlurmBadPortRange",
     "services:\n  - name: chat\n    command: [x]\n    engine: slurm\n"
     "    slurm:\n      port_range: [30000, 20000]\n",
     "services[0].slurm.port_range: expected [start, end] with 1 <= start <= end <= 65535"},
    {"SlurmNegativeTime",
     "services:\n  - name: chat\n    command: [x]\n    engine: slurm\n"
     "    slurm: {time_limit_minutes: -5}",
     "services[0].slurm.time_limit_minutes: expected an integer >= 0, got -5"},
};

INSTANTIATE_TEST_SUITE_P(Cases, BadDaemonConfigTest, ::testing::ValuesIn(kBadConfigs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(DaemonConfigTest, PolicyGetsServiceBoundsAndKeepsFamily) {
  auto s = ParseServiceConfigText(R"(
name: chat
command: [x, "{port}"]
min_replicas: 2
max_replicas: 6
policy:
  family: target
  target:
    metrics: [{name: vllm:num_requests_waiting, average_value: 5}]
)",
                                  "test");
  ASSERT_TRUE(s) << ErrorText(s);
  EXPECT_EQ(s->policy_family, "target");
  auto node = yaml::ParseYaml(s->policy_yaml, "policy_yaml");
  ASSERT_TRUE(node);
  EXPECT_EQ((*node)["min_replicas"].as<int>(), 2);
  EXPECT_EQ((*node)["max_replicas"].as<int>(), 6);
  auto spec = config::ParsePolicy(*node);
  ASSERT_TRUE(spec) << ErrorText(spec);
}

TEST(DaemonConfigTest, BoundsSetOnlyInPolicyBecomeTheServices) {
  auto s = ParseServiceConfigText(R"(
name: chat
command: [x]
policy: {family: target, min_replicas: 0, max_replicas: 3,
         target: {metrics: [{name: m, average_value: 5}]}}
)",
                                  "test");
  ASSERT_TRUE(s) << ErrorText(s);
  EXPECT_EQ(s->min_replicas, 0);
  EXPECT_EQ(s->max_replicas, 3);
}

TEST(DaemonConfigTest, ApiBodyErrorsHaveNoPrefix) {
  auto s = ParseServiceConfigText(
      "{\"name\": \"chat\", \"command\": [\"x\"], "
      "\"gpus_per_replica\": -2}",
      "body");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().field, "gpus_per_replica");
  auto p = ParseServiceConfigText(
      "{\"name\": \"chat\", \"command\": [\"x\"], \"max_replicas\": 2, "
      "\"policy\": {\"family\": \"target\", \"target\": {\"metrics\": "
      "[{\"name\": \"m\", \"average_value\": 0}]}}}",
      "body");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().field, "policy.target.metrics[0].average_value");
}

TEST(DaemonConfigTest, EnvKeepsFileOrderAndStringifiesScalars) {
  auto s = ParseServiceConfigText(R"(
name: chat
command: [x]
env: {Z: last, A: 1, EMPTY: ""}
)",
                                  "test");
  ASSERT_TRUE(s) << ErrorText(s);
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(s->env, (Env{{"Z", "last"}, {"A", "1"}, {"EMPTY", ""}}));
}

TEST(DaemonConfigTest, FleetEngineIsReadAndRoundTrips) {
  Result<ServiceConfig> s = ParseServiceConfigText(
      "name: f\nengine: fleet\nfleet: {url: \"http://127.0.0.1:9300\"}\ncommand: [unused]\n"
      "gpus_per_replica: 0\n",
      "test");
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_EQ(s->engine, "fleet");
  EXPECT_EQ(s->fleet_url, "http://127.0.0.1:9300");
  Result<ServiceConfig> again = ParseServiceConfigText(ServiceConfigToYaml(*s), "canonical");
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(*again, *s);
}

TEST(DaemonConfigTest, GpuTypeIsReadAndRoundTripsAndIsOmittedWhenUnset) {
  Result<ServiceConfig> s =
      ParseServiceConfigText("name: a\ncommand: [x]\ngpu_type: A100-80GB\n", "test");
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_EQ(s->gpu_type, "A100-80GB");
  Result<ServiceConfig> again = ParseServiceConfigText(ServiceConfigToYaml(*s), "canonical");
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(again->gpu_type, "A100-80GB");
  EXPECT_EQ(*again, *s);
  s->gpu_type.clear();
  EXPECT_EQ(ServiceConfigToYaml(*s).find("gpu_type"), std::string::npos);
}

TEST(DaemonConfigTest, ServiceRoundTripsThroughCanonicalYaml) {
  auto first = ParseServiceConfigText(R"(
name: chat-2
command: [vllm, serve, "Qwen/Qwen2.5-7B", --port, "{port}", --gpus, "{gpus}",
          "{\"temperature\": 0}", "a b; c", "true", "~", "", "123"]
env: {HF_HOME: /data/hf, FLAG: "yes", NUM: "007", NULLISH: "null", GREETING: "héllo 世界 \x01"}
gpus_per_replica: 2
min_memory_free_mb: 20000
readiness_path: /v1/models
metrics_path: /m
startup_timeout_seconds: 12.5
drain_timeout_seconds: 0
min_replicas: 0
max_replicas: 5
slo: {ttft_seconds: 2.5, tpot_seconds: 0.1}
policy:
  family: target
  target:
    tolerance: 0.2
    metrics:
      - name: "vllm:num_requests_waiting"
        type: AverageValue
        average_value: 5
    behavior: {scale_down: {stabilization_window_seconds: 60}}
)",
                                      "test");
  ASSERT_TRUE(first) << ErrorText(first);
  EXPECT_EQ(first->slo, (SloThresholds{.ttft_seconds = 2.5, .tpot_seconds = 0.1}));
  const std::string text = ServiceConfigToYaml(*first);
  EXPECT_NE(text.find("slo: {ttft_seconds: 2.5, tpot_seconds: 0.1}"), std::string::npos) << text;
  auto second = ParseServiceConfigText(text, "canonical");
  ASSERT_TRUE(second) << ErrorText(second) << "\n" << text;
  EXPECT_EQ(*second, *first) << text;
  EXPECT_EQ(ServiceConfigToYaml(*second), text);
}

TEST(DaemonConfigTest, SlurmServiceReadsEveryFieldAndRoundTrips) {
  auto first = ParseServiceConfigText(R"(
name: chat
engine: slurm
command: [vllm, serve, m, --port, "{port}"]
slurm:
  transport: rest
  url: http://slurmrestd:6820
  user: alice
  token_file: /etc/gpuscale/slurm.jwt
  partition: gpu
  gres_type: a100
  account: inference
  time_limit_minutes: 720
  port_range: [21000, 21099]
  timeout_seconds: 5
)",
                                      "test");
  ASSERT_TRUE(first) << ErrorText(first);
  EXPECT_EQ(first->engine, "slurm");
  const SlurmServiceConfig& c = first->slurm;
  EXPECT_EQ(c.transport, "rest");
  EXPECT_EQ(c.url, "http://slurmrestd:6820");
  EXPECT_EQ(c.user, "alice");
  EXPECT_EQ(c.token_file, "/etc/gpuscale/slurm.jwt");
  EXPECT_EQ(c.partition, "gpu");
  EXPECT_EQ(c.gres_type, "a100");
  EXPECT_EQ(c.account, "inference");
  EXPECT_EQ(c.time_limit_minutes, 720);
  EXPECT_EQ(c.port_range_start, 21000);
  EXPECT_EQ(c.port_range_end, 21099);
  EXPECT_EQ(c.timeout, Seconds{5});
  const std::string text = ServiceConfigToYaml(*first);
  auto second = ParseServiceConfigText(text, "canonical");
  ASSERT_TRUE(second) << ErrorText(second) << "\n" << text;
  EXPECT_EQ(*second, *first) << text;
}

TEST(DaemonConfigTest, SlurmEngineDefaultsToTheCliTransport) {
  auto s = ParseServiceConfigText(
      "name: chat\nengine: slurm\ncommand: [x]\nslurm: {extra_sbatch_args: [--qos=hi]}\n", "t");
  ASSERT_TRUE(s) << ErrorText(s);
  EXPECT_EQ(s->slurm.transport, "cli");
  EXPECT_EQ(s->slurm.extra_sbatch_args, std::vector<std::string>{"--qos=hi"});
  EXPECT_EQ(s->slurm.port_range_start, 20000);
  auto local = ParseServiceConfigText(kMinimalService, "t");
  ASSERT_TRUE(local);
  EXPECT_EQ(local->engine, "local");
  EXPECT_EQ(ServiceConfigToYaml(*local).find("engine"), std::string::npos);
}

// readiness_path: "" = ready once running (no health endpoint); a null value keeps the
// default, and the canonical YAML of either parses back to the same service.
TEST(DaemonConfigTest, EmptyReadinessPathMeansReadyOnceRunning) {
  struct Case {
    std::string yaml, want;
  };
  for (const Case& c :
       {Case{"name: chat\ncommand: [x]\nreadiness_path: \"\"\n", ""},
        Case{"{\"name\": \"chat\", \"command\": [\"x\"], \"readiness_path\": \"\"}", ""},
        Case{"name: chat\ncommand: [x]\nreadiness_path:\n", "/health"},
        Case{"name: chat\ncommand: [x]\n", "/health"}}) {
    auto first = ParseServiceConfigText(c.yaml, "test");
    ASSERT_TRUE(first) << ErrorText(first) << "\n" << c.yaml;
    EXPECT_EQ(first->readiness_path, c.want) << c.yaml;
    auto second = ParseServiceConfigText(ServiceConfigToYaml(*first), "canonical");
    ASSERT_TRUE(second) << ErrorText(second) << "\n" << ServiceConfigToYaml(*first);
    EXPECT_EQ(*second, *first) << c.yaml;
  }
}

TEST(DaemonConfigTest, ServiceWithoutPolicyRoundTrips) {
  auto first = ParseServiceConfigText(kMinimalService, "test");
  ASSERT_TRUE(first);
  auto second = ParseServiceConfigText(ServiceConfigToYaml(*first), "canonical");
  ASSERT_TRUE(second) << ErrorText(second);
  EXPECT_EQ(*second, *first);
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuscale-cfg-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(DaemonConfigTest, TokenFileFirstLineIsTrimmed) {
  TempDir dir;
  const std::string file = dir.path() + "/token";
  std::ofstream(file) << "  s3cret \t\r\nsecond line\n";
  auto config = ParseDaemonConfigText("api: {token_file: " + file + "}", "test");
  ASSERT_TRUE(config) << ErrorText(config);
  EXPECT_EQ(config->api.token, "s3cret");
}

TEST(DaemonConfigTest, EmptyTokenFileIsAnError) {
  TempDir dir;
  const std::string file = dir.path() + "/token";
  std::ofstream(file) << "   \n";
  auto config = ParseDaemonConfigText("api: {token_file: " + file + "}", "test");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().field, "api.token_file");
}

TEST(DaemonConfigTest, AnEmptyConfigFileIsAnErrorNotEveryDefault) {
  char pattern[] = "/tmp/gpuscale-empty-config-XXXXXX";
  const int fd = mkstemp(pattern);
  ASSERT_GE(fd, 0);
  close(fd);
  auto config = LoadDaemonConfig(pattern);
  std::remove(pattern);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(config.error().message.find("is empty"), std::string::npos)
      << config.error().ToString();
}

// A config file's services may leave the policy out (the store's rules then apply): the
// profile-path pass that runs on files must not trip over the missing key.
TEST(DaemonConfigTest, LoadsAFileWhoseServiceHasNoPolicy) {
  char pattern[] = "/tmp/gpuscale-no-policy-XXXXXX";
  const int fd = mkstemp(pattern);
  ASSERT_GE(fd, 0);
  const std::string text =
      "services:\n  - name: x\n    command: [sleep, \"1\"]\n  - name: y\n"
      "    command: [sleep, \"1\"]\n    policy: {family: slo}\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  auto config = LoadDaemonConfig(pattern);
  std::remove(pattern);
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->services.size(), 2u);
}

TEST(DaemonConfigTest, LoadMissingFileIsNotFound) {
  auto config = LoadDaemonConfig("/nonexistent/gpuscale.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ErrorCode::kNotFound);
}

TEST(DaemonConfigTest, StateDirDefaultsFollowXdgThenHome) {
  {
    ScopedEnv xdg("XDG_STATE_HOME", "/xdg/state");
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(ParseDaemonConfigText("{}", "t")->state_dir, "/xdg/state/gpuscale");
    EXPECT_EQ(ParseDaemonConfigText("state_dir: ~/s", "t")->state_dir, "/home/u/s");
  }
  ScopedEnv xdg("XDG_STATE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(ParseDaemonConfigText("{}", "t")->state_dir, "/home/u/.local/state/gpuscale");
}

TEST(DaemonConfigTest, EmbeddedDefaultPassesItsOwnValidation) {
  const DaemonConfig config = EmbeddedDefaultConfig("/usr/bin/gpuscale");
  EXPECT_EQ(config.gpu.backend.kind, "simulated");
  EXPECT_EQ(config.gpu.backend.inventory_path, "");
  EXPECT_EQ(config.api.host, "127.0.0.1");
  EXPECT_EQ(config.api.port, 8080);
  EXPECT_EQ(config.loop_interval, Seconds{15});
  ASSERT_EQ(config.services.size(), 1u);
  const ServiceConfig& demo = config.services[0];
  EXPECT_EQ(demo.name, "demo");
  ASSERT_GE(demo.command.size(), 4u);
  EXPECT_EQ(demo.command[0], "/usr/bin/gpuscale");
  EXPECT_EQ(demo.command[1], "emulate");
  EXPECT_THAT(demo.command, ::testing::Contains("{port}"));
  EXPECT_EQ(demo.gpus_per_replica, 1);
  EXPECT_EQ(demo.min_replicas, 1);
  EXPECT_EQ(demo.max_replicas, 4);
  EXPECT_EQ(demo.policy_family, "target");
  EXPECT_THAT(demo.policy_yaml, HasSubstr("vllm:num_requests_waiting"));
  auto reparsed = ParseServiceConfigText(ServiceConfigToYaml(demo), "embedded");
  ASSERT_TRUE(reparsed) << ErrorText(reparsed);
  EXPECT_EQ(*reparsed, demo);
  auto policy = yaml::ParseYaml(demo.policy_yaml, "policy");
  ASSERT_TRUE(policy);
  EXPECT_TRUE(config::ParsePolicy(*policy));
}

TEST(DaemonConfigTest, SlurmExampleFileParses) {
  auto config = LoadDaemonConfig(std::string(GPUSCALE_SOURCE_DIR) + "/examples/slurm-service.yaml");
  ASSERT_TRUE(config) << ErrorText(config);
  ASSERT_EQ(config->services.size(), 1u);
  EXPECT_EQ(config->services[0].engine, "slurm");
  EXPECT_EQ(config->services[0].slurm.extra_sbatch_args, std::vector<std::string>{"--qos=serving"});
  EXPECT_EQ(config->services[0].slurm.port_range_end, 20099);
}

TEST(DaemonConfigTest, ExampleFileParses) {
  auto config = LoadDaemonConfig(std::string(GPUSCALE_SOURCE_DIR) + "/examples/gpuscale.yaml");
  ASSERT_TRUE(config) << ErrorText(config);
  ASSERT_EQ(config->services.size(), 2u);
  EXPECT_EQ(config->services[0].policy_family, "target");
  EXPECT_THAT(config->services[0].policy_yaml, HasSubstr("vllm:num_requests_waiting"));
  EXPECT_EQ(config->services[1].policy_family, "rules");
  EXPECT_EQ(config->services[1].min_replicas, 0);
  EXPECT_EQ(config->prometheus.url, "http://127.0.0.1:9090");
}

// The model names a service's command serves, read from its argv: `gpuscale emulate`'s
// --model (or --served-model-name; default the emulator's), `vllm serve`'s
// --served-model-name values, else its model argument. Empty for other commands.
std::vector<std::string> CommandServes(const std::vector<std::string>& argv) {
  const auto named = [&](const std::string& flag) {  // the values after `flag`
    std::vector<std::string> names;
    auto it = std::find(argv.begin(), argv.end(), flag);
    if (it == argv.end()) return names;
    for (++it; it != argv.end() && !it->starts_with("--"); ++it) names.push_back(*it);
    return names;
  };
  if (argv.size() >= 2 && argv[0].ends_with("gpuscale") && argv[1] == "emulate") {
    for (const char* flag : {"--model", "--served-model-name"}) {
      if (std::vector<std::string> names = named(flag); !names.empty()) return {names[0]};
    }
    return {"gpuscale/emulated-llama-3.1-8b"};  // EmulatorOptions::model_name
  }
  if (argv.size() >= 3 && argv[0] == "vllm" && argv[1] == "serve") {
    std::vector<std::string> names = named("--served-model-name");
    return names.empty() ? std::vector<std::string>{argv[2]} : names;
  }
  return {};
}

// Issue 44: the example's `batch` routed "batch" to an emulator serving "batch-model" (and
// `chat` routed "chat" to a vLLM serving Qwen/Qwen2.5-7B-Instruct): every request through the
// gateway was a 404. Each service's gateway models must be names its command serves.
TEST(DaemonConfigTest, ExampleServicesRouteTheModelsTheirCommandsServe) {
  auto config = LoadDaemonConfig(std::string(GPUSCALE_SOURCE_DIR) + "/examples/gpuscale.yaml");
  ASSERT_TRUE(config) << ErrorText(config);
  ASSERT_FALSE(config->services.empty());
  for (const ServiceConfig& service : config->services) {
    const std::vector<std::string> serves = CommandServes(service.command);
    ASSERT_FALSE(serves.empty()) << service.name << ": which model does its command serve?";
    for (const std::string& model : service.ServedModels()) {
      EXPECT_THAT(serves, ::testing::Contains(model))
          << service.name << " routes model '" << model << "', which its command does not serve";
    }
  }
}

}  // namespace
}  // namespace gpuscale::daemon
