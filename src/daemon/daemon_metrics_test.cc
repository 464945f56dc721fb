// gpuscale's own /metrics: families, labels, HELP/TYPE, parseable output.
#include "daemon/daemon_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "metrics/prometheus_text_parser.h"

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(DaemonMetricsTest, RendersGpuServiceAndLoopFamiliesThatParseBack) {
  gpu::GpuSnapshot snapshot;
  gpu::GpuInfo g;
  g.index = 0;
  g.uuid = "GPU-0";
  g.name = "H100";
  g.memory_total_mb = 1024;
  g.memory_used_mb = 512;
  g.utilization_percent = 50;
  snapshot.gpus.push_back(g);
  DaemonMetrics m;
  m.ObserveLoop(0.02);
  m.ObserveLoop(7);
  m.AddDecision("chat");
  m.AddScrapeErrors("chat", 2);
  m.AddLoopPhase("collect", 0.5);
  m.AddLoopPhase("collect", 0.25);
  m.AddLoopPhase("services", 0.125);
  m.set_prom_queries_in_flight(4);
  ServiceGauges s{"chat", 1, 0, 2, 0, 3};
  const std::string text = m.Render(&snapshot, {}, {s}, 2);

  auto parsed = metrics::ParsePrometheusText(text);
  ASSERT_TRUE(parsed) << parsed.error().ToString() << "\n" << text;
  EXPECT_THAT(text, HasSubstr("# TYPE gpuscale_gpu_utilization_ratio gauge"));
  EXPECT_THAT(
      text,
      HasSubstr("gpuscale_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-0\",name=\"H100\"} 0.5"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "gpuscale_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-0\",name=\"H100\"} 536870912"));
  EXPECT_THAT(text, Not(HasSubstr("gpuscale_gpu_power_watts{")));  // unknown reading: absent
  EXPECT_THAT(text, HasSubstr("gpuscale_service_replicas{service=\"chat\",phase=\"ready\"} 2"));
  EXPECT_THAT(text, HasSubstr("gpuscale_service_desired_replicas{service=\"chat\"} 3"));
  EXPECT_THAT(text, HasSubstr("gpuscale_decisions_total{service=\"chat\"} 1"));
  EXPECT_THAT(text, HasSubstr("gpuscale_scrape_errors_total{service=\"chat\"} 2"));
  EXPECT_THAT(text, HasSubstr("gpuscale_control_loop_duration_seconds_bucket{le=\"0.025\"} 1"));
  EXPECT_THAT(text, HasSubstr("gpuscale_control_loop_duration_seconds_count 2"));
  EXPECT_THAT(text, HasSubstr("gpuscale_leases 2"));
  EXPECT_THAT(text, HasSubstr("gpuscale_prom_queries_in_flight 4"));
  EXPECT_THAT(text, HasSubstr("# TYPE gpuscale_control_loop_phase_seconds_total counter"));
  EXPECT_THAT(text, HasSubstr("gpuscale_control_loop_phase_seconds_total{phase=\"collect\"} 0.75"));
  EXPECT_THAT(text,
              HasSubstr("gpuscale_control_loop_phase_seconds_total{phase=\"services\"} 0.125"));
  const metrics::MetricFamily* loop = parsed->FindFamily("gpuscale_control_loop_duration_seconds");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->type, metrics::MetricType::kHistogram);
}

TEST(DaemonMetricsTest, PricedGpusHaveAPriceSeriesWithTypeAndUnpricedOnesNone) {
  gpu::GpuSnapshot snapshot;
  gpu::GpuInfo a100;
  a100.index = 4;
  a100.uuid = "GPU-4";
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.type = "A100-80GB";
  a100.price_per_hour = 0.52;
  a100.spot = true;
  gpu::GpuInfo unpriced = a100;
  unpriced.index = 5;
  unpriced.uuid = "GPU-5";
  unpriced.price_per_hour.reset();
  snapshot.gpus = {a100, unpriced};
  const std::string text = DaemonMetrics().Render(&snapshot, {}, {}, 0);
  ASSERT_TRUE(metrics::ParsePrometheusText(text)) << text;
  EXPECT_THAT(text, HasSubstr("# TYPE gpuscale_gpu_price_per_hour gauge"));
  EXPECT_THAT(text, HasSubstr("gpuscale_gpu_price_per_hour{gpu=\"4\",uuid=\"GPU-4\",name=\""
                              "NVIDIA A100-SXM4-80GB\",type=\"A100-80GB\",spot=\"true\"} 0.52"));
  EXPECT_THAT(text, Not(HasSubstr("gpuscale_gpu_price_per_hour{gpu=\"5\"")))
      << "unknown price: absent, not 0";
}

// Text format 0.0.4 as Prometheus reads it: every sample is named by a TYPE line (a
// histogram's by its _bucket, _sum and _count) that has a HELP line; counters end in _total.
TEST(DaemonMetricsTest, EverySampleHasATypedFamilyWithHelp) {
  DaemonMetrics m;
  m.AddDecision("chat");
  m.AddScrapeErrors("chat", 1);
  m.set_store_errors(1);
  m.ObserveLoop(0.1);
  const std::string text = m.Render(nullptr, {}, {ServiceGauges{"chat", 0, 0, 1, 0, 1}}, 0);
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> helped;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first, second, name, type;
    words >> first;
    if (first == "#") {
      words >> second >> name >> type;
      if (second == "TYPE") types[name] = type;
      if (second == "HELP") helped.insert(name);
      continue;
    }
    const std::string sample = first.substr(0, first.find('{'));
    std::string family = sample;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string base = sample.substr(0, sample.size() - std::string(suffix).size());
      if (sample.ends_with(suffix) && types.contains(base) && types.at(base) == "histogram") {
        family = base;
      }
    }
    ASSERT_TRUE(types.contains(family)) << sample << " has no TYPE line\n" << text;
    EXPECT_TRUE(helped.contains(family)) << family << " has no HELP line";
    if (types.at(family) == "counter") {
      EXPECT_TRUE(family.ends_with("_total")) << family;
    }
  }
  EXPECT_THAT(text, HasSubstr("# TYPE gpuscale_decisions_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE gpuscale_scrape_errors_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE gpuscale_store_errors_total counter"));
}

}  // namespace
}  // namespace gpuscale::daemon
