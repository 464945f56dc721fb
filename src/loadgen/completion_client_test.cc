// CompletionClient and the bench against a scripted fake server on 127.0.0.1 (port 0): the
// outcome of each way a stream can end, URL handling and the model query.
#include "loadgen/completion_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "loadgen/bench_runner.h"
#include "testing/loopback_server.h"

namespace gpuscale::loadgen {
namespace {

using nlohmann::json;

// Answers POST /v1/completions according to the request's "model": ok, no_done,
// error_event, garbage, busy (503); GET /v1/models lists "fake-model".
class FakeServer : public testing::LoopbackServer {
 public:
  explicit FakeServer(std::string prefix = "") {
    server().Post(prefix + "/v1/completions",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    const json body = json::parse(req.body);
                    {
                      std::lock_guard lock(mu_);
                      last_prompt_ = body["prompt"];
                      last_headers_ = req.headers;
                    }
                    const std::string mode = body["model"];
                    if (mode == "busy") {
                      res.status = 503;
                      res.set_content(R"({"error": {"message": "overloaded"}})",
                                      "application/json");
                      return;
                    }
                    std::string events;
                    for (int i = 0; i < body["max_tokens"].get<int>(); ++i) {
                      events += "data: {\"choices\": [{\"text\": \" w\"}]}\n\n";
                    }
                    if (mode == "error_event")
                      events += "data: {\"error\": {\"message\": \"boom\"}}\n\n";
                    if (mode == "garbage") events += "data: {not json\n\n";
                    if (mode == "ok")
                      events +=
                          "data: {\"choices\": [], \"usage\": {\"completion_tokens\": 3}}\n\n";
                    if (mode != "no_done") events += "data: [DONE]\n\n";
                    res.set_content(events, "text/event-stream");
                  });
    server().Get(prefix + "/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object": "list", "data": [{"id": "fake-model"}]})", "application/json");
    });
    Start();
  }
  ~FakeServer() { Stop(); }

  std::string last_prompt() {
    std::lock_guard lock(mu_);
    return last_prompt_;
  }
  httplib::Headers last_headers() {
    std::lock_guard lock(mu_);
    return last_headers_;
  }

 private:
  std::mutex mu_;
  std::string last_prompt_;        // guarded by mu_
  httplib::Headers last_headers_;  // guarded by mu_
};

RequestOutcome SendOne(const std::string& url, const std::string& model, int32_t max_tokens) {
  CompletionClient client(*ParseServerUrl(url), model, ClientOptions{});
  return client.Send(PlannedRequest{0, 0, 5, max_tokens});
}

TEST(CompletionClientTest, TimesAStreamAndTakesTheServersTokenCount) {
  FakeServer server;
  RequestOutcome outcome = SendOne(server.Url(), "ok", 4);
  ASSERT_TRUE(outcome.ok) << outcome.error_kind << " " << outcome.error_detail;
  EXPECT_EQ(outcome.output_tokens, 3);  // the usage event wins over the 4 content events
  EXPECT_EQ(outcome.input_tokens, 5);
  EXPECT_EQ(outcome.inter_token_seconds.size(), 3u);
  EXPECT_GT(outcome.ttft_seconds, 0);
  EXPECT_GE(outcome.e2e_seconds, outcome.ttft_seconds);
}

TEST(CompletionClientTest, ClassifiesFailures) {
  FakeServer server;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"no_done", "incomplete_stream"},
      {"error_event", "server_error_event"},
      {"garbage", "invalid_event"},
      {"busy", "http_503"},
  };
  for (const auto& [mode, kind] : cases) {
    RequestOutcome outcome = SendOne(server.Url(), mode, 2);
    EXPECT_FALSE(outcome.ok) << mode;
    EXPECT_EQ(outcome.error_kind, kind) << mode;
  }
  EXPECT_NE(SendOne(server.Url(), "busy", 1).error_detail.find("overloaded"), std::string::npos);
}

