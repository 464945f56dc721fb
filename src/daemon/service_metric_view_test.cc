#include "daemon/service_metric_view.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scale/metric_names.h"

namespace gpuscale::daemon {
namespace {

namespace names = scale::metric_names;
using ::testing::ElementsAre;

metrics::Exposition Parse(const std::string& text) {
  auto exposition = metrics::ParsePrometheusText(text);
  EXPECT_TRUE(exposition) << exposition.error().ToString() << "\n" << text;
  return exposition ? *exposition : metrics::Exposition{};
}

// A histogram family in text format: cumulative `counts` per bound in `bounds` (the last
// bound is +Inf, and its count is also _count).
std::string Histogram(const std::string& name, const std::vector<std::string>& bounds,
                      const std::vector<int>& counts) {
  std::string text = fmt::format("# TYPE {} histogram\n", name);
  for (size_t i = 0; i < bounds.size(); ++i) {
    text += fmt::format("{}_bucket{{model_name=\"m\",le=\"{}\"}} {}\n", name, bounds[i], counts[i]);
  }
  text += fmt::format("{}_sum{{model_name=\"m\"}} 1.5\n", name);
  text += fmt::format("{}_count{{model_name=\"m\"}} {}\n", name, counts.back());
  return text;
}

std::string Gauges(double waiting, double running) {
  return fmt::format(
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{{model_name=\"m\"}} {}\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{{model_name=\"m\"}} {}\n",
      waiting, running);
}

// The finished-request counter split over two finished_reason label sets.
std::string Success(int stop, int length) {
  return fmt::format(
      "# TYPE vllm:request_success_total counter\n"
      "vllm:request_success_total{{finished_reason=\"stop\",model_name=\"m\"}} {}\n"
      "vllm:request_success_total{{finished_reason=\"length\",model_name=\"m\"}} {}\n",
      stop, length);
}

// Refs of string literals (ReadyReplicaRef views its id).
std::vector<ReadyReplicaRef> Ready(std::initializer_list<std::string_view> ids) {
  std::vector<ReadyReplicaRef> refs;
  for (std::string_view id : ids) refs.push_back({id, {}});
  return refs;
}

scale::ScalingInput FillAt(const ServiceMetricView& view, Seconds now,
                           const std::vector<ReadyReplicaRef>& ready,
                           const gpu::GpuSnapshot* gpus = nullptr) {
  scale::ScalingInput input;
  view.Fill(now, ready, gpus, input);
  return input;
}

TEST(ServiceMetricViewTest, PerReplicaValuesSumLabelSetsInReadyOrder) {
  ServiceMetricView view;
  view.Record(Seconds{100}, "r1",
              Parse("# TYPE vllm:num_requests_waiting gauge\n"
                    "vllm:num_requests_waiting{model_name=\"a\"} 3\n"
                    "vllm:num_requests_waiting{model_name=\"b\"} 2\n"
                    "# TYPE vllm:num_requests_running gauge\n"
                    "vllm:num_requests_running{model_name=\"a\"} 4\n"
                    "custom_untyped 7\n"));
  view.Record(Seconds{100}, "r2", Parse(Gauges(1, 2)));
  const auto input = FillAt(view, Seconds{100}, Ready({"r2", "r1"}));
  const auto& waiting = input.metrics.at(std::string(names::kWaiting));
  EXPECT_EQ(waiting.source, scale::MetricSource::kInferenceFramework);
  EXPECT_THAT(waiting.per_replica, ElementsAre(1, 5));
  EXPECT_THAT(input.metrics.at(std::string(names::kRunning)).per_replica, ElementsAre(2, 4));
  EXPECT_THAT(input.metrics.at("custom_untyped").per_replica, ElementsAre(7));
  // Present but empty: no replica reports the KV-cache gauge.
  EXPECT_TRUE(input.metrics.at(std::string(names::kKvUsage)).per_replica.empty());
  ASSERT_EQ(input.tasks.size(), 1u);
  EXPECT_EQ(input.tasks[0].queued, 6);
  EXPECT_EQ(input.tasks[0].running, 6);
}

// vLLM renamed the KV-cache gauge in 0.9 (and stopped serving the old name in 0.12): each
// replica's value is read under whichever name it exports, and set under both.
TEST(ServiceMetricViewTest, KvUsageIsReadUnderTheCurrentAndTheFormerName) {
  auto gauge = [](std::string_view name, double value) {
    return fmt::format("# TYPE {0} gauge\n{0}{{engine=\"0\",model_name=\"m\"}} {1}\n", name, value);
  };
  const std::string current(names::kKvUsage), former(names::kKvUsageFormer);
  ServiceMetricView view;
  view.Record(Seconds{1}, "new", Parse(gauge(current, 0.5)));
  view.Record(Seconds{1}, "old", Parse(gauge(former, 0.25)));
  view.Record(Seconds{1}, "both", Parse(gauge(current, 0.7) + gauge(former, 0.6)));
  view.Record(Seconds{1}, "none", Parse(Gauges(1, 1)));
  const auto input = FillAt(view, Seconds{1}, Ready({"new", "old", "both", "none"}));
  EXPECT_EQ(current, "vllm:kv_cache_usage_perc");
  EXPECT_THAT(input.metrics.at(current).per_replica, ElementsAre(0.5, 0.25, 0.7));
  EXPECT_THAT(input.metrics.at(former).per_replica, ElementsAre(0.5, 0.25, 0.6));
}

// Scrape after scrape a replica lists the same families (the view then writes values in
// place): later values, renamed copies and a changed family list all come through.
TEST(ServiceMetricViewTest, LaterScrapesOfTheSameFamiliesUpdateEveryValue) {
  auto gauge = [](std::string_view name, double value) {
    return fmt::format("# TYPE {0} gauge\n{0}{{model_name=\"m\"}} {1}\n", name, value);
  };
  const std::string current(names::kKvUsage), former(names::kKvUsageFormer);
  const std::string waiting(names::kWaiting), running(names::kRunning);
  ServiceMetricView view;
  auto at = [&](double t) { return FillAt(view, Seconds{t}, Ready({"r1"})); };
  view.Record(Seconds{1}, "r1", Parse(Gauges(1, 2) + gauge(former, 0.25)));
  view.Record(Seconds{2}, "r1", Parse(Gauges(5, 6) + gauge(former, 0.5)));
  scale::ScalingInput input = at(2);
  EXPECT_THAT(input.metrics.at(waiting).per_replica, ElementsAre(5));
  EXPECT_THAT(input.metrics.at(running).per_replica, ElementsAre(6));
  EXPECT_THAT(input.metrics.at(former).per_replica, ElementsAre(0.5));
  EXPECT_THAT(input.metrics.at(current).per_replica, ElementsAre(0.5)) << "copied again";
  // A family gone, one new: rebuilt.
  view.Record(Seconds{3}, "r1", Parse(Gauges(7, 8) + gauge("vllm:num_preemptions_total", 3)));
  input = at(3);
  EXPECT_THAT(input.metrics.at(waiting).per_replica, ElementsAre(7));
  EXPECT_THAT(input.metrics.at(current).per_replica, ::testing::IsEmpty());
  EXPECT_THAT(input.metrics.at("vllm:num_preemptions_total").per_replica, ElementsAre(3));
  // A family split by another (its name twice) is summed, scrape after scrape.
  for (double t : {4.0, 5.0}) {
    view.Record(Seconds{t}, "r1",
                Parse(gauge(waiting, t) + gauge(running, 1) +
                      fmt::format("{}{{model_name=\"n\"}} 10\n", waiting)));
    EXPECT_THAT(at(t).metrics.at(waiting).per_replica, ElementsAre(t + 10)) << t;
  }
}

TEST(ServiceMetricViewTest, ReplicaNotReadyIsExcludedFromPerReplicaValues) {
  ServiceMetricView view;
  view.Record(Seconds{10}, "r1", Parse(Gauges(4, 1)));
  view.Record(Seconds{10}, "r2", Parse(Gauges(9, 9)));
  // r3 is ready but never scraped: it does not report.
  const auto input = FillAt(view, Seconds{10}, Ready({"r1", "r3"}));
  EXPECT_THAT(input.metrics.at(std::string(names::kWaiting)).per_replica, ElementsAre(4));
  EXPECT_EQ(input.tasks[0].queued, 4);
  EXPECT_EQ(input.tasks[0].running, 1);
}

TEST(ServiceMetricViewTest, HistogramFamiliesAreNotPerReplicaValues) {
  ServiceMetricView view;
  view.Record(Seconds{1}, "r1",
              Parse(Histogram("vllm:e2e_request_latency_seconds", {"1", "+Inf"}, {1, 2})));
  const auto input = FillAt(view, Seconds{1}, Ready({"r1"}));
  EXPECT_FALSE(input.metrics.contains("vllm:e2e_request_latency_seconds"));
}

// The token counters the slo policy's token mode reads (sum(rate(...[30s])) over replicas):
// without them live, a token-mode policy would hold for ever ("no token-rate data yet").
TEST(ServiceMetricViewTest, TokenRatesSumPerReplicaRates) {
  auto tokens = [](int prompt, int generated) {
    return fmt::format(
        "# TYPE vllm:prompt_tokens_total counter\n"
        "vllm:prompt_tokens_total{{model_name=\"m\"}} {}\n"
        "# TYPE vllm:generation_tokens_total counter\n"
        "vllm:generation_tokens_total{{model_name=\"m\"}} {}\n",
        prompt, generated);
  };
  ServiceMetricView view;
  view.Record(Seconds{0}, "r1", Parse(tokens(1000, 100)));
  view.Record(Seconds{30}, "r1", Parse(tokens(7000, 700)));  // 200 / 20 tokens/s
  // r2 exposes no counters before its first request: 0, then 3000 / 600 at t = 30.
  view.Record(Seconds{0}, "r2", Parse(Gauges(0, 0)));
  view.Record(Seconds{30}, "r2", Parse(tokens(3000, 600)));  // 100 / 20 tokens/s
  const auto input = FillAt(view, Seconds{30}, Ready({"r1", "r2"}));
  const auto& prompt = input.metrics.at(std::string(names::kPromptTokensRate30s));
  EXPECT_EQ(prompt.source, scale::MetricSource::kPrometheus);
  EXPECT_DOUBLE_EQ(*prompt.service_value, 300.0);
  EXPECT_DOUBLE_EQ(
      *input.metrics.at(std::string(names::kGenerationTokensRate30s)).service_value, 40.0);
}

TEST(ServiceMetricViewTest, SuccessRatesSumPerReplicaRatesOverLabelSets) {
  ServiceMetricView view;
  // r1: 0 -> 60 -> 180 finished requests at t = 0, 60, 120 (split over two label sets).
  view.Record(Seconds{0}, "r1", Parse(Success(0, 0)));
  view.Record(Seconds{60}, "r1", Parse(Success(50, 10)));
  view.Record(Seconds{120}, "r1", Parse(Success(150, 30)));
  // r2 exposes no counter before its first request: counts as 0, then 120 at t = 120.
  view.Record(Seconds{0}, "r2", Parse(Gauges(0, 0)));
  view.Record(Seconds{60}, "r2", Parse(Gauges(0, 0)));
  view.Record(Seconds{120}, "r2", Parse(Success(120, 0)));
  const auto input = FillAt(view, Seconds{120}, Ready({"r1", "r2"}));
  // 30 s window: baseline t = 60. r1: 120 / 60 = 2, r2: 120 / 60 = 2.
  const auto& rate30 = input.metrics.at(std::string(names::kSuccessRate30s));
  EXPECT_EQ(rate30.source, scale::MetricSource::kPrometheus);
  EXPECT_DOUBLE_EQ(*rate30.service_value, 4.0);
  // 2 min window: baseline t = 0. r1: 180 / 120 = 1.5, r2: 120 / 120 = 1.
  EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kSuccessRate2m)).service_value, 2.5);
}

// Windows only for the service values the policy reads: none for a policy on a gauge; one
// added later starts empty (a rate needs two scrapes from then on); one dropped is gone.
TEST(ServiceMetricViewTest, KeepsWindowsOnlyForTheValuesThePolicyReads) {
  ServiceMetricView view;
  view.SetReadMetrics({std::string(names::kWaiting)});
  view.Record(Seconds{0}, "r1", Parse(Gauges(1, 2) + Success(0, 0)));
  view.Record(Seconds{60}, "r1", Parse(Gauges(3, 2) + Success(60, 0)));
  scale::ScalingInput input = FillAt(view, Seconds{60}, Ready({"r1"}));
  EXPECT_THAT(input.metrics.at(std::string(names::kWaiting)).per_replica, ElementsAre(3));
  EXPECT_FALSE(input.metrics.contains(std::string(names::kSuccessRate30s)));

  view.SetReadMetrics({std::string(names::kWaiting), std::string(names::kSuccessRate30s)});
  view.Record(Seconds{120}, "r1", Parse(Success(120, 0)));
  EXPECT_FALSE(FillAt(view, Seconds{120}, Ready({"r1"}))
                   .metrics.contains(std::string(names::kSuccessRate30s)))
      << "one scrape since the window started";
  view.Record(Seconds{180}, "r1", Parse(Success(240, 0)));
  input = FillAt(view, Seconds{180}, Ready({"r1"}));
  EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kSuccessRate30s)).service_value, 2.0);

  view.SetReadMetrics({});
  EXPECT_FALSE(FillAt(view, Seconds{180}, Ready({"r1"}))
                   .metrics.contains(std::string(names::kSuccessRate30s)));
}

