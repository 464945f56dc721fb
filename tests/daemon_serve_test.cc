// `gpuscale serve` end to end: the real binary, emulated replicas (`gpuscale emulate`), load
// from `gpuscale bench`, all on 127.0.0.1 with a temporary state directory and a 1 s control
// loop. Scenarios: scale out under load and back in after it, the `slo` policy scaling out
// on violations of the service's own SLO targets, a killed replica is restarted,
// a replica without GPUs is pending with the allocator's reason, a kill -9'd daemon's
// replicas are adopted by the next one without duplicates or leaked leases, SIGHUP applies
// an edited config file (and a broken one changes nothing), and the API's 400/401 answers.
// TearDown kills the daemon's process group and every process carrying the test's
// environment marker (replicas run in their own process groups).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <thread>
#include <set>

#include "daemon_test_util.h"

namespace gpuscale::daemon_test {
namespace {

using ::testing::HasSubstr;

class DaemonServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("gpuscale_serve_test_");
    ASSERT_FALSE(dir_.empty());
    marker_ = TestMarker(dir_);
  }

  void TearDown() override {
    daemon_.Kill(SIGKILL);
    KillMarkedProcesses(marker_);
    if (HasFailure()) {
      DumpFile("daemon stderr", dir_ + "/daemon.err");
      std::cerr << "--- stdout ---\n" << daemon_.stdout_seen();
    }
    std::filesystem::remove_all(dir_);
  }

  // The service block of the config; `policy` is indented YAML under `policy:`.
  std::string Service(int min, int max, const std::string& policy) {
    std::ostringstream s;
    s << "  - name: x\n"
      << EmulatedReplicaYaml(marker_) << "    gpus_per_replica: 1\n"
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

  // Starts `gpuscale serve` (1 s control loop) and reads its port from the first stdout line.
  void StartDaemon(const std::string& config, const std::vector<std::string>& flags = {}) {
    daemon_.Start(config, {.dir = dir_, .flags = flags, .env = {marker_}});
  }

  // Loads the first replica with BenchArgv for `bench_seconds`; true when the service holds
  // `replicas` within `wait`. The bench is stopped either way.
  bool BenchUntil(int replicas, int bench_seconds, std::chrono::seconds wait) {
    const int replica_port = Replicas()[0]["port"];
    const pid_t bench =
        Spawn(BenchArgv("http://127.0.0.1:" + std::to_string(replica_port), bench_seconds), -1,
              dir_ + "/bench.err", {marker_});
    if (bench <= 0) {
      ADD_FAILURE() << "gpuscale bench did not start";
      return false;
    }
    const bool reached = WaitFor([&] { return Count() == replicas; }, wait);
    kill(bench, SIGKILL);
    waitpid(bench, nullptr, 0);
    return reached;
  }

  int Port() const { return daemon_.port(); }
  json Replicas() { return ServiceReplicas(Port(), "x", token_); }
  int Count(const std::string& phase = "") { return CountReplicas(Replicas(), phase); }

  std::string dir_, marker_, token_;
  ServeDaemon daemon_;
};

TEST_F(DaemonServeTest, BenchLoadScalesOutAndBackIn) {
  StartDaemon(Config(Service(1, 3, kFastQueuePolicyYaml)));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  ASSERT_TRUE(BenchUntil(3, /*bench_seconds=*/20, std::chrono::seconds(20))) << Replicas().dump();
  HttpReply service = Http(Port(), "GET", "/v1/services/x");
  EXPECT_EQ(service.body["desired_replicas"], 3) << service.body.dump();

  // Load gone: the queue drains, the stabilization window passes, two replicas drain.
  EXPECT_TRUE(
      WaitFor([&] { return Count() == 1 && Replicas().size() == 1; }, std::chrono::seconds(30)))
      << Replicas().dump();
  HttpReply events = Http(Port(), "GET", "/v1/events?kind=decision&limit=100");
  EXPECT_THAT(events.body.dump(), HasSubstr("-> 3"));
}

// The `slo` policy live, in token mode (load counted in tokens from the replicas' token
// counters) as in examples/sim/: with a capacity estimate far above the load, only SLO
// violations can add replicas, and they are measured against the service's `slo:` block. A
// 0.1 s TTFT target is missed by every request queued behind the one-request batches of
// these replicas, so the policy adds a replica per tick while requests wait.
TEST_F(DaemonServeTest, SloPolicyScalesOutOnViolationsOfTheServicesSlo) {
  std::string service = Service(1, 3,
                                "      family: slo\n"
                                "      slo: {output_token_weight: 4,\n"
                                "            initial_capacity_tokens_per_second: 1000000,\n"
                                "            ready_grace_seconds: 0}\n");
  service.replace(service.find("    policy:"), 0, "    slo: {ttft_seconds: 0.1}\n");
  StartDaemon(Config(service));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  HttpReply spec = Http(Port(), "GET", "/v1/services/x");
  EXPECT_EQ(spec.body["spec"]["slo"], json::parse(R"({"ttft_seconds": 0.1, "tpot_seconds": 0.05})"))
      << spec.body.dump();
  ASSERT_TRUE(BenchUntil(3, /*bench_seconds=*/25, std::chrono::seconds(25))) << Replicas().dump();
  HttpReply events = Http(Port(), "GET", "/v1/events?kind=decision&limit=100");
  EXPECT_THAT(events.body.dump(), HasSubstr("scale out 1 -> 2")) << events.body.dump();
}

// Requests each replica received through the gateway (gpuscale_gateway_replica_requests_total
// on the API's /metrics), by replica id.
std::map<std::string, double> GatewayRequestsByReplica(int api_port) {
  httplib::Client client("127.0.0.1", api_port);
  std::map<std::string, double> out;
  auto res = client.Get("/metrics");
  if (!res) return out;
  std::istringstream lines(res->body);
  static const std::string kPrefix = "gpuscale_gateway_replica_requests_total{";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kPrefix, 0) != 0) continue;
    const size_t id = line.find("replica=\"");
    const size_t end = line.find('"', id + 9);
    if (id == std::string::npos || end == std::string::npos) continue;
    out[line.substr(id + 9, end - id - 9)] = std::atof(line.c_str() + line.rfind(' ') + 1);
  }
  return out;
}

