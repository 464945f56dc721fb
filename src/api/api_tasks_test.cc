// Tasks and experiments over HTTP: every route of docs/api.md "Tasks and experiments", their
// status codes, body errors naming field and line, and the token check.
#include <string>
#include <vector>

#include "testing/api_test_util.h"
#include "testing/task_test_data.h"

namespace gpuscale::api {
namespace {

using json = nlohmann::json;

class ApiTasksTest : public ApiServerTest {
 protected:
  httplib::Result PostAs(const std::string& body, const std::string& content_type) {
    return client_->Post("/v1/tasks", body, content_type.c_str());
  }
};

TEST_F(ApiTasksTest, SubmitJsonAnswers201WithTheFullTask) {
  httplib::Result result = Post("/v1/tasks", kSweepTaskJson);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 201) << result->body;
  EXPECT_EQ(result->get_header_value("Location"), "/v1/tasks/1");
  json body = Body(result);
  EXPECT_EQ(body["id"], 1);
  EXPECT_EQ(body["name"], "sweep-json");
  EXPECT_EQ(body["status"], "queued");
  EXPECT_EQ(body["source_text"], kSweepTaskJson);
  ASSERT_EQ(body["experiments"].size(), 3u) << result->body;
  EXPECT_EQ(body["experiments"][2]["parameters"]["max-num-seqs"], 32);
  ASSERT_EQ(daemon_.submitted().size(), 1u);
  EXPECT_EQ(daemon_.submitted()[0].definition.name, "sweep-json");
  EXPECT_EQ(daemon_.submitted()[0].source_text, kSweepTaskJson);
}

TEST_F(ApiTasksTest, SubmitYamlUnderEveryYamlContentType) {
  const std::vector<std::string> types = {"application/yaml", "text/yaml",
                                          "application/x-yaml; charset=utf-8"};
  for (const std::string& type : types) {
    httplib::Result result = PostAs(kSweepTaskYaml, type);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 201) << type << ": " << result->body;
    json body = Body(result);
    EXPECT_EQ(body["name"], "sweep") << type;
    EXPECT_EQ(body["source_text"], kSweepTaskYaml) << type;
    EXPECT_EQ(body["experiments"].size(), 6u) << type;
  }
  EXPECT_EQ(daemon_.submitted().size(), types.size());
}

TEST_F(ApiTasksTest, SubmitYamlWithoutContentTypeIsParsedAsYaml) {
  // curl --data-binary @task.yaml sends application/x-www-form-urlencoded.
  httplib::Result result = PostAs(kSweepTaskYaml, "application/x-www-form-urlencoded");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 201) << result->body;
}

TEST_F(ApiTasksTest, BadFieldIsA400NamingFieldAndLine) {
  httplib::Result result = PostAs(kBadDurationTaskYaml, "application/yaml");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  json error = ErrorOf(result);
  EXPECT_EQ(error["code"], "invalid_argument");
  EXPECT_NE(error["field"].get<std::string>().find("duration_seconds"), std::string::npos)
      << result->body;
  EXPECT_NE(error["message"].get<std::string>().find("line 11"), std::string::npos)
      << result->body;
  EXPECT_TRUE(daemon_.submitted().empty());
}

TEST_F(ApiTasksTest, UnknownKeyIsA400NamingIt) {
  std::string body = kSweepTaskYaml;
  body += "colour: blue\n";
  httplib::Result result = PostAs(body, "application/yaml");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  json error = ErrorOf(result);
  EXPECT_NE(error.dump().find("colour"), std::string::npos) << result->body;
  EXPECT_NE(error["message"].get<std::string>().find("line 14"), std::string::npos)
      << result->body;
}

TEST_F(ApiTasksTest, MalformedJsonNamesLineAndColumn) {
  httplib::Result result = Post("/v1/tasks", "{\n  \"name\": \"x\",\n  \"model\" \"m\"\n}");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  json error = ErrorOf(result);
  EXPECT_EQ(error["field"], "body");
  EXPECT_NE(error["message"].get<std::string>().find("line 3"), std::string::npos)
      << result->body;
}