// What a policy reads decides which families a scrape keeps: the vLLM gauges always, the
// counters and histograms only for the service values computed from them.
TEST(ServiceMetricViewTest, ReadFamiliesFollowThePolicysMetrics) {
  std::set<std::string, std::less<>> gauge_only, slo;
  ServiceMetricView::AddReadFamilies({std::string(names::kWaiting)}, gauge_only);
  EXPECT_THAT(gauge_only, ::testing::UnorderedElementsAre(
                              "vllm:num_requests_waiting", "vllm:num_requests_running",
                              "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"));
  ServiceMetricView::AddReadFamilies(
      {std::string(names::kTpotViolationRatio), std::string(names::kGenerationTokensRate30s)}, slo);
  for (const char* family :
       {"vllm:request_time_per_output_token_seconds", "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds", "vllm:generation_tokens_total"}) {
    EXPECT_TRUE(slo.contains(family)) << family;
  }
  EXPECT_FALSE(slo.contains("vllm:time_to_first_token_seconds"));
}

TEST(ServiceMetricViewTest, ViolationRatiosWeightReplicasByObservations) {
  ServiceMetricView view(SloThresholds{.ttft_seconds = 1.0, .tpot_seconds = 0.05});
  const std::vector<std::string> ttft_bounds = {"0.5", "1.0", "2.5", "+Inf"};
  const std::string ttft = "vllm:time_to_first_token_seconds";
  const std::string tpot = "vllm:request_time_per_output_token_seconds";
  const std::string e2e = "vllm:e2e_request_latency_seconds";
  view.Record(Seconds{0}, "r1",
              Parse(Histogram(ttft, ttft_bounds, {0, 0, 0, 0}) +
                    Histogram(tpot, {"0.025", "0.05", "0.1", "+Inf"}, {0, 0, 0, 0}) +
                    Histogram(e2e, {"1.0", "5.0", "10.0", "+Inf"}, {0, 0, 0, 0})));
  view.Record(Seconds{60}, "r1",
              Parse(Histogram(ttft, ttft_bounds, {5, 8, 9, 10}) +
                    Histogram(tpot, {"0.025", "0.05", "0.1", "+Inf"}, {2, 6, 9, 10}) +
                    Histogram(e2e, {"1.0", "5.0", "10.0", "+Inf"}, {3, 7, 9, 10})));
  view.Record(Seconds{0}, "r2", Parse(Histogram(ttft, ttft_bounds, {0, 0, 0, 0})));
  view.Record(Seconds{60}, "r2", Parse(Histogram(ttft, ttft_bounds, {0, 15, 20, 30})));
  const auto input = FillAt(view, Seconds{60}, Ready({"r1", "r2"}));
  // TTFT > 1 s: r1 2 of 10, r2 15 of 30 -> 17 / 40.
  EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kTtftViolationRatio)).service_value,
                   17.0 / 40.0);
  // TPOT > 0.05 s: r1 only, 4 of 10.
  EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kTpotViolationRatio)).service_value, 0.4);
  // E2E > 5 s: 3 of 10.
  EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kE2eOver5sRatio)).service_value, 0.3);
}

