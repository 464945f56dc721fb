#include "scrape/prometheus_query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "orch/process_util.h"
#include "testing/loopback_server.h"
#include "testing/wait_until.h"

namespace gpuscale::metrics {
namespace {

using gpuscale::testing::WaitUntil;
using ::testing::HasSubstr;

// ---- QueryPrometheus against an in-process server ----

// The instant-query API on a loopback port; remembers the last query and Authorization.
class FakePrometheus : public testing::LoopbackServer {
 public:
  FakePrometheus() {
    server().Get("/api/v1/query", [this](const httplib::Request& req, httplib::Response& res) {
      last_query_ = req.get_param_value("query");
      last_auth_ = req.get_header_value("Authorization");
      // Slower than the client's timeout, which runs on the real clock.
      if (last_query_ == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(800));
      if (last_query_ == "bad(") {
        res.status = 400;
        res.set_content(R"({"status":"error","errorType":"bad_data","error":"unexpected end"})",
                        "application/json");
        return;
      }
      if (last_query_ == "overloaded") {
        res.status = 503;
        res.set_content(R"({"status":"error","errorType":"unavailable","error":"busy"})",
                        "application/json");
        return;
      }
      res.set_content(R"({"status":"success","data":{"resultType":"vector","result":[)"
                      R"({"metric":{},"value":[1700000000.5,"42"]}]}})",
                      "application/json");
    });
    server().Get("/prefix/api/v1/query", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status":"success","data":{"resultType":"scalar","result":[1,"8"]}})",
                      "application/json");
    });
    Start();
  }
  ~FakePrometheus() { Stop(); }  // before the members its handler writes go
  // Written by the server thread; read after the request has completed.
  const std::string& last_query() const { return last_query_; }
  const std::string& last_auth() const { return last_auth_; }

 private:
  std::string last_query_, last_auth_;
};

TEST(QueryPrometheusTest, SendsEncodedQueryAndToken) {
  FakePrometheus server;
  const std::string promql = R"(sum(rate(x_bucket{le="+Inf", job=~"a|b"}[5m])) / 2 & 1)";
  auto value =
      QueryPrometheus(server.Url(), promql, {.timeout = Seconds{5}, .bearer_token = "t0k"});
  ASSERT_TRUE(value) << value.error().ToString();
  EXPECT_EQ(*value, 42);
  EXPECT_EQ(server.last_query(), promql);  // survived URL encoding intact
  EXPECT_EQ(server.last_auth(), "Bearer t0k");
}

TEST(QueryPrometheusTest, NoTokenSendsNoAuthorization) {
  FakePrometheus server;
  ASSERT_TRUE(QueryPrometheus(server.Url(), "up"));
  EXPECT_EQ(server.last_auth(), "");
}

TEST(QueryPrometheusTest, UrlPathPrefixIsKept) {
  FakePrometheus server;
  auto value = QueryPrometheus(server.Url("/prefix/"), "up");
  ASSERT_TRUE(value) << value.error().ToString();
  EXPECT_EQ(*value, 8);
}

TEST(QueryPrometheusTest, BadRequestIsInvalidArgumentWithServerMessage) {
  FakePrometheus server;
  auto value = QueryPrometheus(server.Url(), "bad(");
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(value.error().message, HasSubstr("HTTP 400"));
  EXPECT_THAT(value.error().message, HasSubstr("bad_data: unexpected end"));
}

TEST(QueryPrometheusTest, ServerErrorIsUnavailable) {
  FakePrometheus server;
  auto value = QueryPrometheus(server.Url(), "overloaded");
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(value.error().message, HasSubstr("HTTP 503"));
  EXPECT_THAT(value.error().message, HasSubstr(server.Url()));
}

TEST(QueryPrometheusTest, WrongPathIsInvalidArgumentNamingTheUrl) {
  FakePrometheus server;
  auto value = QueryPrometheus(server.Url("/nope"), "up");
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(value.error().field, "url");
}

TEST(QueryPrometheusTest, UnreachablePortIsUnavailable) {
  auto port = orch::PickFreePort(0, 0, {});
  ASSERT_TRUE(port) << port.error().ToString();
  const std::string url = "http://127.0.0.1:" + std::to_string(*port);
  auto value = QueryPrometheus(url, "up", {.timeout = Seconds{2}, .bearer_token = ""});
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(value.error().message, HasSubstr(url));
}