TEST_F(ApiTasksTest, EmptyBodyIsA400) {
  httplib::Result result = PostAs("", "application/yaml");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(ErrorOf(result)["field"], "body");
}

TEST_F(ApiTasksTest, MoreGpusThanExistIsA409) {
  daemon_.FailNextSubmit(Error{ErrorCode::kResourceExhausted,
                               "experiment #1 needs 2 GPUs, the inventory has 1", "parameters"});
  httplib::Result result = PostAs(kSweepTaskYaml, "application/yaml");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 409);
  EXPECT_EQ(ErrorOf(result)["code"], "resource_exhausted");
}

TEST_F(ApiTasksTest, ListShowsSummariesNewestFirst) {
  SeedTasks(daemon_);
  httplib::Result result = client_->Get("/v1/tasks");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  json body = Body(result);
  ASSERT_EQ(body["tasks"].size(), 2u) << result->body;
  EXPECT_EQ(body["tasks"][0]["id"], 4);
  EXPECT_EQ(body["tasks"][0]["name"], "llama-sweep");
  EXPECT_EQ(body["tasks"][0]["best_experiment_id"], 7);
  EXPECT_EQ(body["tasks"][1]["id"], 3);
  EXPECT_FALSE(body["tasks"][0].contains("source_text"));  // summaries only
  EXPECT_FALSE(body["tasks"][0].contains("experiments"));
}

TEST_F(ApiTasksTest, ListWithNoTasksIsAnEmptyArray) {
  httplib::Result result = client_->Get("/v1/tasks");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(Body(result), json::parse(R"({"tasks": []})"));
}

TEST_F(ApiTasksTest, GetShowsTheTaskWithItsExperimentsByIndex) {
  SeedTasks(daemon_);
  httplib::Result result = client_->Get("/v1/tasks/4");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  json body = Body(result);
  EXPECT_EQ(body["source_text"], "name: llama-sweep\n");
  ASSERT_EQ(body["experiments"].size(), 3u);
  EXPECT_EQ(body["experiments"][0]["id"], 7);
  EXPECT_EQ(body["experiments"][0]["is_best"], true);
  EXPECT_EQ(body["experiments"][1]["is_best"], false);
  EXPECT_EQ(body["experiments"][2]["status"], "queued");
}

// Ids in paths: 400 naming "id" for what is not an integer >= 1, 404 for unknown ones.
TEST_F(ApiTasksTest, IdsMustBePositiveIntegersAndKnown) {
  SeedTasks(daemon_);
  struct Case {
    std::string method, path;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET", "/v1/tasks/abc", 400},          {"GET", "/v1/tasks/0", 400},
      {"GET", "/v1/tasks/-1", 400},           {"GET", "/v1/tasks/99", 404},
      {"DELETE", "/v1/tasks/1x", 400},        {"DELETE", "/v1/tasks/99", 404},
      {"GET", "/v1/tasks/x/experiments", 400}, {"GET", "/v1/tasks/99/experiments", 404},
      {"GET", "/v1/experiments/0", 400},      {"GET", "/v1/experiments/99", 404},
  };
  for (const Case& c : cases) {
    httplib::Result result = c.method == "GET" ? client_->Get(c.path.c_str())
                                               : client_->Delete(c.path.c_str());
    ASSERT_TRUE(result) << c.path;
    EXPECT_EQ(result->status, c.status) << c.method << " " << c.path << ": " << result->body;
    EXPECT_EQ(ErrorOf(result)["field"], "id") << c.path;
  }
}

