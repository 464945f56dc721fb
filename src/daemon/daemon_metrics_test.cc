// gpuscale's own /metrics: families, labels, HELP/TYPE, parseable output.
#include "daemon/daemon_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  const metrics::MetricFamily* loop = parsed->FindFamily("gpuscale_control_loop_duration_seconds");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->type, metrics::MetricType::kHistogram);
}

}  // namespace
}  // namespace gpuscale::daemon
