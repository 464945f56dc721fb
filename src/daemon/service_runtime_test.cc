// ServiceRuntime over an in-memory orchestrator: metrics in, policy/override, reconcile out.
#include "daemon/service_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <utility>

#include "metrics/prometheus_text_parser.h"
#include "testing/fake_orchestrator.h"

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;

metrics::Exposition Vllm(double waiting, double running) {
  auto parsed = metrics::ParsePrometheusText(
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{model_name=\"m\"} " +
      std::to_string(waiting) +
      "\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"m\"} " +
      std::to_string(running) + "\n");
  return *parsed;
}

ServiceConfig Service(int min, int max) {
  ServiceConfig c;
  c.name = "chat";
  c.command = {"serve"};
  c.min_replicas = min;
  c.max_replicas = max;
  return c;
}

class ServiceRuntimeTest : public ::testing::Test {
 protected:
  ServiceRuntimeTest() : orch_(/*slots=*/8, Seconds{0}) {
    auto policy = std::make_unique<testing::ScriptedPolicy>(1, 4);
    policy_ = policy.get();
    runtime_ = std::make_unique<ServiceRuntime>(Service(1, 4), std::move(policy), orch_);
  }

  // Swaps in a scripted policy that reads `metrics` (a policy's metrics are fixed for its
  // lifetime: the runtime learns them when it gets the policy), with the same desired count.
  void UsePolicyReading(std::vector<std::string> metrics) {
    auto policy = std::make_unique<testing::ScriptedPolicy>(1, 4);
    policy->metric_names = std::move(metrics);
    policy->desired = policy_->desired;
    policy_ = policy.get();
    runtime_->ReplacePolicy(std::move(policy));
  }

  // Ready replicas all report `waiting` queued requests.
  ServiceObservation Observe(double waiting, Seconds now) {
    orch_.Advance(now);
    ServiceObservation obs;
    for (const auto& r : orch_.ListReplicas()) {
      if (r.phase != scale::ReplicaPhase::kReady) continue;
      obs.replicas.push_back({r.id, {}, true, Vllm(waiting, 1)});
    }
    return obs;
  }

  testing::FakeOrchestrator orch_;
  testing::ScriptedPolicy* policy_;
  std::unique_ptr<ServiceRuntime> runtime_;
  std::map<std::string, int> outstanding_;
  OutstandingSink sink_ = [this](const std::string& id, int n) { outstanding_[id] = n; };
};

TEST_F(ServiceRuntimeTest, ScrapedMetricsReachThePolicyAndOutstandingIsReported) {
  policy_->desired = 2;
  runtime_->Tick(Seconds{0}, {}, nullptr, sink_);
  ServiceTickResult r = runtime_->Tick(Seconds{1}, Observe(7, Seconds{1}), nullptr, sink_);
  ASSERT_EQ(policy_->inputs.size(), 2u);
  const scale::ScalingInput& in = policy_->inputs.back();
  ASSERT_EQ(in.metrics.count("vllm:num_requests_waiting"), 1u);
  EXPECT_EQ(in.metrics.at("vllm:num_requests_waiting").per_replica, (std::vector<double>{7, 7}));
  EXPECT_FALSE(in.metrics_error);
  EXPECT_EQ(outstanding_.size(), 2u);
  EXPECT_EQ(outstanding_.begin()->second, 8);  // running 1 + waiting 7
  EXPECT_EQ(r.tick.desired_replicas, 2);
}

// The service's `slo:` block is what the replicas' TTFT histograms are read against: with a
// 0.5 s target, requests at 0.5-1 s are violations the 1 s default would not count.
TEST(ServiceRuntimeSloTest, ViolationRatioUsesTheServicesSloTargets) {
  auto ttft_histogram = [](int fast, int total) {
    return *metrics::ParsePrometheusText(
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "vllm:time_to_first_token_seconds_bucket{le=\"0.5\"} " + std::to_string(fast) + "\n"
        "vllm:time_to_first_token_seconds_bucket{le=\"1.0\"} " + std::to_string(total) + "\n"
        "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} " + std::to_string(total) + "\n"
        "vllm:time_to_first_token_seconds_count " + std::to_string(total) + "\n"
        "vllm:time_to_first_token_seconds_sum 0\n");
  };
  for (const auto& [ttft_target, expected] : {std::pair{0.5, 0.75}, std::pair{1.0, 0.0}}) {
    testing::FakeOrchestrator orch(/*slots=*/2, Seconds{0});
    auto policy = std::make_unique<testing::ScriptedPolicy>(1, 1);
    testing::ScriptedPolicy* scripted = policy.get();
    scripted->desired = 1;
    scripted->metric_names = {"slo:ttft_violation_ratio:1m"};  // its window is kept
    ServiceConfig service = Service(1, 1);
    service.slo.ttft_seconds = ttft_target;
    ServiceRuntime runtime(service, std::move(policy), orch);
    OutstandingSink ignore = [](const std::string&, int) {};
    runtime.Tick(Seconds{0}, {}, nullptr, ignore);
    for (const auto& [t, fast, total] : {std::tuple{1, 0, 0}, std::tuple{31, 10, 40}}) {
      orch.Advance(Seconds{t});
      ServiceObservation obs;
      for (const auto& r : orch.ListReplicas()) {
        obs.replicas.push_back({r.id, {}, true, ttft_histogram(fast, total)});
      }
      runtime.Tick(Seconds{t}, obs, nullptr, ignore);
    }
    const scale::ScalingInput& in = scripted->inputs.back();
    const std::string name = "slo:ttft_violation_ratio:1m";
    ASSERT_EQ(in.metrics.count(name), 1u) << "ttft target " << ttft_target;
    EXPECT_DOUBLE_EQ(*in.metrics.at(name).service_value, expected) << "ttft target " << ttft_target;
  }
}

// The daemon scrapes a service's replicas every tick only while its policy reads them.
TEST_F(ServiceRuntimeTest, PolicyReadsReplicasUnlessItReadsOnlyTheGatewayOrNothing) {
  struct Case {
    std::vector<std::string> metrics;
    SloSource slo_source;
    bool reads;
  };
  const Case cases[] = {
      {{}, SloSource::kAuto, false},
      {{"gateway:request_rate:30s", "gateway:in_flight"}, SloSource::kAuto, false},
      {{"vllm:num_requests_waiting"}, SloSource::kAuto, true},
      {{"gateway:in_flight", "vllm:num_requests_running"}, SloSource::kAuto, true},
      {{"slo:ttft_violation_ratio:1m"}, SloSource::kGateway, false},
      {{"slo:ttft_violation_ratio:1m"}, SloSource::kAuto, true},  // replicas' until traffic
      {{"slo:tpot_violation_ratio:1m"}, SloSource::kReplicas, true},
      {{"gpu_utilization"}, SloSource::kAuto, true},  // simulated GPUs read emulated replicas
  };
  for (const Case& c : cases) {
    ServiceConfig config = Service(1, 4);
    config.slo.source = c.slo_source;
    auto policy = std::make_unique<testing::ScriptedPolicy>(1, 4);
    policy->metric_names = c.metrics;
    ServiceRuntime runtime(config, std::move(policy), orch_);
    EXPECT_EQ(runtime.PolicyReadsReplicas(), c.reads)
        << ::testing::PrintToString(c.metrics) << " slo source " << static_cast<int>(c.slo_source);
  }
}

TEST_F(ServiceRuntimeTest, FailedScrapeIsAMetricErrorForThePolicy) {
  policy_->desired = 1;
  runtime_->Tick(Seconds{0}, {}, nullptr, sink_);
  ServiceObservation obs = Observe(0, Seconds{1});
  ASSERT_EQ(obs.replicas.size(), 1u);
  obs.replicas[0].exposition = Unavailable("connection refused");
  ServiceTickResult r = runtime_->Tick(Seconds{1}, obs, nullptr, sink_);
  EXPECT_EQ(r.scrape_errors, 1);
  ASSERT_EQ(r.metric_errors.size(), 1u);
  EXPECT_THAT(r.metric_errors[0], HasSubstr("connection refused"));
  EXPECT_TRUE(policy_->inputs.back().metrics_error);
}

// A replica whose scrape is still in flight (kKept) keeps its previous values and is no
// error; a carried error (the staleness error) is a metric error but not another failed scrape.
TEST_F(ServiceRuntimeTest, InFlightScrapeKeepsTheLastValuesAndACarriedErrorIsNotRecounted) {
  policy_->desired = 2;
  runtime_->Tick(Seconds{0}, {}, nullptr, sink_);
  runtime_->Tick(Seconds{1}, Observe(7, Seconds{1}), nullptr, sink_);
  ServiceObservation obs = Observe(3, Seconds{2});
  ASSERT_EQ(obs.replicas.size(), 2u);
  obs.replicas[1].exposition = Unavailable("not scraped");
  obs.replicas[1].sample = metrics::SampleKind::kKept;
  outstanding_.clear();
  ServiceTickResult r = runtime_->Tick(Seconds{2}, obs, nullptr, sink_);
  EXPECT_EQ(r.scrape_errors, 0);
  EXPECT_TRUE(r.metric_errors.empty()) << r.metric_errors[0];
  const scale::ScalingInput& kept = policy_->inputs.back();
  EXPECT_FALSE(kept.metrics_error);
  EXPECT_THAT(kept.metrics.at("vllm:num_requests_waiting").per_replica,
              ::testing::UnorderedElementsAre(3, 7));
  ASSERT_EQ(outstanding_.size(), 2u);
  EXPECT_EQ(outstanding_.at(obs.replicas[1].id), kNotScraped)
      << "nothing new scraped of the replica in flight (the daemon asks the gateway)";

  obs = Observe(3, Seconds{3});
  obs.replicas[1].exposition = Unavailable("replica chat-1: metrics stale: ...");
  obs.replicas[1].sample = metrics::SampleKind::kCarried;
  r = runtime_->Tick(Seconds{3}, obs, nullptr, sink_);
  EXPECT_EQ(r.scrape_errors, 0);
  ASSERT_EQ(r.metric_errors.size(), 1u);
  EXPECT_THAT(r.metric_errors[0], HasSubstr("metrics stale"));
  EXPECT_TRUE(policy_->inputs.back().metrics_error);
  EXPECT_THAT(policy_->inputs.back().metrics.at("vllm:num_requests_waiting").per_replica,
              ::testing::ElementsAre(3));
}

TEST_F(ServiceRuntimeTest, GarbageMetricsBodyIsAMetricErrorNamingTheReplica) {
  policy_->desired = 1;
  runtime_->Tick(Seconds{0}, {}, nullptr, sink_);
  ServiceObservation obs = Observe(0, Seconds{1});
  ASSERT_EQ(obs.replicas.size(), 1u);
  metrics::ParseOptions lenient;
  lenient.skip_bad_lines = true;  // as the scraper parses
  obs.replicas[0].exposition =
      metrics::ParsePrometheusText("<html><body>Not a metrics page</body></html>\n", lenient);
  ASSERT_TRUE(obs.replicas[0].exposition);
  ServiceTickResult r = runtime_->Tick(Seconds{1}, obs, nullptr, sink_);
  EXPECT_EQ(r.scrape_errors, 1);
  ASSERT_EQ(r.metric_errors.size(), 1u);
  EXPECT_THAT(r.metric_errors[0], HasSubstr("/metrics has no valid sample (1 malformed lines"));
  EXPECT_THAT(r.metric_errors[0], HasSubstr(obs.replicas[0].id));
  EXPECT_TRUE(policy_->inputs.back().metrics_error);
}

// A metric the policy reads that no ready replica exports is a metric error naming it (and
// what it is read from), never silently "no data"; metrics that do not come from scrapes
// are not checked against them.
TEST_F(ServiceRuntimeTest, MetricNoReadyReplicaExportsIsAMetricErrorByName) {
  struct Case {
    std::string metric;
    std::string error;  // empty: no error
  };
  const std::vector<Case> cases = {
      {"vllm:num_requests_waiting", ""},
      {"vllm:kv_cache_usage_perc",
       "metric 'vllm:kv_cache_usage_perc' is exported by none of the 2 ready replicas (read from "
       "vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc)"},
      {"custom_queue", "metric 'custom_queue' is exported by none of the 2 ready replicas"},
      {"slo:tpot_violation_ratio:1m",
       "metric 'slo:tpot_violation_ratio:1m' is exported by none of the 2 ready replicas (read "
       "from vllm:request_time_per_output_token_seconds, vllm:inter_token_latency_seconds or "
       "vllm:time_per_output_token_seconds)"},
      {"sum(rate(vllm:request_success_total[30s]))",
       "metric 'sum(rate(vllm:request_success_total[30s]))' is exported by none of the 2 ready "
       "replicas (read from vllm:request_success_total)"},
      {"gpu_utilization", ""},  // kernel metric, from the GPU snapshot
      {"gateway:queued", ""},   // measured by the gateway
  };
  policy_->desired = 2;
  runtime_->Tick(Seconds{0}, {}, nullptr, sink_);
  for (const Case& c : cases) {
    UsePolicyReading({c.metric});
    ServiceTickResult r = runtime_->Tick(Seconds{1}, Observe(0, Seconds{1}), nullptr, sink_);
    if (c.error.empty()) {
      EXPECT_THAT(r.metric_errors, ::testing::IsEmpty()) << c.metric;
      EXPECT_FALSE(policy_->inputs.back().metrics_error) << c.metric;
      continue;
    }
    EXPECT_THAT(r.metric_errors, ::testing::ElementsAre(c.error)) << c.metric;
    EXPECT_TRUE(policy_->inputs.back().metrics_error) << c.metric;
  }
}

// Without a ready replica there is nobody to export anything: no error.
TEST_F(ServiceRuntimeTest, NoReadyReplicaMeansNoUnexportedMetricError) {
  UsePolicyReading({"vllm:kv_cache_usage_perc"});
  ServiceTickResult r = runtime_->Tick(Seconds{0}, {}, nullptr, sink_);
  EXPECT_THAT(r.metric_errors, ::testing::IsEmpty());
}

// The issue-22 case: a target policy on KV-cache usage against replicas that export no
// KV-cache gauge (under either name) holds at 3 replicas, and says why in metric_errors.
TEST(ServiceRuntimeTargetTest, TargetOnAMetricNoReplicaExportsHoldsAndReportsIt) {
  testing::FakeOrchestrator orch(/*slots=*/4, Seconds{0});
  ServiceConfig service = Service(1, 4);
  service.policy_yaml =
      "family: target\n"
      "target:\n"
      "  metrics:\n"
      "    - {name: vllm:kv_cache_usage_perc, type: Utilization, average_utilization: 0.8}\n"
      "  behavior: {scale_down: {stabilization_window_seconds: 0}}\n";
  Result<std::unique_ptr<scale::Policy>> policy = BuildServicePolicy(service, {});
  ASSERT_TRUE(policy) << policy.error().ToString();
  ServiceRuntime runtime(service, std::move(*policy), orch);
  ASSERT_TRUE(runtime.SetManualReplicas(3));
  OutstandingSink ignore = [](const std::string&, int) {};
  runtime.Tick(Seconds{0}, {}, nullptr, ignore);
  ASSERT_TRUE(runtime.SetManualReplicas(std::nullopt));
  ServiceTickResult r;
  for (int t = 1; t <= 30; ++t) {
    orch.Advance(Seconds{static_cast<double>(t)});
    ServiceObservation obs;
    for (const auto& replica : orch.ListReplicas()) {
      if (replica.phase == scale::ReplicaPhase::kReady) {
        obs.replicas.push_back({replica.id, {}, true, Vllm(0, 0)});
      }
    }
    r = runtime.Tick(Seconds{static_cast<double>(t)}, obs, nullptr, ignore);
  }
  EXPECT_EQ(r.tick.desired_replicas, 3) << r.tick.decision.reason;
  ASSERT_EQ(r.metric_errors.size(), 1u);
  EXPECT_THAT(r.metric_errors[0],
              HasSubstr("metric 'vllm:kv_cache_usage_perc' is exported by none of the 3 ready "
                        "replicas"));
}

TEST_F(ServiceRuntimeTest, QueryResultsBecomeServiceValuesAndFailuresAreErrors) {
  ServiceObservation obs;
  obs.queries.push_back({"sum(q)", 12.5});
  obs.queries.push_back({"bad", Unavailable("prometheus down")});
  runtime_->Tick(Seconds{0}, obs, nullptr, sink_);
  const scale::ScalingInput& in = policy_->inputs.back();
  ASSERT_EQ(in.metrics.count("sum(q)"), 1u);
  EXPECT_EQ(in.metrics.at("sum(q)").service_value, 12.5);
  EXPECT_EQ(in.metrics.at("sum(q)").source, scale::MetricSource::kPrometheus);
  EXPECT_TRUE(in.metrics_error);
  EXPECT_THAT(in.metric_errors.at(0), HasSubstr("prometheus down"));
}

TEST_F(ServiceRuntimeTest, ManualOverrideWinsAndSaysSo) {
  policy_->desired = 1;
  ASSERT_TRUE(runtime_->SetManualReplicas(3));
  ServiceTickResult r = runtime_->Tick(Seconds{0}, {}, nullptr, sink_);
  EXPECT_EQ(r.tick.desired_replicas, 3);
  EXPECT_THAT(r.tick.decision.reason, HasSubstr("manual override"));
  EXPECT_EQ(orch_.ListReplicas().size(), 3u);
  EXPECT_EQ(policy_->inputs.size(), 1u);  // the policy still sees every tick

  ASSERT_TRUE(runtime_->SetManualReplicas(std::nullopt));
  r = runtime_->Tick(Seconds{1}, {}, nullptr, sink_);
  EXPECT_EQ(r.tick.desired_replicas, 1);
  EXPECT_TRUE(r.desired_changed);
}

// The history (and the dashboard's metric-against-target chart) reads the decision's
// inputs: under an override they are still the policy's, not gone.
TEST_F(ServiceRuntimeTest, ManualOverrideKeepsWhatThePolicyReadAndItsTarget) {
  policy_->desired = 1;
  policy_->decision_inputs = {{"vllm:num_requests_waiting", 7.0, 5.0}};
  ASSERT_TRUE(runtime_->SetManualReplicas(3));
  ServiceTickResult r = runtime_->Tick(Seconds{0}, {}, nullptr, sink_);
  ASSERT_THAT(r.tick.decision.reason, HasSubstr("manual override"));
  EXPECT_EQ(r.tick.decision.inputs, policy_->decision_inputs);
}

TEST_F(ServiceRuntimeTest, ManualOverrideOutsideBoundsIsRejectedNamingReplicas) {
  Status s = runtime_->SetManualReplicas(5);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().field, "replicas");
  EXPECT_FALSE(runtime_->SetManualReplicas(0));
  EXPECT_EQ(runtime_->manual_replicas(), std::nullopt);
}

TEST_F(ServiceRuntimeTest, DesiredChangedOnlyWhenTheCountMoves) {
  policy_->desired = 2;
  EXPECT_TRUE(runtime_->Tick(Seconds{0}, {}, nullptr, sink_).desired_changed);
  EXPECT_FALSE(runtime_->Tick(Seconds{1}, {}, nullptr, sink_).desired_changed);
  policy_->desired = 3;
  EXPECT_TRUE(runtime_->Tick(Seconds{2}, {}, nullptr, sink_).desired_changed);
}

}  // namespace
}  // namespace gpuscale::daemon
