// Services, rules and replicas endpoints over a real server and FakeDaemonApi.
#include <gtest/gtest.h>

#include <string>

#include "testing/api_test_util.h"

namespace gpuscale::api {
namespace {

using nlohmann::json;

TEST_F(ApiServerTest, CreatesServiceWith201AndLocation) {
  httplib::Result res = Post("/v1/services", kChatService);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(res->get_header_value("Location"), "/v1/services/chat");
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  json body = Body(res);
  EXPECT_EQ(body["name"], "chat");
  EXPECT_EQ(body["policy_family"], "target");
  EXPECT_EQ(body["min_replicas"], 1);
  EXPECT_EQ(body["max_replicas"], 4);
  EXPECT_TRUE(body["manual_replicas"].is_null());
  EXPECT_TRUE(body["last_decision"].is_null());
  EXPECT_EQ(body["created_at"], "2023-11-14T22:13:20.000Z");
  // The spec is an object, the policy included; argv words stay strings.
  ASSERT_TRUE(body["spec"].is_object()) << body.dump();
  EXPECT_EQ(body["spec"]["command"],
            json({"vllm", "serve", "Qwen/Qwen2.5-7B", "--port", "{port}"}));
  EXPECT_EQ(body["spec"]["env"]["HF_HOME"], "/data/hf");
  EXPECT_EQ(body["spec"]["gpus_per_replica"], 1);
  EXPECT_EQ(body["spec"]["policy"]["family"], "target");
  EXPECT_EQ(body["spec"]["policy"]["target"]["metrics"][0]["average_value"], 5);
}

TEST_F(ApiServerTest, DuplicateServiceIs409) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  httplib::Result res = Post("/v1/services", kChatService);
  EXPECT_EQ(res->status, 409);
  json error = ErrorOf(res);
  EXPECT_EQ(error["code"], "failed_precondition");
  EXPECT_EQ(error["field"], "name");
}

struct BadBodyCase {
  const char* name;
  const char* body;
  const char* field;
  const char* message_part;
};

class BadServiceBodyTest : public ApiServerTest,
                           public ::testing::WithParamInterface<BadBodyCase> {};

TEST_P(BadServiceBodyTest, Is400NamingTheField) {
  const BadBodyCase& c = GetParam();
  httplib::Result res = Post("/v1/services", c.body);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  json error = ErrorOf(res);
  EXPECT_EQ(error["code"], "invalid_argument");
  EXPECT_EQ(error["field"], c.field) << res->body;
  EXPECT_NE(error["message"].get<std::string>().find(c.message_part), std::string::npos)
      << res->body;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadServiceBodyTest,
    ::testing::Values(
        BadBodyCase{"MalformedJson", "{\n  \"name\": \"chat\",\n  oops\n}", "body",
                    "line 3, column 3"},
        BadBodyCase{"NotAnObject", "[1, 2]", "body", "expected a JSON object"},
        BadBodyCase{"EmptyBody", "", "body", "malformed JSON"},
        BadBodyCase{"GpusNotInteger",
                    R"({"name": "chat", "command": ["x"], "gpus_per_replica": "two"})",
                    "gpus_per_replica", "two"},
        BadBodyCase{"UnknownKey", R"({"name": "chat", "command": ["x"], "gpu": 1})", "gpu",
                    "unknown"},
        BadBodyCase{"BadName", R"({"name": "Chat!", "command": ["x"]})", "name", "Chat!"},
        BadBodyCase{"BadPolicy",
                    R"({"name": "c", "command": ["x"], "policy": {"family": "magic"}})",
                    "policy.family", "magic"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(ApiServerTest, ListsAndGetsServices) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  ASSERT_EQ(Post("/v1/services", kRulesService)->status, 201);
  daemon_.SetLastDecision("chat", Seconds{1700000060.0}, "queue above target");
  httplib::Result list = client_->Get("/v1/services");
  ASSERT_EQ(list->status, 200);
  json services = Body(list)["services"];
  ASSERT_EQ(services.size(), 2u);
  EXPECT_EQ(services[0]["name"], "batch");
  EXPECT_EQ(services[1]["name"], "chat");
  httplib::Result one = client_->Get("/v1/services/chat");
  ASSERT_EQ(one->status, 200);
  json decision = Body(one)["last_decision"];
  EXPECT_EQ(decision["at"], "2023-11-14T22:14:20.000Z");
  EXPECT_EQ(decision["reason"], "queue above target");
  EXPECT_EQ(decision["details"], json({"detail one"}));
}

TEST_F(ApiServerTest, UnknownServiceIs404) {
  for (const char* path :
       {"/v1/services/nope", "/v1/services/nope/rules", "/v1/services/nope/replicas"}) {
    httplib::Result res = client_->Get(path);
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_EQ(ErrorOf(res)["code"], "not_found") << path;
  }
  EXPECT_EQ(client_->Delete("/v1/services/nope")->status, 404);
  EXPECT_EQ(Put("/v1/services/nope/replicas", R"({"replicas": 1})")->status, 404);
  EXPECT_EQ(Post("/v1/services/nope/rules", kScaleOutRule)->status, 404);
}

TEST_F(ApiServerTest, UpdatesServiceTakingNameFromPath) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  httplib::Result res =
      Put("/v1/services/chat", R"({"command": ["other", "{port}"], "max_replicas": 2})");
  ASSERT_EQ(res->status, 200) << res->body;
  json body = Body(res);
  EXPECT_EQ(body["name"], "chat");
  EXPECT_EQ(body["max_replicas"], 2);
  EXPECT_EQ(body["policy_family"], "rules");
  EXPECT_EQ(body["created_at"], "2023-11-14T22:13:20.000Z");
}

TEST_F(ApiServerTest, UpdateWithOtherNameIs400OnName) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  httplib::Result res = Put("/v1/services/chat", R"({"name": "other", "command": ["x"]})");
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(ErrorOf(res)["field"], "name");
  EXPECT_EQ(Put("/v1/services/ghost", R"({"command": ["x"]})")->status, 404);
}

TEST_F(ApiServerTest, DeletesService) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  httplib::Result res = client_->Delete("/v1/services/chat");
  EXPECT_EQ(res->status, 204);
  EXPECT_EQ(client_->Get("/v1/services/chat")->status, 404);
}