// The data plane end to end: bench load through the gateway scales the service out, every
// ready replica then takes a fair share of the requests (none under half of it), and no
// request fails while replicas start, take load and drain.
TEST_F(DaemonServeTest, GatewaySpreadsLoadOverScaledOutReplicasWithoutErrors) {
  std::string service = Service(1, 3, kFastQueuePolicyYaml);
  service.replace(service.find("    gpus_per_replica"), 0, "    models: [m]\n");
  StartDaemon(Config(service));
  ASSERT_GT(daemon_.gateway_port(), 0) << daemon_.stdout_seen();
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  const std::string report = dir_ + "/bench.json";
  const int out = open(report.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(out, 0);
  std::vector<std::string> argv =
      BenchArgv("http://127.0.0.1:" + std::to_string(daemon_.gateway_port()), 25);
  argv.insert(argv.end(), {"-o", "json"});
  const pid_t bench = Spawn(argv, out, dir_ + "/bench.err", {marker_});
  close(out);
  ASSERT_GT(bench, 0);
  const bool scaled = WaitFor([&] { return Count("ready") == 3; }, std::chrono::seconds(20));
  const std::map<std::string, double> before = GatewayRequestsByReplica(Port());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::map<std::string, double> after = GatewayRequestsByReplica(Port());
  int status = 0;
  waitpid(bench, &status, 0);
  ASSERT_TRUE(scaled) << Replicas().dump();
  double total = 0;
  for (const auto& [replica, n] : after) total += n - (before.count(replica) ? before.at(replica) : 0);
  ASSERT_EQ(after.size(), 3u) << "requests by replica: " << after.size();
  for (const auto& [replica, n] : after) {
    const double share = n - (before.count(replica) ? before.at(replica) : 0);
    EXPECT_GE(share, total / 3 / 2) << replica << " got " << share << " of " << total;
  }
  std::ifstream in(report);
  const json bench_report = json::parse(in, nullptr, false);
  ASSERT_FALSE(bench_report.is_discarded()) << "bench printed no JSON";
  EXPECT_GT(bench_report["requests_completed"].get<int>(), 0) << bench_report.dump();
  EXPECT_EQ(bench_report["requests_failed"], 0) << bench_report.dump();
}

// Scale from zero: a request for a service at zero replicas waits in the gateway's activator
// queue, which wakes the control loop; the service gets a replica and the request succeeds.
TEST_F(DaemonServeTest, GatewayWakesAServiceAtZeroReplicas) {
  std::string service = Service(0, 2, kFastQueuePolicyYaml);
  service.replace(service.find("    gpus_per_replica"), 0, "    models: [m]\n");
  // A 30 s loop: only the activator's wake-up can start the replica within the test.
  daemon_.Start(Config(service), {.dir = dir_, .loop_interval_seconds = "30", .env = {marker_}});
  ASSERT_GT(daemon_.gateway_port(), 0) << daemon_.stdout_seen();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(Count(), 0) << Replicas().dump();
  httplib::Client client("127.0.0.1", daemon_.gateway_port());
  client.set_read_timeout(30, 0);
  auto res = client.Post("/v1/completions",
                         R"({"model": "m", "prompt": "hello", "max_tokens": 4})",
                         "application/json");
  ASSERT_TRUE(res) << "no answer from the gateway";
  EXPECT_EQ(res->status, 200) << res->body;
  HttpReply events = Http(Port(), "GET", "/v1/events?kind=decision&limit=100");
  EXPECT_THAT(events.body.dump(), HasSubstr("activator")) << events.body.dump();
}

TEST_F(DaemonServeTest, KilledReplicaIsRestarted) {
  StartDaemon(Config(Service(1, 1, kFastQueuePolicyYaml)));
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
  StartDaemon(Config(Service(2, 2, kFastQueuePolicyYaml), /*gpus=*/1));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1 && Count("pending") == 1; },
                      std::chrono::seconds(15)))
      << Replicas().dump();
  for (const json& r : Replicas()) {
    if (r["phase"] == "pending") {
      EXPECT_FALSE(r["last_error"].get<std::string>().empty()) << r;
    }
  }
  HttpReply service = Http(Port(), "GET", "/v1/services/x");
  EXPECT_EQ(service.body["pending_replicas"], 1);
}