TEST(CompletionClientTest, ReportsAConnectionError) {
  int port = 0;
  {
    FakeServer closed;  // take a free port, then close it
    port = ParseServerUrl(closed.Url()).has_value() ? std::stoi(closed.Url().substr(17)) : 0;
  }
  RequestOutcome outcome = SendOne("http://127.0.0.1:" + std::to_string(port), "ok", 1);
  EXPECT_EQ(outcome.error_kind, "connection_error");
  Result<std::string> model =
      FetchFirstModel(*ParseServerUrl("http://127.0.0.1:" + std::to_string(port)), 2);
  ASSERT_FALSE(model.has_value());
  EXPECT_EQ(model.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(model.error().field, "--url");
}

TEST(CompletionClientTest, FollowsAPathPrefixAndFetchesTheModel) {
  FakeServer server("/serve/llama");
  Result<std::string> model =
      FetchFirstModel(*ParseServerUrl(server.Url() + "/serve/llama/v1/"), 2);
  ASSERT_TRUE(model.has_value()) << model.error().ToString();
  EXPECT_EQ(*model, "fake-model");
  EXPECT_TRUE(SendOne(server.Url() + "/serve/llama", "ok", 2).ok);
}

TEST(CompletionClientTest, SendsTheRequestsPromptElseOneWordPerToken) {
  FakeServer server;
  CompletionClient client(*ParseServerUrl(server.Url()), "ok", ClientOptions{});
  PlannedRequest request{0, 0, 3, 1};
  ASSERT_TRUE(client.Send(request).ok);
  EXPECT_EQ(server.last_prompt(), PromptText(3));
  request.prompt = "w1 w2 w3";  // a trace row's block text
  ASSERT_TRUE(client.Send(request).ok);
  EXPECT_EQ(server.last_prompt(), "w1 w2 w3");
}

TEST(CompletionClientTest, SendsTheRequestsPriorityAndTenantAsHeadersWhenItHasThem) {
  FakeServer server;
  ClientOptions options;
  options.tenant_header = "x-tenant";  // the flag's value, not the default
  CompletionClient client(*ParseServerUrl(server.Url()), "ok", options);
  PlannedRequest request{0, 0, 3, 1};
  request.priority = route::Priority::kSheddable;
  request.tenant = "tenant-2";
  const RequestOutcome outcome = client.Send(request);
  ASSERT_TRUE(outcome.ok);
  httplib::Headers headers = server.last_headers();
  ASSERT_EQ(headers.count("x-gpuscale-priority"), 1u);
  EXPECT_EQ(headers.find("x-gpuscale-priority")->second, "sheddable");
  ASSERT_EQ(headers.count("x-tenant"), 1u);
  EXPECT_EQ(headers.find("x-tenant")->second, "tenant-2");
  EXPECT_EQ(outcome.priority, route::Priority::kSheddable);  // the report's class
  EXPECT_EQ(outcome.tenant, "tenant-2");

  ASSERT_TRUE(client.Send(PlannedRequest{1, 0, 3, 1}).ok);  // a request without either
  headers = server.last_headers();
  EXPECT_EQ(headers.count("x-gpuscale-priority"), 0u);
  EXPECT_EQ(headers.count("x-tenant"), 0u);
}

TEST(CompletionClientTest, PromptHasOneWordPerToken) {
  const std::string prompt = PromptText(37);
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), ' '), 36);
  EXPECT_EQ(PromptText(1), "the");
}

TEST(BenchRunnerTest, RunsAgainstAFakeServerAndCountsErrorsByKind) {
  FakeServer server;
  BenchOptions options;
  options.url = server.Url();
  options.model = "busy";  // every request fails with 503
  options.concurrency = 2;
  options.duration_seconds = 0.2;
  options.workload.max_requests = 6;
  Result<BenchReport> report = RunBench(options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->requests_sent, 6);
  EXPECT_EQ(report->requests_failed, 6);
  EXPECT_EQ(report->errors_by_kind.at("http_503"), 6);
  EXPECT_EQ(report->ttft_seconds.count, 0);

  options.model = "";  // asks /v1/models: "fake-model" is not a mode the fake knows
  options.workload.max_requests = 1;
  report = RunBench(options);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->model, "fake-model");
}

}  // namespace
}  // namespace gpuscale::loadgen
