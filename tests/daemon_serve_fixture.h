// DaemonServeTest: the fixture of the `gpuscale serve` end-to-end tests (daemon_serve_test.cc,
// gateway_serve_test.cc, disagg_serve_test.cc), and BackgroundBench: a scratch directory, an
// environment marker on every process the test starts, one ServeDaemon with simulated GPUs, the
// service block of emulated replicas, and helpers to load and count them. TearDown kills the
// daemon's process group and every marked process, and dumps the daemon's output after a failure.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "daemon_test_util.h"

namespace gpuscale::daemon_test {

// `gpuscale bench` through the gateway in the background: its JSON report lands in
// dir/name.json. Finish() waits for it and parses the report.
class BackgroundBench {
 public:
  BackgroundBench(const std::string& dir, const std::string& name, int gateway_port,
                  const std::vector<std::string>& args, const std::string& marker)
      : report_(dir + "/" + name + ".json") {
    const int out = open(report_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> argv = {
        kBinary,         "bench", "--url", "http://127.0.0.1:" + std::to_string(gateway_port),
        "--no-progress", "-o",    "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = out >= 0 ? Spawn(argv, out, dir + "/" + name + ".err", {marker}) : -1;
    if (out >= 0) close(out);
  }
  bool started() const { return pid_ > 0; }
  json Finish() {
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    pid_ = -1;
    std::ifstream in(report_);
    return json::parse(in, nullptr, false);
  }
  ~BackgroundBench() {
    if (pid_ > 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
  }

 private:
  std::string report_;
  pid_t pid_ = -1;
};

// Requests each replica received through the gateway (gpuscale_gateway_replica_requests_total
// on the API's /metrics), by replica id.
inline std::map<std::string, double> GatewayRequestsByReplica(int api_port) {
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

}  // namespace gpuscale::daemon_test
