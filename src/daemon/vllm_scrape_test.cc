// A vLLM 0.12 /metrics body (src/metrics/testdata/vllm_0_12_metrics.txt, written from vLLM's
// documented metric list in prometheus_client's text format: the model_name and engine
// labels, counters with their _created gauges) through the scraper the daemon's collector
// uses (metrics::ScrapeMetrics, over loopback HTTP) and the view its policies read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "daemon/service_metric_view.h"
#include "metrics/exposition_writer.h"
#include "scale/metric_names.h"
#include "scrape/scraper.h"
#include "testing/loopback_server.h"

namespace gpuscale::daemon {
namespace {

namespace names = scale::metric_names;
using ::testing::ElementsAre;

std::string ReadFixture() {
  std::ifstream in(std::string(GPUSCALE_SOURCE_DIR) +
                   "/src/metrics/testdata/vllm_0_12_metrics.txt");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The same engine as it starts: vLLM creates every series up front, counters and histograms
// at 0, so the first scrape already has all of them.
std::string AtStart(const std::string& text) {
  Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(text);
  EXPECT_TRUE(parsed) << parsed.error().ToString();
  if (!parsed) return {};
  for (metrics::MetricFamily& family : parsed->families) {
    if (family.type != metrics::MetricType::kCounter &&
        family.type != metrics::MetricType::kHistogram) {
      continue;
    }
    for (metrics::Sample& sample : family.samples) sample.value = 0;
  }
  return metrics::WritePrometheusText(parsed->families);
}

class Vllm012Replica : public testing::LoopbackServer {
 public:
  Vllm012Replica() : now_(ReadFixture()), start_(AtStart(now_)) {
    server().Get("/start", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(start_, "text/plain; version=0.0.4; charset=utf-8");
    });
    server().Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(now_, "text/plain; version=0.0.4; charset=utf-8");
    });
    Start();
  }
  ~Vllm012Replica() { Stop(); }

  bool loaded() const { return !now_.empty() && !start_.empty(); }

 private:
  const std::string now_, start_;
};

TEST(VllmScrapeTest, Vllm012ExpositionFillsEveryPolicyMetric) {
  Vllm012Replica replica;
  ASSERT_TRUE(replica.loaded()) << "fixture missing";
  ServiceMetricView view(SloThresholds{.ttft_seconds = 1.0, .tpot_seconds = 0.05});
  for (auto [t, path] : {std::pair{0.0, "/start"}, std::pair{60.0, "/metrics"}}) {
    Result<metrics::Exposition> scraped = metrics::ScrapeMetrics(replica.Url(path));
    ASSERT_TRUE(scraped) << scraped.error().ToString();
    EXPECT_EQ(scraped->skipped_lines, 0) << path;
    view.Record(Seconds{t}, "r1", *scraped);
  }
  scale::ScalingInput input;
  view.Fill(Seconds{60}, {{"r1", {}}}, nullptr, input);

  // Per replica: gauges and counters summed over their label sets (engine, model_name, ...).
  struct PerReplica {
    std::string name;
    double value;
  };
  const std::vector<PerReplica> per_replica = {
      {std::string(names::kWaiting), 3},
      {std::string(names::kRunning), 8},
      {std::string(names::kKvUsage), 0.4213},
      {std::string(names::kKvUsageFormer), 0.4213},  // not served by 0.12: from the new name
      {"vllm:engine_sleep_state", 1},
      {"vllm:num_preemptions_total", 2},
      {"vllm:prefix_cache_hits_total", 611200},
  };
  for (const PerReplica& c : per_replica) {
    ASSERT_TRUE(input.metrics.contains(c.name)) << c.name;
    EXPECT_THAT(input.metrics.at(c.name).per_replica, ElementsAre(c.value)) << c.name;
  }
  ASSERT_EQ(input.tasks.size(), 1u);
  EXPECT_EQ(input.tasks[0].queued, 3);
  EXPECT_EQ(input.tasks[0].running, 8);

  // Service values from the counters' and histograms' increase over the minute.
  struct Service {
    std::string_view name;
    double value;
  };
  const std::vector<Service> service = {
      {names::kSuccessRate2m, 1000.0 / 60},  // stop 950 + length 50
      {names::kPromptTokensRate30s, 1234567.0 / 60},
      {names::kGenerationTokensRate30s, 456789.0 / 60},
      {names::kTtftViolationRatio, 10.0 / 1008},  // 998 of 1008 first tokens within 1 s
      // Per request (30 of 1000 over 50 ms), not per gap (a third of the gaps are over).
      {names::kTpotViolationRatio, 0.03},
      {names::kE2eOver5sRatio, 0.01},
  };
  for (const Service& c : service) {
    const auto it = input.metrics.find(std::string(c.name));
    ASSERT_NE(it, input.metrics.end()) << c.name;
    ASSERT_TRUE(it->second.service_value.has_value()) << c.name;
    EXPECT_NEAR(*it->second.service_value, c.value, 1e-9) << c.name;
  }
}