TEST_F(ApiServerTest, AddsListsGetsAndDeletesRules) {
  ASSERT_EQ(Post("/v1/services", kRulesService)->status, 201);
  httplib::Result added = Post("/v1/services/batch/rules", kScaleOutRule);
  ASSERT_EQ(added->status, 201) << added->body;
  json rule = Body(added);
  EXPECT_EQ(rule["id"], 1);
  EXPECT_EQ(added->get_header_value("Location"), "/v1/services/batch/rules/1");
  EXPECT_EQ(rule["comparator"], "GREATER_THAN");
  EXPECT_EQ(rule["threshold"], 10.0);
  EXPECT_EQ(rule["cooldown_seconds"], 60.0);
  EXPECT_EQ(rule["enabled"], true);
  EXPECT_EQ(rule["created_at"], "2023-11-14T22:15:00.000Z");
  // Defaults: source/aggregation, bounds from the service, enabled as given.
  httplib::Result second = Post("/v1/services/batch/rules",
                                R"({"name": "idle", "metric": "vllm:num_requests_running",
                                    "comparator": "LESS_THAN", "threshold": 1,
                                    "step_size": -1, "enabled": false})");
  ASSERT_EQ(second->status, 201) << second->body;
  EXPECT_EQ(Body(second)["source"], "inference_framework");
  EXPECT_EQ(Body(second)["aggregation"], "average");
  EXPECT_EQ(Body(second)["min_replicas"], 1);
  EXPECT_EQ(Body(second)["max_replicas"], 6);
  EXPECT_EQ(Body(second)["enabled"], false);

  EXPECT_EQ(Body(client_->Get("/v1/services/batch/rules"))["rules"].size(), 2u);
  EXPECT_EQ(Body(client_->Get("/v1/services/batch/rules/2"))["name"], "idle");
  EXPECT_EQ(client_->Get("/v1/services/batch/rules/9")->status, 404);
  EXPECT_EQ(client_->Delete("/v1/services/batch/rules/1")->status, 204);
  EXPECT_EQ(client_->Delete("/v1/services/batch/rules?id=2")->status, 204);
  EXPECT_EQ(client_->Delete("/v1/services/batch/rules/1")->status, 404);
  EXPECT_EQ(ErrorOf(client_->Delete("/v1/services/batch/rules"))["field"], "id");
  EXPECT_EQ(ErrorOf(client_->Delete("/v1/services/batch/rules/abc"))["field"], "id");
  EXPECT_TRUE(Body(client_->Get("/v1/services/batch/rules"))["rules"].empty());
}