// TPOT per replica from the first histogram it exports: vLLM >= 0.11's per-request one, else
// the per-gap inter-token one under its current name, else under its name before 0.11.
TEST(ServiceMetricViewTest, TpotComesFromThePerRequestHistogramElseTheInterTokenOne) {
  const std::vector<std::string> bounds = {"0.025", "0.05", "0.1", "+Inf"};
  const std::string request = "vllm:request_time_per_output_token_seconds";
  const std::string itl = "vllm:inter_token_latency_seconds";
  const std::string former = "vllm:time_per_output_token_seconds";
  struct Case {
    std::vector<std::string> exported;  // each with the counts below, in this order
    double expected;                    // share over the 0.05 s SLO
  };
  const std::vector<std::vector<int>> counts = {{2, 6, 9, 10}, {10, 10, 10, 10}, {0, 5, 5, 10}};
  const std::vector<Case> cases = {
      {{request}, 0.4},
      {{itl}, 0.4},
      {{former}, 0.4},
      {{request, itl}, 0.4},
      {{itl, request}, 0.0},
      {{former, itl}, 0.0},
      {{former, itl, request}, 0.5},
  };
  for (const Case& c : cases) {
    std::string zero, later;
    for (size_t i = 0; i < c.exported.size(); ++i) {
      zero += Histogram(c.exported[i], bounds, {0, 0, 0, 0});
      later += Histogram(c.exported[i], bounds, counts[i]);
    }
    ServiceMetricView view(SloThresholds{.tpot_seconds = 0.05});
    view.Record(Seconds{0}, "r1", Parse(zero));
    view.Record(Seconds{60}, "r1", Parse(later));
    const auto input = FillAt(view, Seconds{60}, Ready({"r1"}));
    const std::string label = fmt::format("{}", fmt::join(c.exported, " + "));
    ASSERT_TRUE(input.metrics.contains(std::string(names::kTpotViolationRatio))) << label;
    EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kTpotViolationRatio)).service_value,
                     c.expected)
        << label;
  }
}

