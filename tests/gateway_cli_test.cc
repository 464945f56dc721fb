// `gpuscale gateway` (the standalone gateway) through the whole CLI: bad --route values are
// usage errors naming the flag; with real processes, two `gpuscale emulate` replicas behind
// it both take requests, and after one is SIGKILLed every request still succeeds (retry on
// a refused connection, then passive health takes it out of rotation); a disaggregated route
// sends every request through a prefill and a decode replica; embeddings reach an emulator.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cli_test_util.h"
#include "daemon_test_util.h"

namespace gpuscale {
namespace {

using daemon_test::Http;
using daemon_test::HttpReply;
using daemon_test::json;

struct GatewayCliCase {
  std::vector<std::string> args;
  std::string expected_in_error;
};

TEST(GatewayCliTest, BadRoutesAreUsageErrorsNamingTheFlag) {
  const std::vector<GatewayCliCase> cases = {
      {{"gateway"}, "--route"},
      {{"gateway", "--route", "m"}, "MODEL[,MODEL...]=HOST:PORT"},
      {{"gateway", "--route", "=127.0.0.1:1"}, "MODEL[,MODEL...]=HOST:PORT"},
      {{"gateway", "--route", "m=127.0.0.1"}, "--route"},
      {{"gateway", "--route", "m=127.0.0.1:0"}, "port > 0"},
      {{"gateway", "--route", "m=:9000"}, "with a host"},
      {{"gateway", "--route", "a,,b=127.0.0.1:1"}, "empty model name"},
      {{"gateway", "--route", "m=127.0.0.1:1", "--route", "x,m=127.0.0.1:2"}, "routed twice"},
      {{"gateway", "--route", "m=127.0.0.1:1", "--listen", "nowhere"}, "--listen"},
      {{"gateway", "--route", "m=127.0.0.1:1", "--router", "random"}, "--router"},
      {{"gateway", "--route", "m=127.0.0.1:1", "--threads", "0"}, "--threads"},
      {{"gateway", "--route", "m=prefill:127.0.0.1:1"}, "no decode piece"},
      {{"gateway", "--route", "m=decode:127.0.0.1:1"}, "no prefill piece"},
      {{"gateway", "--route", "m=prefill:127.0.0.1:1;fetch:127.0.0.1:2"}, "role piece 'fetch:"},
      {{"gateway", "--route", "m=prefill:127.0.0.1:1;prefill:127.0.0.1:2"}, "given twice"},
      {{"gateway", "--route", "m=prefill:127.0.0.1:1;decode:127.0.0.1"}, "replica '127.0.0.1'"},
      {{"gateway", "--route", "m=127.0.0.1:1", "--critical-reserved-per-replica", "-1"},
       "--critical-reserved-per-replica: expected 0 (none) or more"},
      {{"gateway", "--route", "m=127.0.0.1:1", "--critical-reserved-per-replica", "2"},
       "which is 0 (no limit)"},
      {{"gateway", "--route", "m=127.0.0.1:1", "--max-in-flight-per-replica", "4",
        "--critical-reserved-per-replica", "4"},
       "expected fewer than --max-in-flight-per-replica (4), got 4"},
  };
  for (const GatewayCliCase& c : cases) {
    const cli_test::RunResult r = cli_test::RunInProcess(c.args);
    EXPECT_EQ(r.exit_code, cli::kExitUsage) << c.args.back();
    EXPECT_NE(r.err.find(c.expected_in_error), std::string::npos) << c.args.back() << ": "
                                                                  << r.err;
    EXPECT_EQ(r.out.find("gateway http"), std::string::npos) << "nothing was started";
  }
}

// A process of this test whose first stdout line starting with `prefix` ends in its port.
struct Child {
  pid_t pid = -1;
  int port = 0;
};

Child StartChild(const std::vector<std::string>& argv, const std::string& prefix,
                 const std::string& err_path) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  Child child;
  child.pid = daemon_test::Spawn(argv, fds[1], err_path);
  close(fds[1]);
  std::string seen;
  std::optional<std::string> line =
      daemon_test::ReadLineWithPrefix(fds[0], prefix, std::chrono::seconds(20), seen);
  close(fds[0]);
  if (line) child.port = std::atoi(line->c_str() + prefix.size());
  return child;
}

// vllm:request_success_total summed over finish reasons, from an emulator's /metrics.
double SuccessTotal(int port) {
  httplib::Client client("127.0.0.1", port);
  httplib::Result r = client.Get("/metrics");
  if (!r) return -1;
  double total = 0;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("vllm:request_success_total{", 0) != 0) continue;
    total += std::atof(line.c_str() + line.rfind(' ') + 1);
  }
  return total;
}

class GatewayProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = cli_test::MakeTempDir("gpuscale-gateway-cli-");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    for (const Child& c : children_) {
      if (c.pid <= 0) continue;
      kill(-c.pid, SIGKILL);
      waitpid(c.pid, nullptr, 0);
    }
    if (HasFailure()) {
      for (const std::string name : {"e0.err", "e1.err", "e2.err", "e3.err", "gateway.err"}) {
        daemon_test::DumpFile(name, dir_ + "/" + name);
      }
    }
    std::filesystem::remove_all(dir_);
  }

  Child& Emulator(int i, const std::string& role = "aggregated") {
    children_.push_back(StartChild(
        {cli_test::kBinary, "emulate", "--port", "0", "--model", "m", "--startup-seconds", "0",
         "--timing", "linear", "--decode-ms-base", "5", "--role", role},
        "listening on 127.0.0.1:", dir_ + "/e" + std::to_string(i) + ".err"));
    return children_.back();
  }

  // `gpuscale bench` through the gateway for 2 s at concurrency 4: its JSON report (null
  // after a failure, reported here).
  json Bench(int port, int input_tokens) {
    const cli_test::RunResult bench = cli_test::RunProgram(
        cli_test::kBinary,
        {"bench", "--url", "http://127.0.0.1:" + std::to_string(port), "--model", "m",
         "--concurrency", "4", "--duration", "2", "--input-tokens", std::to_string(input_tokens),
         "--output-tokens", "8", "--no-progress", "-o", "json"},
        dir_);
    EXPECT_EQ(bench.exit_code, 0) << bench.err;
    return bench.exit_code == 0 ? json::parse(bench.out, nullptr, false) : json();
  }

  std::string dir_;
  std::vector<Child> children_;
};