TEST_F(ApiTasksTest, CancelAnswersTheCancelledTaskThenRefusesAgain) {
  SeedTasks(daemon_);
  httplib::Result result = client_->Delete("/v1/tasks/4");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  json body = Body(result);
  EXPECT_EQ(body["status"], "cancelled");
  ASSERT_EQ(body["experiments"].size(), 3u);
  EXPECT_EQ(body["experiments"][0]["status"], "succeeded");  // ended ones keep their status
  EXPECT_EQ(body["experiments"][1]["status"], "cancelled");
  EXPECT_EQ(body["experiments"][2]["status"], "cancelled");

  httplib::Result again = client_->Delete("/v1/tasks/4");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 409);
  EXPECT_EQ(ErrorOf(again)["code"], "failed_precondition");
}

TEST_F(ApiTasksTest, TaskExperimentsAreWrappedAndMarkTheBest) {
  SeedTasks(daemon_);
  httplib::Result result = client_->Get("/v1/tasks/4/experiments");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  json body = Body(result);
  ASSERT_EQ(body["experiments"].size(), 3u);
  EXPECT_EQ(body["experiments"][0]["is_best"], true);
  EXPECT_EQ(body["experiments"][0]["bench"]["output_token_throughput_per_second"], 412.3);
  EXPECT_EQ(body["experiments"][0]["gpu_info"]["indices"], json::array({2}));
  EXPECT_EQ(body["experiments"][2]["bench"], nullptr);
}

TEST_F(ApiTasksTest, ExperimentShowsResultsAndIsBest) {
  SeedTasks(daemon_);
  httplib::Result result = client_->Get("/v1/experiments/7");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  json body = Body(result);
  EXPECT_EQ(body["task_id"], 4);
  EXPECT_EQ(body["is_best"], true);
  EXPECT_EQ(body["parameters"]["tp"], 1);
  EXPECT_TRUE(body["gpu_monitoring"].is_object()) << result->body;
  EXPECT_EQ(body["log_path"], "/tmp/gpuscale/experiments/7.log");

  httplib::Result other = client_->Get("/v1/experiments/8");
  ASSERT_TRUE(other);
  EXPECT_EQ(Body(other)["is_best"], false);
}

TEST_F(ApiTasksTest, TasksServiceUnavailableIsA503) {
  daemon_.SetTasksStatus(Unavailable("the task manager is not running"));
  for (const char* path : {"/v1/tasks/1", "/v1/experiments/1"}) {
    httplib::Result result = client_->Get(path);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 503) << path;
    EXPECT_EQ(ErrorOf(result)["code"], "unavailable");
  }
  httplib::Result submit = PostAs(kSweepTaskYaml, "application/yaml");
  ASSERT_TRUE(submit);
  EXPECT_EQ(submit->status, 503);
}

TEST_F(ApiTasksTest, OtherMethodsAre405WithAllow) {
  httplib::Result result = Put("/v1/tasks/1", "{}");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 405);
  EXPECT_EQ(result->get_header_value("Allow"), "DELETE, GET, HEAD");
}

TEST_F(ApiTasksTest, EveryTaskRouteNeedsTheToken) {
  server_->Stop();
  ApiServerOptions options;
  options.token = "s3cret";
  StartServer(options);
  SeedTasks(daemon_);
  httplib::Client anonymous("127.0.0.1", port_);
  const std::vector<std::string> paths = {"/v1/tasks", "/v1/tasks/4", "/v1/tasks/4/experiments",
                                          "/v1/experiments/7"};
  for (const std::string& path : paths) {
    httplib::Result denied = anonymous.Get(path.c_str());
    ASSERT_TRUE(denied);
    EXPECT_EQ(denied->status, 401) << path;
    httplib::Result allowed = client_->Get(path.c_str());
    ASSERT_TRUE(allowed);
    EXPECT_EQ(allowed->status, 200) << path;
  }
  httplib::Result submit = anonymous.Post("/v1/tasks", kSweepTaskYaml, "application/yaml");
  ASSERT_TRUE(submit);
  EXPECT_EQ(submit->status, 401);
  httplib::Result cancel = anonymous.Delete("/v1/tasks/4");
  ASSERT_TRUE(cancel);
  EXPECT_EQ(cancel->status, 401);
  EXPECT_TRUE(daemon_.submitted().empty());
}

}  // namespace
}  // namespace gpuscale::api