// The gateway's cumulative stats of a service after `n` requests whose TTFT each is `ttft`
// (and TPOT `tpot`), `errors` of them failed; bounds as the gateway's vLLM layouts.
gateway::ServiceStatsView GatewayStats(int n, int errors, double ttft, double tpot,
                                       const gateway::ServiceStatsView* before = nullptr) {
  gateway::ServiceStatsView v = before ? *before : gateway::ServiceStatsView{};
  auto observe = [n](gateway::HistogramSample& h, double value) {
    if (h.upper_bounds.empty()) {
      h.upper_bounds = {0.05, 0.5, 1.0, 2.5, std::numeric_limits<double>::infinity()};
      h.cumulative_counts.assign(h.upper_bounds.size(), 0);
    }
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
      if (value <= h.upper_bounds[i]) h.cumulative_counts[i] += n;
    }
    h.sum += n * value;
  };
  observe(v.ttft, ttft);
  observe(v.tpot, tpot);
  observe(v.e2e, ttft + 1);
  observe(v.added, 0.0004);
  v.requests += n;
  v.errors += errors;
  return v;
}

TEST(ServiceMetricViewTest, GatewayFiguresAreWindowedFromCumulativeStats) {
  ServiceMetricView view(SloThresholds{.ttft_seconds = 1.0, .tpot_seconds = 0.05});
  EXPECT_FALSE(view.Gateway(Seconds{0}).has_value()) << "no gateway, no figures";
  const gateway::ServiceStatsView t0 = GatewayStats(100, 0, 0.2, 0.01);
  view.RecordGateway(Seconds{0}, t0);
  // In the next 30 s: 60 requests, 6 failed, all with a 2 s TTFT (over the 1 s SLO).
  gateway::ServiceStatsView t30 = GatewayStats(60, 6, 2.0, 0.01, &t0);
  t30.in_flight = 7;
  t30.queued = 2;
  view.RecordGateway(Seconds{30}, t30);
  const std::optional<GatewayFigures> f = view.Gateway(Seconds{30});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->requests_total, 160);
  EXPECT_EQ(f->errors_total, 6);
  EXPECT_EQ(f->in_flight, 7);
  EXPECT_EQ(f->queued, 2);
  EXPECT_DOUBLE_EQ(*f->request_rate, 2.0);  // 60 in 30 s: the 100 before do not count
  EXPECT_DOUBLE_EQ(*f->error_ratio, 0.1);
  EXPECT_DOUBLE_EQ(*f->ttft_violation_ratio, 1.0);
  EXPECT_DOUBLE_EQ(*f->tpot_violation_ratio, 0.0);
  EXPECT_GT(*f->ttft_p50, 1.0);
  EXPECT_LE(*f->ttft_p50, 2.5);
  ASSERT_TRUE(f->added_p99.has_value());
  EXPECT_LE(*f->added_p99, 0.05) << "the gateway's own 0.4 ms, within its first bucket";

  const auto input = FillAt(view, Seconds{30}, {});
  const scale::MetricValue& rate = input.metrics.at(std::string(names::kGatewayRequestRate30s));
  EXPECT_EQ(rate.source, scale::MetricSource::kGateway);
  EXPECT_DOUBLE_EQ(*rate.service_value, 2.0);
  EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kGatewayInFlight)).service_value, 7);
  EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kGatewayQueued)).service_value, 2);
}

