// Router, bearer-token check, static-file resolution and JSON views.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "api/auth.h"
#include "api/json_views.h"
#include "api/router.h"
#include "api/static_files.h"

namespace gpuscale::api {
namespace {

namespace fs = std::filesystem;

TEST(RouterTest, MatchesPlaceholdersAndTellsFourOhFourFromFourOhFive) {
  Router router;
  const int list = router.Add("GET", "/v1/services");
  const int get = router.Add("GET", "/v1/services/{name}");
  const int del = router.Add("DELETE", "/v1/services/{name}/rules/{id}");
  EXPECT_EQ(router.Match("GET", "/v1/services").route, list);
  EXPECT_EQ(router.Match("HEAD", "/v1/services/").route, list);
  RouteMatch m = router.Match("GET", "/v1/services/chat");
  EXPECT_EQ(m.route, get);
  EXPECT_EQ(m.params, std::vector<std::string>{"chat"});
  m = router.Match("DELETE", "/v1/services/chat/rules/12");
  EXPECT_EQ(m.route, del);
  EXPECT_EQ(m.params, (std::vector<std::string>{"chat", "12"}));
  m = router.Match("POST", "/v1/services/chat");
  EXPECT_EQ(m.route, -1);
  EXPECT_EQ(m.allow, "GET, HEAD");
  m = router.Match("GET", "/v1/services/chat/rules");
  EXPECT_EQ(m.route, -1);
  EXPECT_EQ(m.allow, "");
  EXPECT_EQ(router.Match("GET", "/v1/services//rules/1").route, -1);
}

TEST(AuthTest, ComparesWholeTokens) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_TRUE(BearerTokenMatches("Bearer tok", "tok"));
  EXPECT_TRUE(BearerTokenMatches("bearer tok ", "tok"));
  EXPECT_FALSE(BearerTokenMatches("Bearer tok2", "tok"));
  EXPECT_FALSE(BearerTokenMatches("Basic tok", "tok"));
  EXPECT_FALSE(BearerTokenMatches("tok", "tok"));
  EXPECT_FALSE(BearerTokenMatches("", "tok"));
}

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpuscale_static_test_" + std::to_string(getpid()));
    fs::create_directories(root_ / "web" / "docs");
    std::ofstream(root_ / "web" / "index.html") << "home";
    std::ofstream(root_ / "web" / "docs" / "index.html") << "docs";
    std::ofstream(root_ / "outside.txt") << "secret";
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Web() const { return (root_ / "web").string(); }
  fs::path root_;
};

TEST_F(StaticFilesTest, ResolvesIndexFiles) {
  Result<StaticFile> home = ResolveStaticFile(Web(), "/");
  ASSERT_TRUE(home.has_value());
  EXPECT_EQ(*ReadStaticFile(*home), "home");
  EXPECT_EQ(home->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(*ReadStaticFile(*ResolveStaticFile(Web(), "/docs")), "docs");
  EXPECT_EQ(*ReadStaticFile(*ResolveStaticFile(Web(), "/docs/")), "docs");
}

TEST_F(StaticFilesTest, RefusesEverythingOutsideTheRoot) {
  for (const char* path : {"/../outside.txt", "/docs/../../outside.txt", "/..", "..",
                           "/docs/..\\..\\outside.txt", "/missing.html"}) {
    Result<StaticFile> file = ResolveStaticFile(Web(), path);
    ASSERT_FALSE(file.has_value()) << path;
    EXPECT_EQ(file.error().code, ErrorCode::kNotFound) << path;
  }
  EXPECT_EQ(ResolveStaticFile((root_ / "nope").string(), "/").error().field, "web_root");
}

TEST(JsonViewsTest, SpecYamlBecomesTypedJson) {
  Json spec = YamlTextToJson(
      "name: chat\ncommand: [\"serve\", 8000, true]\nenv: {PORT: 8000}\n"
      "gpus_per_replica: 2\nratio: 0.5\nquoted: \"12\"\nflag: false\nnothing: ~\n");
  EXPECT_EQ(spec["command"], Json({"serve", "8000", "true"}));
  EXPECT_EQ(spec["env"]["PORT"], "8000");
  EXPECT_EQ(spec["gpus_per_replica"], 2);
  EXPECT_EQ(spec["ratio"], 0.5);
  EXPECT_EQ(spec["quoted"], "12");
  EXPECT_EQ(spec["flag"], false);
  EXPECT_TRUE(spec["nothing"].is_null());
  EXPECT_TRUE(YamlTextToJson("").is_null());
  EXPECT_EQ(YamlTextToJson("{unclosed"), "{unclosed");
}

TEST(JsonViewsTest, ErrorBodyHasCodeMessageAndField) {
  Json body = ErrorJson(Error{ErrorCode::kInvalidArgument, "bad", "threshold"});
  EXPECT_EQ(body.dump(),
            R"({"error":{"code":"invalid_argument","message":"bad","field":"threshold"}})");
  EXPECT_TRUE(ErrorJson(Error{ErrorCode::kNotFound, "gone", ""})["error"]["field"].is_null());
}

}  // namespace
}  // namespace gpuscale::api