TEST(QueryPrometheusTest, SlowServerTimesOutAsUnavailable) {
  FakePrometheus server;
  auto value = QueryPrometheus(server.Url(), "slow", {.timeout = Seconds{0.2}, .bearer_token = ""});
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(value.error().message, HasSubstr("timeout 0.2s"));
}

TEST(QueryPrometheusTest, BadUrlIsInvalidArgument) {
  for (const char* url : {"https://prom:9090", "prom:9090", "http://", "http://h:99999"}) {
    auto value = QueryPrometheus(url, "up");
    ASSERT_FALSE(value) << url;
    EXPECT_EQ(value.error().code, ErrorCode::kInvalidArgument) << url;
    EXPECT_EQ(value.error().field, "url") << url;
  }
}

// ---- Against a real Prometheus server ----

constexpr char kPrometheus[] = "/usr/bin/prometheus";

// A temp dir with a Prometheus config, and the Prometheus process scraping `target_port`;
// SIGTERM + reap and removal on destruction, whatever the test's outcome.
class RealPrometheus {
 public:
  explicit RealPrometheus(int target_port) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gpuscale-prom-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    std::ofstream(dir_ + "/prometheus.yml")
        << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        << "scrape_configs:\n"
        << "  - job_name: demo\n"
        << "    static_configs: [{targets: ['127.0.0.1:" << target_port << "']}]\n";
  }
  ~RealPrometheus() {
    if (pid_ > 0) Stop();
    std::filesystem::remove_all(dir_);
  }

  Status Start() {
    GS_ASSIGN_OR_RETURN(port_, orch::PickFreePort(0, 0, {}));
    orch::SpawnRequest request;
    request.argv = {kPrometheus, "--config.file=" + dir_ + "/prometheus.yml",
                    "--storage.tsdb.path=" + dir_ + "/data",
                    "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
    request.env = orch::ChildEnvironment({});
    request.log_path = log_path();
    GS_ASSIGN_OR_RETURN(pid_, orch::SpawnDetached(request));
    return OkStatus();
  }
  bool Exited() const { return orch::CheckExited(pid_).has_value(); }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log_path() const { return dir_ + "/prometheus.log"; }
  std::string Log() const {
    std::ifstream in(log_path());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  // SIGTERM, then SIGKILL if it has not exited within 10 s; reaped either way.
  void Stop() {
    orch::SignalGroup(pid_, SIGTERM);
    if (!WaitUntil([this] { return orch::CheckExited(pid_); }, std::chrono::seconds(10),
                   std::chrono::milliseconds(20))) {
      orch::SignalGroup(pid_, SIGKILL);
      WaitUntil([this] { return orch::CheckExited(pid_); }, std::chrono::hours(1));
    }
    pid_ = 0;
  }

  std::string dir_;
  int port_ = 0;
  int pid_ = 0;
};

TEST(QueryPrometheusTest, ReadsAGaugeThroughARealPrometheus) {
  ASSERT_TRUE(std::filesystem::exists(kPrometheus))
      << kPrometheus << " is missing: run scripts/setup (installs the Debian package "
      << "`prometheus`) to run this test";
  testing::LoopbackServer exporter;
  exporter.server().Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("# TYPE demo_queue_depth gauge\ndemo_queue_depth 7\n",
                    "text/plain; version=0.0.4");
  });
  ASSERT_TRUE(exporter.Start());
  const int exporter_port = exporter.port();

  RealPrometheus prometheus(exporter_port);
  auto started = prometheus.Start();
  ASSERT_TRUE(started) << started.error().ToString();
  Result<double> value = NotFound("not queried yet");
  // Until the real Prometheus has scraped the target (its own scrape interval, real time).
  WaitUntil(
      [&] {
        if (prometheus.Exited()) return true;
        value = QueryPrometheus(prometheus.Url(), "sum(demo_queue_depth)",
                                {.timeout = Seconds{2}, .bearer_token = ""});
        return value && *value == 7;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(200));
  ASSERT_TRUE(value && *value == 7)
      << "last result: " << (value ? std::to_string(*value) : value.error().ToString())
      << "\nprometheus log (" << prometheus.log_path() << "):\n"
      << prometheus.Log();
}

}  // namespace
}  // namespace gpuscale::metrics