// A service nobody calls through the gateway keeps no gateway windows (a fleet's idle
// services would hold 10 minutes of zeros each); its first requests are counted from the
// last idle tick, so nothing of them is lost.
TEST(ServiceMetricViewTest, GatewayWindowsStartAtTheFirstRequestFromTheLastIdleTick) {
  ServiceMetricView view(SloThresholds{.ttft_seconds = 1.0});
  const gateway::ServiceStatsView idle = GatewayStats(0, 0, 2.0, 0.01);
  for (int t = 0; t <= 20; ++t) view.RecordGateway(Seconds{t}, idle);
  EXPECT_FALSE(view.Gateway(Seconds{20}).has_value());
  view.RecordGateway(Seconds{21}, GatewayStats(30, 3, 2.0, 0.01, &idle));
  const std::optional<GatewayFigures> f = view.Gateway(Seconds{21});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->requests_total, 30);
  ASSERT_TRUE(f->error_ratio.has_value());
  EXPECT_DOUBLE_EQ(*f->error_ratio, 0.1);
  ASSERT_TRUE(f->ttft_violation_ratio.has_value()) << "the first requests count at once";
  EXPECT_DOUBLE_EQ(*f->ttft_violation_ratio, 1.0);
}

// Which histograms the slo policy's violation ratios come from, per slo.source: the replicas
// say every request met the TTFT SLO, the gateway (what clients saw) says none did.
TEST(ServiceMetricViewTest, SloSourcePicksTheViolationRatiosOrigin) {
  const std::string ttft = "vllm:time_to_first_token_seconds";
  const std::vector<std::string> bounds = {"0.5", "1.0", "2.5", "+Inf"};
  struct Case {
    SloSource source;
    bool gateway_saw_requests;
    std::optional<double> expected;  // kTtftViolationRatio
  };
  const std::vector<Case> cases = {
      {SloSource::kAuto, true, 1.0},       {SloSource::kAuto, false, 0.0},
      {SloSource::kGateway, true, 1.0},    {SloSource::kGateway, false, std::nullopt},
      {SloSource::kReplicas, true, 0.0},   {SloSource::kReplicas, false, 0.0},
  };
  for (const Case& c : cases) {
    ServiceMetricView view(SloThresholds{.ttft_seconds = 1.0, .source = c.source});
    view.Record(Seconds{0}, "r1", Parse(Histogram(ttft, bounds, {0, 0, 0, 0})));
    view.Record(Seconds{60}, "r1", Parse(Histogram(ttft, bounds, {10, 10, 10, 10})));
    const gateway::ServiceStatsView t0 = GatewayStats(0, 0, 2.0, 0.01);
    view.RecordGateway(Seconds{0}, t0);
    view.RecordGateway(Seconds{60}, GatewayStats(c.gateway_saw_requests ? 10 : 0, 0, 2.0, 0.01,
                                                 &t0));
    const auto input = FillAt(view, Seconds{60}, Ready({"r1"}));
    const auto it = input.metrics.find(std::string(names::kTtftViolationRatio));
    const std::string label = fmt::format("source {} gateway saw requests {}",
                                          static_cast<int>(c.source), c.gateway_saw_requests);
    if (!c.expected) {
      EXPECT_EQ(it, input.metrics.end()) << label;
      continue;
    }
    ASSERT_NE(it, input.metrics.end()) << label;
    EXPECT_DOUBLE_EQ(*it->second.service_value, *c.expected) << label;
  }
}

