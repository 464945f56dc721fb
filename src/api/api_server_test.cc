// Server-level behaviour over a real server on 127.0.0.1: GPUs, leases, health, metrics,
// routing errors, auth, limits, static files, binding and concurrency.
#include "api/api_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/api_test_util.h"

namespace gpuscale::api {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

gpu::GpuInfo SampleGpu(int index) {
  gpu::GpuInfo g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.name = "NVIDIA H100 80GB HBM3";
  g.memory_total_mb = 81559;
  g.memory_used_mb = 1024;
  g.memory_free_mb = 80535;
  g.utilization_percent = 25;
  return g;  // temperature and power unknown
}

TEST_F(ApiServerTest, GpusInCliJsonShape) {
  daemon_.SetGpus(gpu::GpuSnapshot{"simulated", Seconds{1700000000.0}, {SampleGpu(0)}, {}});
  httplib::Result res = client_->Get("/v1/gpus");
  ASSERT_EQ(res->status, 200);
  json body = Body(res);
  EXPECT_EQ(body["backend"], "simulated");
  EXPECT_EQ(body["timestamp"], "2023-11-14T22:13:20.000Z");
  json g = body["gpus"][0];
  EXPECT_EQ(g["index"], 0);
  EXPECT_EQ(g["uuid"], "GPU-0");
  EXPECT_EQ(g["memory_free_mb"], 80535);
  EXPECT_TRUE(g["temperature_c"].is_null());
  EXPECT_TRUE(g["power_draw_w"].is_null());
  // 0.6 * 80535/81559 + 0.4 * 0.75, rounded to 4 places.
  EXPECT_DOUBLE_EQ(g["score"].get<double>(), 0.8925);
  EXPECT_TRUE(g["type"].is_null()) << "SampleGpu sets no type";
  EXPECT_TRUE(g["price_per_hour"].is_null()) << "unknown price: null, never 0";
  EXPECT_EQ(g["spot"], false);
}

TEST_F(ApiServerTest, GpusCarryTypeAndPrice) {
  gpu::GpuInfo a100 = SampleGpu(4);
  a100.type = "A100-80GB";
  a100.price_per_hour = 0.52;
  a100.spot = true;
  daemon_.SetGpus(gpu::GpuSnapshot{"simulated", Seconds{1700000000.0}, {a100}, {}});
  const json g = Body(client_->Get("/v1/gpus"))["gpus"][0];
  EXPECT_EQ(g["type"], "A100-80GB");
  EXPECT_EQ(g["price_per_hour"], 0.52);
  EXPECT_EQ(g["spot"], true);
}

TEST_F(ApiServerTest, GpuBackendFailureIs503) {
  daemon_.SetGpus(Unavailable("nvidia-smi not found; install the NVIDIA driver"));
  httplib::Result res = client_->Get("/v1/gpus");
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(ErrorOf(res)["code"], "unavailable");
}

TEST_F(ApiServerTest, GpuHistoryWindowDefaultsAndValidates) {
  daemon_.SetHistory(
      {{Seconds{1700000000.0}, {SampleGpu(0)}}, {Seconds{1700000005.0}, {SampleGpu(0)}}});
  httplib::Result res = client_->Get("/v1/gpus/history");
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(Body(res)["points"].size(), 2u);
  EXPECT_EQ(Body(res)["points"][1]["timestamp"], "2023-11-14T22:13:25.000Z");
  EXPECT_EQ(daemon_.last_history_window(), Seconds{300});
  ASSERT_EQ(client_->Get("/v1/gpus/history?seconds=60")->status, 200);
  EXPECT_EQ(daemon_.last_history_window(), Seconds{60});
  for (const char* bad : {"0", "86401", "-5", "abc", "1.5"}) {
    httplib::Result r = client_->Get((std::string("/v1/gpus/history?seconds=") + bad).c_str());
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_EQ(ErrorOf(r)["field"], "seconds") << bad;
  }
}

TEST_F(ApiServerTest, ListsLeases) {
  daemon_.SetLeases({{"GPU-0", 0, "", "replica/chat-1", Seconds{1700000000.0}, "H100-80GB"},
                     {"GPU-1", 1, "", "replica/chat-2", Seconds{1700000000.0}, ""}});
  httplib::Result res = client_->Get("/v1/leases");
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(Body(res)["leases"][0], json({{"key", "GPU-0"},
                                          {"gpu_index", 0},
                                          {"node", ""},
                                          {"owner", "replica/chat-1"},
                                          {"gpu_type", "H100-80GB"},
                                          {"acquired_at", "2023-11-14T22:13:20.000Z"}}));
  EXPECT_TRUE(Body(res)["leases"][1]["gpu_type"].is_null());
}

TEST_F(ApiServerTest, HealthAndReadiness) {
  httplib::Result health = client_->Get("/healthz");
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Body(health), json({{"status", "ok"}}));
  EXPECT_EQ(client_->Get("/readyz")->status, 200);
  daemon_.SetReady(Unavailable("the first control-loop tick has not run yet"));
  httplib::Result ready = client_->Get("/readyz");
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ErrorOf(ready)["message"].get<std::string>().find("first control-loop tick"),
            std::string::npos);
}

