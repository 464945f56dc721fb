// Body and query parsing without a server (the same functions api_body_fuzz exercises).
#include "api/request_parsing.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscale::api {
namespace {

daemon::ServiceConfig Service() {
  daemon::ServiceConfig s;
  s.name = "batch";
  s.min_replicas = 2;
  s.max_replicas = 8;
  return s;
}

TEST(CheckJsonObjectTest, NamesLineAndColumnOfSyntaxError) {
  Status status = CheckJsonObject("{\n  \"a\": 1,\n  \"b\": tru\n}");
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.error().field, "body");
  EXPECT_NE(status.error().message.find("line 3, column 10"), std::string::npos)
      << status.error().message;
}

TEST(CheckJsonObjectTest, RefusesAKeyGivenTwiceInOneObjectNamingIt) {
  for (const auto& [body, key] : std::vector<std::pair<std::string, std::string>>{
           {R"({"replicas": 1, "replicas": 9})", "replicas"},
           {R"({"spec": {"a": 1, "b": 2, "a": 3}})", "a"}}) {
    Status status = CheckJsonObject(body);
    ASSERT_FALSE(status) << body;
    EXPECT_EQ(status.error().field, key) << body;
    EXPECT_NE(status.error().message.find("appears twice"), std::string::npos);
  }
  // The same key in different objects is fine.
  EXPECT_TRUE(CheckJsonObject(R"({"a": {"x": 1}, "b": {"x": 2}, "x": 3})"));
}

TEST(CheckJsonObjectTest, RejectsNonObjects) {
  for (const char* body : {"[]", "42", "\"text\"", "null"}) {
    Status status = CheckJsonObject(body);
    ASSERT_FALSE(status.has_value()) << body;
    EXPECT_NE(status.error().message.find("expected a JSON object"), std::string::npos);
  }
  EXPECT_TRUE(CheckJsonObject("{}").has_value());
}

TEST(CheckJsonObjectTest, RefusesDeepNestingWithoutRecursingOnIt) {
  const std::string deep =
      "{\"replicas\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  Status status = CheckJsonObject(deep);
  ASSERT_FALSE(status.has_value());
  EXPECT_NE(status.error().message.find("nested deeper than 64"), std::string::npos);
  EXPECT_FALSE(ParseReplicasBody(deep).has_value());
  EXPECT_FALSE(ParseServiceBody(deep, "").has_value());
  EXPECT_FALSE(ParseRuleBody(deep, Service()).has_value());
}

TEST(ParseServiceBodyTest, PostTakesTheBodyAsIs) {
  Result<daemon::ServiceConfig> s =
      ParseServiceBody(R"({"name":"chat","command":["serve","{port}"],"max_replicas":3})", "");
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_EQ(s->name, "chat");
  EXPECT_EQ(s->command, (std::vector<std::string>{"serve", "{port}"}));
  EXPECT_EQ(s->max_replicas, 3);
}

TEST(ParseServiceBodyTest, PutFillsOrChecksTheName) {
  Result<daemon::ServiceConfig> filled = ParseServiceBody(R"({"command": ["x"]})", "chat");
  ASSERT_TRUE(filled.has_value()) << filled.error().ToString();
  EXPECT_EQ(filled->name, "chat");
  EXPECT_TRUE(ParseServiceBody(R"({"name": "chat", "command": ["x"]})", "chat").has_value());
  Result<daemon::ServiceConfig> other =
      ParseServiceBody(R"({"name": "other", "command": ["x"]})", "chat");
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().field, "name");
}

TEST(ParseServiceBodyTest, ErrorsCarryTheBodyLine) {
  Result<daemon::ServiceConfig> s = ParseServiceBody(
      "{\n\"name\": \"chat\",\n\"command\": [\"x\"],\n\"gpus_per_replica\": -1\n}", "");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().field, "gpus_per_replica");
  EXPECT_NE(s.error().message.find("line 4"), std::string::npos) << s.error().message;
}

// JSON allows a lone carriage return as whitespace; yaml-cpp read "\r{\r}" as a scalar and
// threw on subscripting it (found by fuzz/api_body_fuzz). Lines still count.
TEST(ParseServiceBodyTest, CarriageReturnsAreLineBreaks) {
  for (const std::string& path : {std::string(""), std::string("chat")}) {
    Result<daemon::ServiceConfig> s = ParseServiceBody(
        "\r{\r\"name\": \"chat\",\r\"command\": [\"x\"],\r\n\"gpus_per_replica\": -1\r}\r",
        path);
    ASSERT_FALSE(s.has_value()) << path;
    EXPECT_EQ(s.error().field, "gpus_per_replica") << path;
    EXPECT_NE(s.error().message.find("line 5"), std::string::npos) << s.error().message;
  }
  Result<daemon::ServiceConfig> empty = ParseServiceBody("\r{\r}\r\r\r\r\r", "fuzz");
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().field, "command");
  EXPECT_TRUE(ParseServiceBody("{\r\"command\": [\"x\"]\r}", "chat").has_value());
  EXPECT_FALSE(ParseRuleBody("\r{\r}\r", daemon::ServiceConfig{}).has_value());
}