TEST(ServiceMetricViewTest, NoObservationsMeansNoRatioAndOneScrapeNoRate) {
  ServiceMetricView view;
  view.Record(Seconds{0}, "r1", Parse(Success(3, 0)));
  const auto input = FillAt(view, Seconds{0}, Ready({"r1"}));
  EXPECT_FALSE(input.metrics.contains(std::string(names::kSuccessRate30s)));
  EXPECT_FALSE(input.metrics.contains(std::string(names::kTtftViolationRatio)));
}

TEST(ServiceMetricViewTest, KernelMetricsAreMeansOverTheReplicasGpus) {
  gpu::GpuSnapshot snapshot;
  gpu::GpuInfo g0, g1, g2;
  g0.index = 0;
  g0.utilization_percent = 50;
  g0.memory_used_mb = 1000;
  g0.memory_total_mb = 4000;
  g0.power_draw_w = 100;
  g0.temperature_c = 60;
  g1.index = 1;
  g1.utilization_percent = 70;
  g1.memory_used_mb = 3000;
  g1.memory_total_mb = 4000;
  g1.temperature_c = 70;  // no power reading
  g2.index = 2;           // no readings at all
  snapshot.gpus = {g0, g1, g2};
  ServiceMetricView view;
  const std::vector<int> gpus_a = {0, 1}, gpus_b = {2};
  const std::vector<ReadyReplicaRef> ready = {{"a", gpus_a}, {"b", gpus_b}, {"c", {}}};
  const auto input = FillAt(view, Seconds{0}, ready, &snapshot);
  const auto& util = input.metrics.at("gpu_utilization");
  EXPECT_EQ(util.source, scale::MetricSource::kKernel);
  EXPECT_THAT(util.per_replica, ElementsAre(60));
  EXPECT_THAT(input.metrics.at("gpu_memory_used_mb").per_replica, ElementsAre(2000));
  EXPECT_THAT(input.metrics.at("gpu_memory_usage_percent").per_replica, ElementsAre(50));
  EXPECT_THAT(input.metrics.at("gpu_power_w").per_replica, ElementsAre(100));
  EXPECT_THAT(input.metrics.at("gpu_temperature_c").per_replica, ElementsAre(65));
  EXPECT_FALSE(FillAt(view, Seconds{0}, ready).metrics.contains("gpu_utilization"));
}