TEST_F(ApiServerTest, MetricsInPrometheusTextFormat) {
  httplib::Result res = client_->Get("/metrics");
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(res->body.find("gpuscale_up 1"), std::string::npos);
}

TEST_F(ApiServerTest, UnknownRouteIs404WithErrorBody) {
  for (const char* path : {"/v1/nothing", "/", "/v1/services/a/b/c/d"}) {
    httplib::Result res = client_->Get(path);
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_EQ(ErrorOf(res)["code"], "not_found") << path;
  }
  httplib::Result long_path = client_->Get(("/v1/" + std::string(4000, 'a')).c_str());
  EXPECT_EQ(long_path->status, 404);
}

TEST_F(ApiServerTest, WrongMethodIs405WithAllow) {
  httplib::Result res = client_->Delete("/v1/gpus");
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET, HEAD");
  EXPECT_EQ(ErrorOf(res)["code"], "method_not_allowed");
  httplib::Result patch = client_->Patch("/v1/services/chat", "{}", "application/json");
  EXPECT_EQ(patch->status, 405);
  EXPECT_EQ(patch->get_header_value("Allow"), "DELETE, GET, HEAD, PUT");
  EXPECT_EQ(Post("/v1/leases", "{}")->status, 405);
}

TEST_F(ApiServerTest, TrailingSlashIsTheSameRoute) {
  EXPECT_EQ(client_->Get("/v1/services/")->status, 200);
}

TEST_F(ApiServerTest, BodyOverOneMebibyteIs413) {
  const std::string big = "{\"name\": \"" + std::string(1 << 20, 'a') + "\"}";
  httplib::Result res = Post("/v1/services", big);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(ErrorOf(res)["code"], "payload_too_large");
}

class ApiServerAuthTest : public ApiServerTest {
 protected:
  void SetUp() override { StartServer({.token = "s3cret-token"}); }
};

TEST_F(ApiServerAuthTest, CorrectTokenIsAccepted) {
  EXPECT_EQ(client_->Get("/v1/services")->status, 200);
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
}

TEST_F(ApiServerAuthTest, MissingOrWrongTokenIs401) {
  httplib::Client anonymous("127.0.0.1", port_);
  httplib::Client wrong("127.0.0.1", port_);
  wrong.set_bearer_token_auth("s3cret-tokeX");
  httplib::Client prefix("127.0.0.1", port_);
  prefix.set_bearer_token_auth("s3cret");
  for (httplib::Client* client : {&anonymous, &wrong, &prefix}) {
    for (const char* path : {"/v1/services", "/v1/gpus", "/metrics", "/v1/nothing"}) {
      httplib::Result res = client->Get(path);
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 401) << path;
      EXPECT_EQ(res->get_header_value("WWW-Authenticate").rfind("Bearer", 0), 0u);
      EXPECT_EQ(ErrorOf(res)["code"], "unauthenticated");
    }
    EXPECT_EQ(client->Post("/v1/services", kChatService, "application/json")->status, 401);
  }
  EXPECT_TRUE(daemon_.ListServices().empty());  // the unauthenticated POST did nothing
}

TEST_F(ApiServerAuthTest, ProbesNeedNoToken) {
  httplib::Client anonymous("127.0.0.1", port_);
  EXPECT_EQ(anonymous.Get("/healthz")->status, 200);
  EXPECT_EQ(anonymous.Get("/readyz")->status, 200);
}