TEST_F(ApiServerTest, AcceptsPrometheusRuleSource) {
  ASSERT_EQ(Post("/v1/services", kRulesService)->status, 201);
  httplib::Result res = Post("/v1/services/batch/rules",
                             R"({"name": "slo", "source": "prometheus", "metric": "ratio",
                                 "comparator": "GREATER_THAN_OR_EQUAL", "threshold": 0.1,
                                 "step_size": 2})");
  ASSERT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(Body(res)["source"], "prometheus");
}

class BadRuleBodyTest : public ApiServerTest, public ::testing::WithParamInterface<BadBodyCase> {};

TEST_P(BadRuleBodyTest, Is400NamingTheField) {
  ASSERT_EQ(Post("/v1/services", kRulesService)->status, 201);
  const BadBodyCase& c = GetParam();
  httplib::Result res = Post("/v1/services/batch/rules", c.body);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  json error = ErrorOf(res);
  EXPECT_EQ(error["field"], c.field) << res->body;
  EXPECT_NE(error["message"].get<std::string>().find(c.message_part), std::string::npos)
      << res->body;
}

// A valid rule body but for the fields given in `fields` (no key appears twice).
#define RULE(fields) \
  "{\"name\": \"r\", \"metric\": \"m\", \"comparator\": \"LESS_THAN\", " fields "}"
#define STEP_AND_THRESHOLD "\"threshold\": 1, \"step_size\": 1"

INSTANTIATE_TEST_SUITE_P(
    Cases, BadRuleBodyTest,
    ::testing::Values(
        BadBodyCase{"BadComparator",
                    R"({"name": "r", "metric": "m", "comparator": "GT", "threshold": 1,
                        "step_size": 1})",
                    "comparator", "LESS_THAN"},
        BadBodyCase{"ZeroStep", RULE("\"threshold\": 1, \"step_size\": 0"), "step_size",
                    "must not be 0"},
        BadBodyCase{"BadSource", RULE(STEP_AND_THRESHOLD ", \"source\": \"gpu\""), "source",
                    "kernel"},
        BadBodyCase{"NegativeCooldown", RULE(STEP_AND_THRESHOLD ", \"cooldown_seconds\": -1"),
                    "cooldown_seconds", ">= 0"},
        BadBodyCase{"MaxBelowMin",
                    RULE(STEP_AND_THRESHOLD ", \"min_replicas\": 3, \"max_replicas\": 2"),
                    "max_replicas", "min_replicas"},
        BadBodyCase{"ThresholdText", RULE("\"threshold\": \"high\", \"step_size\": 1"), "threshold",
                    "expected a number"},
        BadBodyCase{"MissingMetric",
                    R"({"name": "r", "comparator": "LESS_THAN", "threshold": 1, "step_size": 1})",
                    "metric", "missing"},
        BadBodyCase{"MissingName", R"({"metric": "m", "comparator": "LESS_THAN",
                                       "threshold": 1, "step_size": 1})",
                    "name", "required"},
        BadBodyCase{"EnabledNotBool", RULE(STEP_AND_THRESHOLD ", \"enabled\": \"maybe\""),
                    "enabled", "true or false"},
        BadBodyCase{"UnknownKey", RULE(STEP_AND_THRESHOLD ", \"treshold\": 1"), "treshold",
                    "unknown"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(ApiServerTest, RuleOnSpecPolicyServiceIs409) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  httplib::Result res = Post("/v1/services/chat/rules", kScaleOutRule);
  EXPECT_EQ(res->status, 409);
  EXPECT_EQ(ErrorOf(res)["code"], "failed_precondition");
}

TEST_F(ApiServerTest, SetsAndClearsManualReplicas) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  httplib::Result set = Put("/v1/services/chat/replicas", R"({"replicas": 3})");
  ASSERT_EQ(set->status, 200) << set->body;
  EXPECT_EQ(Body(set)["manual_replicas"], 3);
  EXPECT_EQ(Body(set)["desired_replicas"], 3);
  httplib::Result cleared = Put("/v1/services/chat/replicas", R"({"replicas": null})");
  ASSERT_EQ(cleared->status, 200);
  EXPECT_TRUE(Body(cleared)["manual_replicas"].is_null());
  for (const char* bad : {R"({"replicas": 9})", R"({"replicas": -1})", R"({"replicas": "2"})",
                          R"({})", R"({"replicas": 1.5})"}) {
    httplib::Result res = Put("/v1/services/chat/replicas", bad);
    EXPECT_EQ(res->status, 400) << bad;
    EXPECT_EQ(ErrorOf(res)["field"], "replicas") << bad;
  }
}