TEST(ServiceMetricViewTest, ForgetAndRetainDropWindows) {
  ServiceMetricView view;
  for (const char* id : {"r1", "r2", "r3"}) {
    view.Record(Seconds{0}, id, Parse(Gauges(1, 0) + Success(0, 0)));
    view.Record(Seconds{10}, id, Parse(Gauges(1, 0) + Success(10, 0)));
  }
  const auto all = Ready({"r1", "r2", "r3"});
  EXPECT_DOUBLE_EQ(*FillAt(view, Seconds{10}, all).metrics.at(std::string(names::kSuccessRate30s))
                        .service_value,
                   3.0);
  view.Retain({"r1", "r2"});
  auto input = FillAt(view, Seconds{10}, all);
  EXPECT_THAT(input.metrics.at(std::string(names::kWaiting)).per_replica, ElementsAre(1, 1));
  EXPECT_DOUBLE_EQ(*input.metrics.at(std::string(names::kSuccessRate30s)).service_value, 2.0);
  view.Forget("r1");
  view.Forget("r2");
  input = FillAt(view, Seconds{10}, all);
  EXPECT_TRUE(input.metrics.at(std::string(names::kWaiting)).per_replica.empty());
  EXPECT_FALSE(input.metrics.contains(std::string(names::kSuccessRate30s)));
}

