// `gpuscale serve` end to end: the real binary, emulated replicas (`gpuscale emulate`), load
// from `gpuscale bench`, all on 127.0.0.1 with a temporary state directory and a 1 s control
// loop. Scenarios: scale out under load and back in after it, a killed replica is restarted,
// a replica without GPUs is pending with the allocator's reason, a kill -9'd daemon's
// replicas are adopted by the next one without duplicates or leaked leases, and the API's
// 400/401 answers. TearDown kills the daemon's process group and every process carrying the
// test's environment marker (replicas run in their own process groups).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "daemon_test_util.h"

namespace gpuscale::daemon_test {
namespace {

using ::testing::HasSubstr;

class DaemonServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuscale_serve_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    marker_ = "GPUSCALE_TEST_MARK=" + std::filesystem::path(dir_).filename().string();
  }

  void TearDown() override {
    KillDaemon(SIGKILL);
    for (pid_t pid : PidsWithEnv(marker_)) kill(-pid, SIGKILL), kill(pid, SIGKILL);
    if (HasFailure()) {
      std::ifstream err(dir_ + "/daemon.err");
      std::cerr << "--- daemon stderr ---\n" << err.rdbuf() << "\n";
      std::cerr.clear();  // an empty file sets failbit
      std::cerr << "--- stdout ---\n" << out_;
    }
    std::filesystem::remove_all(dir_);
  }

  // The service block of the config; `policy` is indented YAML under `policy:`.
  std::string Service(int min, int max, const std::string& policy) {
    std::ostringstream s;
    s << "  - name: x\n"
      << "    command: [" << kBinary << ", emulate, --port, \"{port}\", --model, m,\n"
      << "              --startup-seconds, \"0.2\", --max-batch-size, \"1\",\n"
      << "              --decode-ms-base, \"20\", --drain-seconds, \"1\"]\n"
      << "    env: {GPUSCALE_TEST_MARK: " << marker_.substr(marker_.find('=') + 1) << "}\n"
      << "    gpus_per_replica: 1\n"
      << "    startup_timeout_seconds: 20\n"
      << "    drain_timeout_seconds: 5\n"
      << "    min_replicas: " << min << "\n    max_replicas: " << max << "\n"
      << "    policy:\n"
      << policy;
    return s.str();
  }

  std::string Config(const std::string& services, int gpus = 4, const std::string& extra = "") {
    std::ofstream inv(dir_ + "/inventory.yaml");
    inv << "gpus:\n";
    for (int i = 0; i < gpus; ++i) inv << "  - index: " << i << "\n";
    return "gpu: {backend: simulated, inventory: " + dir_ + "/inventory.yaml}\n" + extra +
           "services:\n" + services;
  }

  // Starts `gpuscale serve` and reads its port from the first stdout line.
  void StartDaemon(const std::string& config, const std::vector<std::string>& flags = {}) {
    std::ofstream(dir_ + "/gpuscale.yaml") << config;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::vector<std::string> argv = {
        kBinary,       "serve",       "--config",      dir_ + "/gpuscale.yaml", "--listen",
        "127.0.0.1:0", "--state-dir", dir_ + "/state", "--loop-interval",       "1"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    daemon_pid_ = Spawn(argv, fds[1], dir_ + "/daemon.err", {marker_});
    close(fds[1]);
    ASSERT_GT(daemon_pid_, 0);
    std::optional<std::string> line = ReadLineWithPrefix(
        fds[0], "gpuscale serve: API http://127.0.0.1:", std::chrono::seconds(20), out_);
    close(fds[0]);
    ASSERT_TRUE(line) << "no start-up line";
    port_ = std::atoi(line->c_str() + std::string("gpuscale serve: API http://127.0.0.1:").size());
    ASSERT_GT(port_, 0);
  }

  void KillDaemon(int sig) {
    if (daemon_pid_ <= 0) return;
    kill(-daemon_pid_, sig);
    int status = 0;
    waitpid(daemon_pid_, &status, 0);
    daemon_pid_ = -1;
  }

  json Replicas() {
    HttpReply r = Http(port_, "GET", "/v1/services/x/replicas", token_);
    return r.status == 200 ? r.body["replicas"] : json::array();
  }
  // Replicas counted as the controller does (not draining), by phase when given.
  int Count(const std::string& phase = "") {
    int n = 0;
    for (const json& r : Replicas()) {
      const std::string p = r["phase"];
      if (p != "draining" && (phase.empty() || p == phase)) ++n;
    }
    return n;
  }

  std::string dir_, marker_, out_, token_;
  pid_t daemon_pid_ = -1;
  int port_ = 0;
};

// Target policy on the replicas' queue, with short HPA windows so the test takes seconds.
const char kQueuePolicy[] =
    "      family: target\n"
    "      target:\n"
    "        metrics:\n"
    "          - {name: \"vllm:num_requests_waiting\", type: AverageValue, average_value: 2}\n"
    "        behavior:\n"
    "          scale_up: {stabilization_window_seconds: 0,\n"
    "                     policies: [{type: Pods, value: 4, period_seconds: 1}]}\n"
    "          scale_down: {stabilization_window_seconds: 3,\n"
    "                       policies: [{type: Percent, value: 100, period_seconds: 1}]}\n";

TEST_F(DaemonServeTest, BenchLoadScalesOutAndBackIn) {
  StartDaemon(Config(Service(1, 3, kQueuePolicy)));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  const int replica_port = Replicas()[0]["port"];
  const pid_t bench =
      Spawn({kBinary, "bench", "--url", "http://127.0.0.1:" + std::to_string(replica_port),
             "--concurrency", "8", "--duration", "20", "--input-tokens", "16", "--output-tokens",
             "16", "--no-progress"},
            -1, dir_ + "/bench.err", {marker_});
  ASSERT_GT(bench, 0);
  const bool scaled_out = WaitFor([&] { return Count() == 3; }, std::chrono::seconds(20));
  kill(bench, SIGKILL);
  waitpid(bench, nullptr, 0);
  ASSERT_TRUE(scaled_out) << Replicas().dump();
  HttpReply service = Http(port_, "GET", "/v1/services/x");
  EXPECT_EQ(service.body["desired_replicas"], 3) << service.body.dump();

  // Load gone: the queue drains, the stabilization window passes, two replicas drain.
  EXPECT_TRUE(
      WaitFor([&] { return Count() == 1 && Replicas().size() == 1; }, std::chrono::seconds(30)))
      << Replicas().dump();
  HttpReply events = Http(port_, "GET", "/v1/events?kind=decision&limit=100");
  EXPECT_THAT(events.body.dump(), HasSubstr("-> 3"));
}

TEST_F(DaemonServeTest, KilledReplicaIsRestarted) {
  StartDaemon(Config(Service(1, 1, kQueuePolicy)));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  const json before = Replicas()[0];
  const int pid = before["pid"];
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        const json r = Replicas();
        return r.size() == 1 && r[0]["phase"] == "ready" && r[0]["pid"] != pid && r[0]["pid"] > 0;
      },
      std::chrono::seconds(20)))
      << Replicas().dump();
  EXPECT_GE(Replicas()[0]["restarts"].get<int>(), 1);
}