TEST_F(DaemonServeTest, RestartedDaemonAdoptsReplicasWithoutLeakingLeases) {
  const std::string config = Config(Service(2, 2, kFastQueuePolicyYaml));
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(15)));
  std::set<int> pids;
  for (const json& r : Replicas()) pids.insert(r["pid"].get<int>());
  daemon_.Kill(SIGKILL);  // the replicas run in their own process groups: they survive

  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(15)))
      << Replicas().dump();
  std::set<int> adopted;
  for (const json& r : Replicas()) {
    adopted.insert(r["pid"].get<int>());
    EXPECT_TRUE(r["adopted"].get<bool>()) << r;
  }
  EXPECT_EQ(adopted, pids);
  const json leases = Http(Port(), "GET", "/v1/leases").body["leases"];
  ASSERT_EQ(leases.size(), 2u) << leases.dump();
  std::set<std::string> owners;
  for (const json& l : leases) owners.insert(l["owner"].get<std::string>());
  EXPECT_EQ(owners.size(), 2u);
}

TEST_F(DaemonServeTest, SighupAppliesTheEditedConfigAndABrokenOneChangesNothing) {
  StartDaemon(Config(Service(1, 1, kFastQueuePolicyYaml)));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  const auto events = [&](const std::string& kind) {
    return Http(Port(), "GET", "/v1/events?kind=" + kind).body["events"];
  };

  std::ofstream(dir_ + "/gpuscale.yaml") << "services: [\n";  // unterminated
  ASSERT_EQ(kill(daemon_.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitFor([&] { return events("config_reload_failed").size() == 1; },
                      std::chrono::seconds(10)));
  const std::string failed = events("config_reload_failed")[0]["message"].get<std::string>();
  EXPECT_THAT(failed, HasSubstr("not applied, nothing changed: "));
  EXPECT_THAT(failed, HasSubstr("(line 2"));
  EXPECT_EQ(Http(Port(), "GET", "/v1/services/x").body["max_replicas"], 1);

  std::ofstream(dir_ + "/gpuscale.yaml") << Config(Service(1, 2, kFastQueuePolicyYaml));
  ASSERT_EQ(kill(daemon_.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitFor([&] { return events("config_reloaded").size() == 1; },
                      std::chrono::seconds(10)));
  EXPECT_THAT(events("config_reloaded")[0]["message"].get<std::string>(),
              HasSubstr("updated x"));
  EXPECT_EQ(Http(Port(), "GET", "/v1/services/x").body["max_replicas"], 2);
  EXPECT_EQ(Count("ready"), 1);  // the replica runs on
  EXPECT_EQ(Http(Port(), "GET", "/healthz").status, 200);
  std::ifstream err(dir_ + "/daemon.err");
  const std::string log((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_THAT(log, HasSubstr("gpuscale serve: SIGHUP: " + dir_ +
                             "/gpuscale.yaml: created none; updated x"));
}

TEST_F(DaemonServeTest, BadBodyIs400NamingTheFieldAndWrongTokenIs401) {
  token_ = "s3cret";
  StartDaemon(Config(Service(1, 1, kFastQueuePolicyYaml)), {"--token", token_});
  HttpReply unauthorized = Http(Port(), "GET", "/v1/services", "wrong");
  EXPECT_EQ(unauthorized.status, 401);
  HttpReply bad = Http(Port(), "POST", "/v1/services", token_,
                       R"({"name": "y", "command": ["true"], "gpus_per_replica": "two"})");
  EXPECT_EQ(bad.status, 400) << bad.body.dump();
  EXPECT_THAT(bad.body["error"]["field"].dump(), HasSubstr("gpus_per_replica"));
  HttpReply replicas = Http(Port(), "PUT", "/v1/services/x/replicas", token_, R"({"replicas": 7})");
  EXPECT_EQ(replicas.status, 400) << replicas.body.dump();
  EXPECT_EQ(Http(Port(), "GET", "/healthz").status, 200);
}

}  // namespace
}  // namespace gpuscale::daemon_test