// The daemon parses only the families its views and policies read: a view fed such scrapes
// gives every policy input a full parse gives, for the families a policy names (here the
// vLLM gauges and a preemption rule) and for the service values. Service values the policy
// does not read are computed by neither (SetReadMetrics), so their families are not kept.
TEST(VllmScrapeTest, ScrapesOfTheReadFamiliesOnlyGiveTheSameInputs) {
  Vllm012Replica replica;
  ASSERT_TRUE(replica.loaded()) << "fixture missing";
  const std::vector<std::string> policy_metrics = {
      std::string(names::kWaiting), std::string(names::kKvUsageFormer),
      "vllm:num_preemptions_total", std::string(names::kTtftViolationRatio),
      std::string(names::kSuccessRate2m)};
  std::set<std::string, std::less<>> families;
  ServiceMetricView::AddReadFamilies(policy_metrics, families);
  metrics::ScrapeOptions only;
  only.parse.only_families = &families;
  const SloThresholds slo{.ttft_seconds = 1.0, .tpot_seconds = 0.05};
  ServiceMetricView full(slo), filtered(slo);
  full.SetReadMetrics(policy_metrics);
  filtered.SetReadMetrics(policy_metrics);
  size_t full_samples = 0, filtered_samples = 0;
  for (auto [t, path] : {std::pair{0.0, "/start"}, std::pair{60.0, "/metrics"}}) {
    Result<metrics::Exposition> all = metrics::ScrapeMetrics(replica.Url(path));
    Result<metrics::Exposition> some = metrics::ScrapeMetrics(replica.Url(path), only);
    ASSERT_TRUE(all && some);
    full_samples = all->SampleCount();
    filtered_samples = some->SampleCount();
    full.Record(Seconds{t}, "r1", *all);
    filtered.Record(Seconds{t}, "r1", *some);
  }
  EXPECT_LT(filtered_samples, full_samples);
  scale::ScalingInput a, b;
  full.Fill(Seconds{60}, {{"r1", {}}}, nullptr, a);
  filtered.Fill(Seconds{60}, {{"r1", {}}}, nullptr, b);
  for (const std::string& metric : policy_metrics) {
    ASSERT_TRUE(b.metrics.contains(metric)) << metric;
    EXPECT_EQ(a.metrics.at(metric).per_replica, b.metrics.at(metric).per_replica) << metric;
    EXPECT_EQ(a.metrics.at(metric).service_value, b.metrics.at(metric).service_value) << metric;
  }
  EXPECT_EQ(a.metrics.at(std::string(names::kRunning)).per_replica,
            b.metrics.at(std::string(names::kRunning)).per_replica);
  for (std::string_view metric :
       {names::kTpotViolationRatio, names::kE2eOver5sRatio, names::kPromptTokensRate30s}) {
    EXPECT_FALSE(a.metrics.contains(std::string(metric))) << metric << ": not read, no window";
    EXPECT_FALSE(b.metrics.contains(std::string(metric))) << metric;
  }
  EXPECT_TRUE(filtered.FindUnexported({{"r1", {}}}, policy_metrics, b).empty());
}

}  // namespace
}  // namespace gpuscale::daemon