TEST(ServiceMetricViewTest, RetainDropsAReplicaInTheMiddleWhateverTheOrderOfIds) {
  ServiceMetricView view;
  view.Record(Seconds{1}, "r1", Parse(Gauges(1, 0)));
  view.Record(Seconds{1}, "r2", Parse(Gauges(2, 0)));
  view.Record(Seconds{1}, "r3", Parse(Gauges(3, 0)));
  view.Retain({"r3", "unknown", "r1", "r3"});
  const auto input = FillAt(view, Seconds{1}, Ready({"r1", "r2", "r3"}));
  EXPECT_THAT(input.metrics.at(std::string(names::kWaiting)).per_replica, ElementsAre(1, 3));
}

// Family names come and go (a replica exporting a new one each scrape): the names no replica
// holds any more are dropped from time to time, and every replica's values stay right.
TEST(ServiceMetricViewTest, FamilyNamesNoReplicaExportsAnyMoreAreDropped) {
  ServiceMetricView view;
  for (int i = 0; i < 300; ++i) {
    const Seconds now{static_cast<double>(i)};
    view.Record(now, "steady", Parse(Gauges(1, 2) + "extra 7\n"));
    view.Record(now, "changing", Parse(Gauges(3, 4) + fmt::format("family_{} {}\n", i, i)));
    view.Retain({"steady", "changing"});
  }
  const auto input = FillAt(view, Seconds{299}, Ready({"steady", "changing"}));
  EXPECT_THAT(input.metrics.at(std::string(names::kWaiting)).per_replica, ElementsAre(1, 3));
  EXPECT_THAT(input.metrics.at(std::string(names::kRunning)).per_replica, ElementsAre(2, 4));
  EXPECT_THAT(input.metrics.at("extra").per_replica, ElementsAre(7));
  EXPECT_THAT(input.metrics.at("family_299").per_replica, ElementsAre(299));
  EXPECT_FALSE(input.metrics.contains("family_298"));
}

TEST(ServiceMetricViewTest, OutOfOrderScrapeIsIgnoredAndFillOverwrites) {
  ServiceMetricView view;
  view.Record(Seconds{20}, "r1", Parse(Gauges(2, 0)));
  view.Record(Seconds{10}, "r1", Parse(Gauges(99, 0)));
  scale::ScalingInput input;
  input.metrics[std::string(names::kWaiting)].per_replica = {42, 42};
  view.Fill(Seconds{20}, Ready({"r1"}), nullptr, input);
  EXPECT_THAT(input.metrics.at(std::string(names::kWaiting)).per_replica, ElementsAre(2));
}

TEST(ServiceMetricViewTest, MovedViewKeepsWindows) {
  ServiceMetricView view;
  view.Record(Seconds{1}, "r1", Parse(Gauges(3, 0)));
  ServiceMetricView moved = std::move(view);
  EXPECT_THAT(FillAt(moved, Seconds{1}, Ready({"r1"})).metrics.at(std::string(names::kWaiting))
                  .per_replica,
              ElementsAre(3));
}

}  // namespace
}  // namespace gpuscale::daemon
