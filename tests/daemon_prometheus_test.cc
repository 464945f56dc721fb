// `gpuscale serve` reading its scaling metric from a real Prometheus server (Debian's
// /usr/bin/prometheus) through PromQL: the test starts Prometheus on a free loopback port with
// a file_sd target file it keeps in sync with the daemon's replicas (GET
// /v1/services/x/replicas), and the service's target policy queries
// sum(vllm:num_requests_waiting). Load from `gpuscale bench` must scale it out, and the end of
// the load back in. Skipped when Prometheus is not installed (scripts/setup installs it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <filesystem>

#include "daemon_test_util.h"

namespace gpuscale::daemon_test {
namespace {

constexpr char kPrometheus[] = "/usr/bin/prometheus";

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

class DaemonPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPrometheus, X_OK) != 0) GTEST_SKIP() << "prometheus is not installed";
    dir_ = MakeTempDir("gpuscale_prom_test_");
    ASSERT_FALSE(dir_.empty());
    marker_ = TestMarker(dir_);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    KillMarkedProcesses(marker_);
    daemon_.Kill(SIGKILL);
    if (prometheus_pid_ > 0) waitpid(prometheus_pid_, nullptr, 0);
    if (HasFailure()) {
      for (const char* log : {"daemon.err", "bench.err", "prometheus.err"}) {
        DumpFile(log, dir_ + "/" + log);
      }
    }
    std::filesystem::remove_all(dir_);
  }

  void StartPrometheus() {
    prom_port_ = FreePort();
    WriteTargets({});
    std::ofstream(dir_ + "/prometheus.yml")
        << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        << "scrape_configs:\n"
        << "  - job_name: replicas\n"
        << "    file_sd_configs: [{files: ['" << dir_
        << "/targets.json'], refresh_interval: 1s}]\n";
    prometheus_pid_ = Spawn({kPrometheus, "--config.file=" + dir_ + "/prometheus.yml",
                             "--storage.tsdb.path=" + dir_ + "/prom-data",
                             "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_)},
                            -1, dir_ + "/prometheus.err", {marker_});
    ASSERT_GT(prometheus_pid_, 0);
    ASSERT_TRUE(WaitFor([&] { return Http(prom_port_, "GET", "/-/ready").status == 200; },
                        std::chrono::seconds(20)));
  }

  void WriteTargets(const std::vector<int>& ports) {
    json targets = json::array();
    for (int port : ports) targets.push_back("127.0.0.1:" + std::to_string(port));
    const std::string tmp = dir_ + "/targets.json.tmp";
    std::ofstream(tmp) << json::array({{{"targets", targets}}}).dump();
    std::filesystem::rename(tmp, dir_ + "/targets.json");  // atomic for the file watcher
  }

  // Points Prometheus at the replicas serving now; returns how many are not draining (only
  // ready ones when `ready_only`).
  int SyncTargets(bool ready_only = false) {
    const json replicas = ServiceReplicas(Port(), "x");
    std::vector<int> ports;
    for (const json& replica : replicas) {
      if (replica["port"].get<int>() > 0) ports.push_back(replica["port"].get<int>());
    }
    if (ports != last_ports_) WriteTargets(ports), last_ports_ = ports;
    return CountReplicas(replicas, ready_only ? "ready" : "");
  }

  void StartDaemon() {
    std::ostringstream config;
    config
        << "gpu: {backend: simulated}\n"
        << "prometheus: {url: \"http://127.0.0.1:" << prom_port_ << "\", timeout_seconds: 2}\n"
        << "services:\n  - name: x\n"
        << EmulatedReplicaYaml(marker_)
        << "    drain_timeout_seconds: 5\n    min_replicas: 1\n    max_replicas: 3\n"
        << "    policy:\n      family: target\n      target:\n        metrics:\n"
        << "          - {name: queue, query: \"sum(vllm:num_requests_waiting)\",\n"
        << "             type: AverageValue, average_value: 2}\n"
        << "        behavior:\n"
        << "          scale_up: {policies: [{type: Pods, value: 4, period_seconds: 1}]}\n"
        << "          scale_down: {stabilization_window_seconds: 3,\n"
        << "                       policies: [{type: Percent, value: 100, period_seconds: 1}]}\n";
    daemon_.Start(config.str(), {.dir = dir_, .env = {marker_}});
  }

  int Port() const { return daemon_.port(); }

  std::string dir_, marker_;
  ServeDaemon daemon_;
  pid_t prometheus_pid_ = -1;
  int prom_port_ = 0;
  std::vector<int> last_ports_;
};

TEST_F(DaemonPrometheusTest, PromQlMetricScalesOutUnderLoadAndBackIn) {
  StartPrometheus();
  StartDaemon();
  ASSERT_TRUE(
      WaitFor([&] { return SyncTargets(/*ready_only=*/true) == 1; }, std::chrono::seconds(15)));
  const pid_t bench = Spawn(BenchArgv("http://127.0.0.1:" + std::to_string(last_ports_[0]), 30), -1,
                            dir_ + "/bench.err", {marker_});
  ASSERT_GT(bench, 0);
  const bool scaled_out = WaitFor([&] { return SyncTargets() == 3; }, std::chrono::seconds(30));
  kill(bench, SIGKILL);
  waitpid(bench, nullptr, 0);
  HttpReply service = Http(Port(), "GET", "/v1/services/x");
  ASSERT_TRUE(scaled_out)
      << service.body.dump() << "\nprometheus: "
      << Http(prom_port_, "GET", "/api/v1/query?query=vllm:num_requests_waiting").body.dump();
  EXPECT_EQ(service.body["desired_replicas"], 3);

  EXPECT_TRUE(WaitFor([&] { return SyncTargets() == 1 && last_ports_.size() == 1; },
                      std::chrono::seconds(30)))
      << Http(Port(), "GET", "/v1/services/x").body.dump();
}

}  // namespace
}  // namespace gpuscale::daemon_test
