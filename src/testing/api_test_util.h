// Shared by the api_test files: an ApiServer on 127.0.0.1, port 0, over a FakeDaemonApi,
// plus an httplib client pointed at it and sample request bodies.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "api/api_server.h"
#include "testing/fake_daemon_api.h"

namespace gpuscale::api {

inline const char* const kChatService = R"({
  "name": "chat",
  "command": ["vllm", "serve", "Qwen/Qwen2.5-7B", "--port", "{port}"],
  "env": {"HF_HOME": "/data/hf"},
  "gpus_per_replica": 1,
  "min_replicas": 1,
  "max_replicas": 4,
  "policy": {"family": "target",
             "target": {"metrics": [{"name": "vllm:num_requests_waiting",
                                     "type": "AverageValue", "average_value": 5}]}}
})";

// A service whose rules live in the store (no policy block).
inline const char* const kRulesService =
    R"({"name": "batch", "command": ["run", "{port}"], "min_replicas": 1, "max_replicas": 6})";

inline const char* const kScaleOutRule = R"({
  "name": "queue-high", "source": "inference_framework", "metric": "vllm:num_requests_waiting",
  "aggregation": "average", "comparator": "GREATER_THAN", "threshold": 10, "step_size": 1,
  "cooldown_seconds": 60, "min_replicas": 1, "max_replicas": 5
})";

class ApiServerTest : public ::testing::Test {
 protected:
  void StartServer(ApiServerOptions options = {}) {
    options.port = 0;
    server_ = std::make_unique<ApiServer>(daemon_, options);
    Result<int> port = server_->Start();
    ASSERT_TRUE(port.has_value()) << port.error().ToString();
    port_ = *port;
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(10, 0);
    if (!options.token.empty()) client_->set_bearer_token_auth(options.token.c_str());
  }
  void SetUp() override { StartServer(); }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
  }

  static nlohmann::json Body(const httplib::Result& result) {
    return nlohmann::json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  }
  // Asserts the error shape and returns the "error" object.
  static nlohmann::json ErrorOf(const httplib::Result& result) {
    nlohmann::json body = Body(result);
    EXPECT_TRUE(body.contains("error")) << result->body;
    if (!body.contains("error")) return nlohmann::json::object();
    EXPECT_TRUE(body["error"].contains("code"));
    EXPECT_TRUE(body["error"].contains("message"));
    EXPECT_TRUE(body["error"].contains("field"));
    return body["error"];
  }
  httplib::Result Post(const std::string& path, const std::string& body) {
    return client_->Post(path.c_str(), body, "application/json");
  }
  httplib::Result Put(const std::string& path, const std::string& body) {
    return client_->Put(path.c_str(), body, "application/json");
  }

  FakeDaemonApi daemon_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
  int port_ = 0;
};

}  // namespace gpuscale::api
