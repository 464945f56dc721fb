#include "emulator/fleet_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "metrics/metric_lookup.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::emulator {
namespace {

using nlohmann::json;

class FleetServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<FleetServer>> fleet = FleetServer::Start(FleetOptions{});
    ASSERT_TRUE(fleet.has_value()) << fleet.error().ToString();
    fleet_ = std::move(*fleet);
    control_ = std::make_unique<httplib::Client>("127.0.0.1", fleet_->port());
    control_->set_read_timeout(5, 0);
  }

  static httplib::Result Get(int port, const std::string& path) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(1, 0);
    client.set_read_timeout(2, 0);
    return client.Get(path);
  }

  std::unique_ptr<FleetServer> fleet_;
  std::unique_ptr<httplib::Client> control_;
};

// Each replica has a port of its own that answers /health and vLLM's /metrics for its load.
TEST_F(FleetServerTest, ReplicasServeHealthAndTheirLoadOnTheirOwnPorts) {
  httplib::Result added = control_->Post("/replicas", R"({"id": "svc-0"})", "application/json");
  ASSERT_TRUE(added);
  ASSERT_EQ(added->status, 200) << added->body;
  const int port = json::parse(added->body)["port"];
  EXPECT_EQ(*fleet_->AddReplica("svc-0"), port) << "the same id keeps its port";
  Result<int> other = fleet_->AddReplica("svc-1");
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(*other, port);
  EXPECT_EQ(fleet_->replica_count(), 2u);

  httplib::Result health = Get(port, "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  httplib::Result load =
      control_->Put("/replicas/svc-0/load", R"({"running": 8, "waiting": 3})", "application/json");
  ASSERT_TRUE(load);
  EXPECT_EQ(load->status, 204) << load->body;
  httplib::Result metrics = Get(port, "/metrics");
  ASSERT_TRUE(metrics);
  Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(metrics->body);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:num_requests_waiting"), 3);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:num_requests_running"), 8);
  EXPECT_GT(*metrics::FindValue(*parsed, "vllm:kv_cache_usage_perc"), 0);

  httplib::Result listed = control_->Get("/replicas");
  ASSERT_TRUE(listed);
  EXPECT_EQ(json::parse(listed->body)["replicas"].size(), 2u);
  httplib::Result removed = control_->Delete("/replicas/svc-0");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 204);
  EXPECT_EQ(fleet_->replica_count(), 1u);
  EXPECT_FALSE(Get(port, "/health")) << "the removed replica's port is closed";
}

TEST_F(FleetServerTest, BadControlRequestsAreRefusedNamingTheField) {
  struct Case {
    std::string method, path, body;
    int status;
    std::string field;
  };
  ASSERT_TRUE(fleet_->AddReplica("a").has_value());
  const std::vector<Case> cases = {
      {"POST", "/replicas", "not json", 400, "id"},
      {"POST", "/replicas", R"({"id": ""})", 400, "id"},
      {"POST", "/replicas", R"({"id": 7})", 400, "id"},
      {"PUT", "/replicas/a/load", R"({"running": -1})", 400, "running"},
      {"PUT", "/replicas/a/load", R"({"waiting": "many"})", 400, "waiting"},
      {"PUT", "/replicas/nope/load", R"({"waiting": 1})", 404, "id"},
      {"DELETE", "/replicas/nope", "", 404, "id"},
      {"GET", "/nowhere", "", 404, "path"},
  };
  for (const Case& c : cases) {
    httplib::Result res = c.method == "POST"  ? control_->Post(c.path, c.body, "application/json")
                          : c.method == "PUT" ? control_->Put(c.path, c.body, "application/json")
                          : c.method == "DELETE" ? control_->Delete(c.path)
                                                 : control_->Get(c.path);
    ASSERT_TRUE(res) << c.method << " " << c.path;
    EXPECT_EQ(res->status, c.status) << c.method << " " << c.path << " " << c.body;
    EXPECT_EQ(json::parse(res->body, nullptr, false)["field"], c.field) << res->body;
  }
  EXPECT_EQ(fleet_->SetLoad("a", 0, -2).error().field, "waiting");
}

}  // namespace
}  // namespace gpuscale::emulator