TEST_F(GatewayProcessTest, SpreadsRequestsAndSurvivesAReplicaKilledByRouting) {
  const Child e0 = Emulator(0);
  const Child e1 = Emulator(1);
  ASSERT_GT(e0.port, 0);
  ASSERT_GT(e1.port, 0);
  children_.push_back(StartChild(
      {cli_test::kBinary, "gateway", "--listen", "127.0.0.1:0", "--route",
       "m,alias=127.0.0.1:" + std::to_string(e0.port) + ",127.0.0.1:" + std::to_string(e1.port)},
      "gateway http://127.0.0.1:", dir_ + "/gateway.err"));
  const Child gateway = children_.back();
  ASSERT_GT(gateway.port, 0);

  const HttpReply models = Http(gateway.port, "GET", "/v1/models");
  ASSERT_EQ(models.status, 200);
  ASSERT_EQ(models.body["data"].size(), 2u) << models.body.dump();

  // Concurrent load: least outstanding spreads it over both replicas.
  const json report = Bench(gateway.port, 8);
  ASSERT_TRUE(report.is_object());
  EXPECT_GT(report.value("requests_completed", 0), 0) << report.dump();
  EXPECT_EQ(report.value("requests_failed", -1), 0) << report.dump();
  EXPECT_GT(SuccessTotal(e0.port), 0);
  EXPECT_GT(SuccessTotal(e1.port), 0);

  // One replica dies: requests are retried on the other, then it leaves rotation.
  kill(-e0.pid, SIGKILL);
  waitpid(e0.pid, nullptr, 0);
  const std::string body = R"({"model": "m", "prompt": "hello", "max_tokens": 2})";
  for (int i = 0; i < 10; ++i) {
    const HttpReply r = Http(gateway.port, "POST", "/v1/completions", "", body);
    EXPECT_EQ(r.status, 200) << "request " << i << ": " << r.body.dump();
  }

  // SIGTERM: a clean exit.
  kill(gateway.pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(gateway.pid, &status, 0), gateway.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  children_.back().pid = -1;
}

// Issue 44: /v1/embeddings, which the gateway routes, is served by the emulator behind it
// (it answered 404): OpenAI's shape back through the gateway.
TEST_F(GatewayProcessTest, RelaysEmbeddingsToAnEmulatedReplica) {
  const Child e0 = Emulator(0);
  ASSERT_GT(e0.port, 0);
  children_.push_back(StartChild({cli_test::kBinary, "gateway", "--listen", "127.0.0.1:0",
                                  "--route", "m=127.0.0.1:" + std::to_string(e0.port)},
                                 "gateway http://127.0.0.1:", dir_ + "/gateway.err"));
  const Child gateway = children_.back();
  ASSERT_GT(gateway.port, 0);
  const HttpReply r = Http(gateway.port, "POST", "/v1/embeddings", "",
                           R"({"model": "m", "input": ["one two", "three"]})");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["object"], "list");
  ASSERT_EQ(r.body["data"].size(), 2u) << r.body.dump();
  EXPECT_EQ(r.body["data"][1]["index"], 1);
  EXPECT_EQ(r.body["data"][0]["embedding"].size(), 384u);
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], 3);
}

// Prefill/decode disaggregation with real processes: `gpuscale gateway` with a role route in
// front of two `emulate --role prefill` and two `emulate --role decode`; `gpuscale bench`
// through it: every request succeeds, and every replica of both pools takes a share.
TEST_F(GatewayProcessTest, RoutesEachRequestThroughAPrefillAndADecodeReplica) {
  std::vector<Child> replicas;
  for (int i = 0; i < 4; ++i) {
    replicas.push_back(Emulator(i, i < 2 ? "prefill" : "decode"));
    ASSERT_GT(replicas.back().port, 0) << i;
  }
  const auto hostport = [&](int i) { return "127.0.0.1:" + std::to_string(replicas[i].port); };
  children_.push_back(
      StartChild({cli_test::kBinary, "gateway", "--listen", "127.0.0.1:0", "--route",
                  "m=prefill:" + hostport(0) + "," + hostport(1) + ";decode:" + hostport(2) + "," +
                      hostport(3)},
                 "gateway http://127.0.0.1:", dir_ + "/gateway.err"));
  const Child gateway = children_.back();
  ASSERT_GT(gateway.port, 0);

  const json report = Bench(gateway.port, 64);
  ASSERT_TRUE(report.is_object());
  const int completed = report.value("requests_completed", 0);
  EXPECT_GT(completed, 0) << report.dump();
  EXPECT_EQ(report.value("requests_failed", -1), 0) << report.dump();
  double prefills = 0, decodes = 0;
  for (int i = 0; i < 4; ++i) {
    const double served = SuccessTotal(replicas[i].port);
    EXPECT_GT(served, 0) << "replica " << i << " (" << (i < 2 ? "prefill" : "decode") << ")";
    (i < 2 ? prefills : decodes) += served;
  }
  // Each completed request was one prefill and one decode (bench lets the requests in flight
  // at the end of its duration finish, which takes milliseconds here: none is left halfway).
  EXPECT_EQ(prefills, completed);
  EXPECT_EQ(decodes, completed);
}

}  // namespace
}  // namespace gpuscale