class ApiServerStaticTest : public ApiServerTest {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscale_api_test_" + std::to_string(getpid()));
    fs::create_directories(dir_ / "web" / "assets");
    Write(dir_ / "web" / "index.html", "<h1>gpuscale</h1>");
    Write(dir_ / "web" / "assets" / "app.js", "console.log(1);");
    Write(dir_ / "secret.txt", "do not serve");
    fs::create_symlink(dir_ / "secret.txt", dir_ / "web" / "link.txt");
    StartServer({.token = "t", .web_root = (dir_ / "web").string()});
  }
  void TearDown() override {
    ApiServerTest::TearDown();
    fs::remove_all(dir_);
  }
  static void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  fs::path dir_;
};

TEST_F(ApiServerStaticTest, ServesIndexAndFilesWithoutToken) {
  httplib::Client browser("127.0.0.1", port_);
  httplib::Result index = browser.Get("/");
  ASSERT_EQ(index->status, 200);
  EXPECT_EQ(index->body, "<h1>gpuscale</h1>");
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  httplib::Result js = browser.Get("/assets/app.js");
  ASSERT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(browser.Get("/missing.css")->status, 401);  // not a file: an API path, token needed
  EXPECT_EQ(client_->Get("/missing.css")->status, 404);
}

TEST_F(ApiServerStaticTest, RefusesTraversal) {
  for (const char* path : {"/../secret.txt", "/assets/../../secret.txt", "/%2e%2e/secret.txt",
                           "/link.txt", "/assets/..%2f..%2fsecret.txt"}) {
    httplib::Result res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_NE(res->status, 200) << path;
    EXPECT_EQ(res->body.find("do not serve"), std::string::npos) << path;
  }
}

TEST(ApiServerBindTest, ListensOnLoopbackByDefault) {
  EXPECT_EQ(ApiServerOptions{}.host, "127.0.0.1");
  FakeDaemonApi daemon;
  ApiServer server(daemon, {.port = 0});
  Result<int> port = server.Start();
  ASSERT_TRUE(port.has_value());
  EXPECT_EQ(server.port(), *port);
  httplib::Client client("127.0.0.1", *port);
  EXPECT_EQ(client.Get("/healthz")->status, 200);
  server.Stop();
  server.Stop();  // idempotent
  EXPECT_EQ(server.port(), 0);
  EXPECT_FALSE(client.Get("/healthz"));
}

TEST(ApiServerBindTest, PortInUseIsUnavailableNamingTheAddress) {
  FakeDaemonApi daemon;
  ApiServer first(daemon, {.port = 0});
  Result<int> port = first.Start();
  ASSERT_TRUE(port.has_value());
  ApiServer second(daemon, {.port = *port});
  Result<int> again = second.Start();
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(again.error().message.find("127.0.0.1:" + std::to_string(*port)), std::string::npos);
  EXPECT_EQ(first.Start().error().code, ErrorCode::kFailedPrecondition);
}

TEST(ApiServerBindTest, BadWebRootIsInvalidArgument) {
  FakeDaemonApi daemon;
  ApiServer server(daemon, {.port = 0, .web_root = "/nonexistent/gpuscale/web"});
  Result<int> port = server.Start();
  ASSERT_FALSE(port.has_value());
  EXPECT_EQ(port.error().field, "web_root");
}

TEST_F(ApiServerTest, ServesConcurrentClients) {
  ASSERT_EQ(Post("/v1/services", kRulesService)->status, 201);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", port_);
      for (int i = 0; i < 10; ++i) {
        const std::string rule = "{\"name\": \"r" + std::to_string(t * 10 + i) +
                                 "\", \"metric\": \"m\", \"comparator\": \"LESS_THAN\", "
                                 "\"threshold\": 1, \"step_size\": -1}";
        httplib::Result add = client.Post("/v1/services/batch/rules", rule, "application/json");
        httplib::Result get = client.Get("/v1/services/batch");
        if (add && add->status == 201 && get && get->status == 200) ++ok;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 80);
  json rules = Body(client_->Get("/v1/services/batch/rules"))["rules"];
  EXPECT_EQ(rules.size(), 80u);
}

}  // namespace
}  // namespace gpuscale::api
