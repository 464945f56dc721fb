// The top-level command line: what a user who mistypes gets (issue 22's CLI items). Runs
// in-process through RunCli.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "api/api_server.h"
#include "testing/fake_daemon_api.h"
#include "cli/command.h"

namespace gpuscale::cli {
namespace {

struct CliRun {
  int code = 0;
  std::string out, err;
};

CliRun Cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliRun r;
  r.code = RunCli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(CliTest, AnUnknownCommandIsAnErrorNamingTheNearestEvenWithHelp) {
  const CliRun r = Cli({"sim", "--help"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "") << "no top-level help as if `sim` existed";
  EXPECT_NE(r.err.find("unknown command 'sim'; did you mean 'simulate'?"), std::string::npos)
      << r.err;
  EXPECT_EQ(Cli({"frobnicate"}).code, 2);
  EXPECT_EQ(Cli({"simulate", "--help"}).code, 0);
}

TEST(CliTest, ServePortPointsToListen) {
  const CliRun r = Cli({"serve", "--port", "9000"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--listen 127.0.0.1:9000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--gateway-listen 127.0.0.1:9000"), std::string::npos) << r.err;
}

TEST(CliTest, ABadTaskIdSaysWhatAnIdIs) {
  const CliRun r = Cli({"task", "show", "abc"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("expected a task id (an integer >= 1"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 300u) << "no 300-digit range: " << r.err;
}

TEST(CliTest, BenchSaysWhyItCannotConnectAndWhenItIsPointedAtTheApi) {
  CliRun r = Cli({"bench", "--url", "http://127.0.0.1:1", "--duration", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("connection refused or host unreachable"), std::string::npos) << r.err;

  api::FakeDaemonApi daemon;
  api::ApiServer server(daemon, {.port = 0});
  Result<int> port = server.Start();
  ASSERT_TRUE(port.has_value());
  r = Cli({"bench", "--url", "http://127.0.0.1:" + std::to_string(*port), "--duration", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is gpuscale's REST API, not an OpenAI endpoint: point --url at the "
                       "gateway"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace gpuscale::cli