TEST_F(ApiServerTest, ListsReplicas) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  daemon::ReplicaView replica;
  replica.id = "chat-1";
  replica.phase = scale::ReplicaPhase::kReady;
  replica.state = "ready";
  replica.phase_since = Seconds{1700000000.5};
  replica.port = 8001;
  replica.gpus = {0, 1};
  replica.pid = 4242;
  replica.restarts = 1;
  replica.uptime = Seconds{12.3456};
  replica.outstanding_requests = 7;
  replica.log_path = "/tmp/chat-1.log";
  daemon_.SetReplicas("chat", {replica});
  httplib::Result res = client_->Get("/v1/services/chat/replicas");
  ASSERT_EQ(res->status, 200);
  json r = Body(res)["replicas"][0];
  EXPECT_EQ(r["id"], "chat-1");
  EXPECT_EQ(r["phase"], "ready");
  EXPECT_EQ(r["phase_since"], "2023-11-14T22:13:20.500Z");
  EXPECT_EQ(r["gpus"], json({0, 1}));
  EXPECT_EQ(r["pid"], 4242);
  EXPECT_EQ(r["uptime_seconds"], 12.346);
  EXPECT_EQ(r["outstanding_requests"], 7);
  EXPECT_EQ(r["adopted"], false);
  EXPECT_EQ(r["last_error"], "");
  EXPECT_EQ(r["log_path"], "/tmp/chat-1.log");
  EXPECT_EQ(r["host"], "127.0.0.1");
}

TEST_F(ApiServerTest, ReplicaWithoutANodeHasANullHost) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  daemon::ReplicaView queued;  // a Slurm job still in the queue: the daemon clears its host
  queued.id = "chat-1";
  queued.host = "";
  daemon::ReplicaView placed;
  placed.id = "chat-2";
  placed.host = "10.0.0.7";
  placed.port = 20001;
  daemon_.SetReplicas("chat", {queued, placed});
  httplib::Result res = client_->Get("/v1/services/chat/replicas");
  ASSERT_EQ(res->status, 200);
  json replicas = Body(res)["replicas"];
  ASSERT_EQ(replicas.size(), 2u) << replicas.dump();
  EXPECT_TRUE(replicas[0]["host"].is_null()) << replicas[0].dump();
  EXPECT_EQ(replicas[1]["host"], "10.0.0.7");
}

}  // namespace
}  // namespace gpuscale::api

namespace gpuscale::api {
namespace {

// GET /v1/services/NAME/history: columnar series from the daemon's history, errors naming
// the parameter, 404 for an unknown service.
TEST_F(ApiServerTest, ServiceHistoryIsColumnarWithNullsForEmptySteps) {
  ASSERT_EQ(Post("/v1/services", kChatService)->status, 201);
  for (int t = 0; t < 10; ++t) {
    daemon::HistorySample s;
    s.at = Seconds{100.0 + t};
    s.desired = 2;
    s.ready = 1;
    s.current = 2;
    s.inputs = {{"vllm:num_requests_waiting", t < 5 ? std::optional<double>(t) : std::nullopt, 5}};
    daemon_.history.Record("chat", s);
  }
  httplib::Result res = client_->Get("/v1/services/chat/history?from=100&to=120&step=2");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json body = Body(res);
  EXPECT_EQ(body["service"], "chat");
  EXPECT_EQ(body["step"], 2);
  ASSERT_EQ(body["t"].size(), 10u);
  EXPECT_EQ(body["t"][0], 100);
  EXPECT_EQ(body["desired"][0], 2);
  EXPECT_TRUE(body["desired"][5].is_null());  // t = 110..: nothing recorded
  ASSERT_EQ(body["metrics"].size(), 1u);
  EXPECT_EQ(body["metrics"][0]["name"], "vllm:num_requests_waiting");
  EXPECT_EQ(body["metrics"][0]["value"][0], 0.5);  // mean of 0 and 1
  EXPECT_TRUE(body["metrics"][0]["value"][3].is_null());  // no data at t = 106, 107
  EXPECT_EQ(body["metrics"][0]["target"][3], 5);
  EXPECT_TRUE(body["gateway"]["requests_per_second"][0].is_null());

  res = client_->Get("/v1/services/chat/history?step=abc");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("step"), std::string::npos) << res->body;
  res = client_->Get("/v1/services/chat/history?from=200&to=100");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("from"), std::string::npos) << res->body;
  EXPECT_EQ(client_->Get("/v1/services/nope/history")->status, 404);
}

}  // namespace
}  // namespace gpuscale::api