TEST(ParseRuleBodyTest, MapsEveryFieldToTheRow) {
  Result<daemon::RuleView> rule = ParseRuleBody(
      R"({"name": "hot", "source": "kernel", "metric": "gpu_utilization", "aggregation": "max",
          "comparator": "GREATER_THAN_OR_EQUAL", "threshold": 90.5, "step_size": 2,
          "cooldown_seconds": 30, "min_replicas": 3, "max_replicas": 7, "enabled": false})",
      Service());
  ASSERT_TRUE(rule.has_value()) << rule.error().ToString();
  EXPECT_EQ(rule->service, "batch");
  EXPECT_EQ(rule->name, "hot");
  EXPECT_EQ(rule->source, "kernel");
  EXPECT_EQ(rule->metric, "gpu_utilization");
  EXPECT_EQ(rule->aggregation, "max");
  EXPECT_EQ(rule->comparator, "GREATER_THAN_OR_EQUAL");
  EXPECT_DOUBLE_EQ(rule->threshold, 90.5);
  EXPECT_EQ(rule->step_size, 2);
  EXPECT_EQ(rule->cooldown, Seconds{30});
  EXPECT_EQ(rule->min_replicas, 3);
  EXPECT_EQ(rule->max_replicas, 7);
  EXPECT_FALSE(rule->enabled);
}

TEST(ParseRuleBodyTest, BoundsDefaultToTheService) {
  Result<daemon::RuleView> rule = ParseRuleBody(
      R"({"name": "q", "metric": "m", "comparator": "LESS_THAN", "threshold": 0,
          "step_size": -1})",
      Service());
  ASSERT_TRUE(rule.has_value()) << rule.error().ToString();
  EXPECT_EQ(rule->min_replicas, 2);
  EXPECT_EQ(rule->max_replicas, 8);
  EXPECT_TRUE(rule->enabled);
  EXPECT_EQ(rule->source, "inference_framework");
}

TEST(ParseReplicasBodyTest, AcceptsCountOrNull) {
  EXPECT_EQ(*ParseReplicasBody(R"({"replicas": 0})"), std::optional<int>(0));
  EXPECT_EQ(*ParseReplicasBody(R"({"replicas": null})"), std::nullopt);
  for (const char* bad : {R"({"replicas": -2})", R"({"replicas": true})", R"({"count": 1})",
                          R"({"replicas": 99999999999})", "{"}) {
    Result<std::optional<int>> r = ParseReplicasBody(bad);
    EXPECT_FALSE(r.has_value()) << bad;
  }
  EXPECT_EQ(ParseReplicasBody(R"({"count": 1})").error().field, "count");
}

TEST(ParsePreemptBodyTest, EmptyOrNoticeSeconds) {
  EXPECT_EQ(*ParsePreemptBody(""), std::nullopt);
  EXPECT_EQ(*ParsePreemptBody("{}"), std::nullopt);
  EXPECT_EQ(*ParsePreemptBody(R"({"notice_seconds": 2.5})"), std::optional(Seconds{2.5}));
  for (const char* bad : {R"({"notice_seconds": -1})", R"({"notice_seconds": "soon"})",
                          R"({"notice_seconds": 86401})"}) {
    Result<std::optional<Seconds>> r = ParsePreemptBody(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().field, "notice_seconds") << bad;
  }
  EXPECT_EQ(ParsePreemptBody(R"({"notice": 1})").error().field, "notice");
}

TEST(ParseEventQueryTest, DefaultsAndValues) {
  Result<daemon::EventQuery> defaults = ParseEventQuery({});
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->since_id, 0);
  EXPECT_EQ(defaults->limit, 100);
  Result<daemon::EventQuery> q = ParseEventQuery(
      {{"since_id", "41"}, {"limit", "10000"}, {"service", "chat"}, {"kind", "decision"}});
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->since_id, 41);
  EXPECT_EQ(q->limit, 10000);
  EXPECT_EQ(q->service, "chat");
  EXPECT_EQ(q->kind, events::EventKind::kDecision);
  EXPECT_EQ(ParseEventQuery({{"since_id", "99999999999999999999"}}).error().field, "since_id");
}

TEST(ParseHistoryWindowTest, BoundsAreInclusive) {
  EXPECT_EQ(*ParseHistoryWindow({{"seconds", "1"}}), Seconds{1});
  EXPECT_EQ(*ParseHistoryWindow({{"seconds", "86400"}}), Seconds{86400});
  EXPECT_EQ(ParseHistoryWindow({{"seconds", ""}}).error().field, "seconds");
}

TEST(ParseTargetTest, SplitsAndDecodesPathAndQuery) {
  Result<RequestTarget> t = ParseTarget("/v1/events?kind=decision&service=my%20chat&x&q=a+b");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->path, "/v1/events");
  EXPECT_EQ(t->params.find("kind")->second, "decision");
  EXPECT_EQ(t->params.find("service")->second, "my chat");
  EXPECT_EQ(t->params.find("x")->second, "");
  EXPECT_EQ(t->params.find("q")->second, "a b");
  EXPECT_EQ(ParseTarget("/a+b/%2e%2E")->path, "/a+b/..") << "'+' is literal in a path";
  EXPECT_EQ(ParseTarget("/v1/gpus?")->params.size(), 0u);
  EXPECT_EQ(ParseTarget("/x?a=1&a=2")->params.count("a"), 2u);
}

TEST(ParseTargetTest, RefusesBadEscapesNulAndNonPaths) {
  for (const char* bad : {"/v1/%zz", "/v1/%4", "/v1/%", "/v1?kind=%0", "/v1/%00", "v1/gpus",
                          "", "http://host/v1/gpus"}) {
    Result<RequestTarget> t = ParseTarget(bad);
    ASSERT_FALSE(t.has_value()) << bad;
    EXPECT_EQ(t.error().field, "target") << bad;
  }
  // Raw control bytes, NUL included (found by fuzz/api_body_fuzz.cc).
  EXPECT_FALSE(ParseTarget(std::string("/v1/x\0y", 7)).has_value());
  EXPECT_FALSE(ParseTarget("/v1/\x01").has_value());
  EXPECT_FALSE(ParseTarget("/v1?a=\x7f").has_value());
}

}  // namespace
}  // namespace gpuscale::api
