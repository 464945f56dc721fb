// The daemon's whole /metrics (its own families, the GPU gauges and the gateway's families)
// through `promtool check metrics`, Prometheus's own linter (Debian's prometheus package,
// which scripts/setup installs): a family whose TYPE line does not name its samples is
// stored by Prometheus without type or help, and promtool says so. The test fails, naming
// the package, when promtool is missing: a silent skip would let the format regress.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "cli_test_util.h"
#include "daemon_serve_fixture.h"

namespace gpuscale::daemon_test {
namespace {

constexpr char kPromtool[] = "/usr/bin/promtool";

// `promtool check metrics` reads the exposition on stdin.
cli_test::RunResult Promtool(const std::string& dir, const std::string& exposition) {
  const std::filesystem::path file = cli_test::WriteFile(dir, "metrics.txt", exposition);
  return cli_test::RunProgram(
      "/bin/sh", {"-c", std::string("exec ") + kPromtool + " check metrics < \"$1\"", "sh", file},
      dir);
}

TEST_F(DaemonServeTest, MetricsPassPromtoolCheck) {
  ASSERT_EQ(access(kPromtool, X_OK), 0)
      << kPromtool << " is missing: install Debian's `prometheus` package (scripts/setup does)";
  std::string service = Service(1, 1, kFastQueuePolicyYaml);
  service.replace(service.find("    gpus_per_replica"), 0, "    models: [m]\n");
  StartDaemon(Config(service));
  ASSERT_GT(daemon_.gateway_port(), 0) << daemon_.stdout_seen();
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  // A request through the gateway, so its per-service and per-replica families have samples.
  const std::string body = R"({"model": "m", "prompt": "hi", "max_tokens": 4})";
  EXPECT_EQ(Http(daemon_.gateway_port(), "POST", "/v1/completions", "", body).status, 200);

  httplib::Client client("127.0.0.1", Port());
  const httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  for (const char* family :
       {"# TYPE gpuscale_decisions_total counter", "# TYPE gpuscale_gpu_utilization_ratio gauge",
        "# TYPE gpuscale_gateway_requests_total counter",
        "gpuscale_gateway_added_latency_seconds_count{service="}) {
    EXPECT_THAT(metrics->body, ::testing::HasSubstr(family));
  }
  const cli_test::RunResult check = Promtool(dir_, metrics->body);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err << "\n--- /metrics ---\n"
                                << metrics->body;
  EXPECT_EQ(check.out + check.err, "");
}

}  // namespace
}  // namespace gpuscale::daemon_test