TEST_F(DaemonServeTest, ReplicaWithoutGpuIsPendingWithReason) {
  StartDaemon(Config(Service(2, 2, kQueuePolicy), /*gpus=*/1));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1 && Count("pending") == 1; },
                      std::chrono::seconds(15)))
      << Replicas().dump();
  for (const json& r : Replicas()) {
    if (r["phase"] == "pending") {
      EXPECT_FALSE(r["last_error"].get<std::string>().empty()) << r;
    }
  }
  HttpReply service = Http(port_, "GET", "/v1/services/x");
  EXPECT_EQ(service.body["pending_replicas"], 1);
}

TEST_F(DaemonServeTest, RestartedDaemonAdoptsReplicasWithoutLeakingLeases) {
  const std::string config = Config(Service(2, 2, kQueuePolicy));
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(15)));
  std::set<int> pids;
  for (const json& r : Replicas()) pids.insert(r["pid"].get<int>());
  KillDaemon(SIGKILL);  // the replicas run in their own process groups: they survive

  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(15)))
      << Replicas().dump();
  std::set<int> adopted;
  for (const json& r : Replicas()) {
    adopted.insert(r["pid"].get<int>());
    EXPECT_TRUE(r["adopted"].get<bool>()) << r;
  }
  EXPECT_EQ(adopted, pids);
  const json leases = Http(port_, "GET", "/v1/leases").body["leases"];
  ASSERT_EQ(leases.size(), 2u) << leases.dump();
  std::set<std::string> owners;
  for (const json& l : leases) owners.insert(l["owner"].get<std::string>());
  EXPECT_EQ(owners.size(), 2u);
}

TEST_F(DaemonServeTest, BadBodyIs400NamingTheFieldAndWrongTokenIs401) {
  token_ = "s3cret";
  StartDaemon(Config(Service(1, 1, kQueuePolicy)), {"--token", token_});
  HttpReply unauthorized = Http(port_, "GET", "/v1/services", "wrong");
  EXPECT_EQ(unauthorized.status, 401);
  HttpReply bad = Http(port_, "POST", "/v1/services", token_,
                       R"({"name": "y", "command": ["true"], "gpus_per_replica": "two"})");
  EXPECT_EQ(bad.status, 400) << bad.body.dump();
  EXPECT_THAT(bad.body["error"]["field"].dump(), HasSubstr("gpus_per_replica"));
  HttpReply replicas = Http(port_, "PUT", "/v1/services/x/replicas", token_, R"({"replicas": 7})");
  EXPECT_EQ(replicas.status, 400) << replicas.body.dump();
  EXPECT_EQ(Http(port_, "GET", "/healthz").status, 200);
}

}  // namespace
}  // namespace gpuscale::daemon_test
