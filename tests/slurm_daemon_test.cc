// `gpuscale serve` with an `engine: slurm` service (CLI transport) on a real Slurm cluster
// (tests/slurm_fixture.h): the daemon reaches min_replicas ready as Slurm jobs, a restarted
// daemon adopts them (same jobs, no duplicates), and deleting the service cancels its jobs.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <set>

#include "daemon_test_util.h"
#include "orch/process_util.h"
#include "slurm_fixture.h"

namespace gpuscale::daemon_test {
namespace {

using slurm_test::SlurmTestCluster;

class SlurmDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string missing = SlurmTestCluster::MissingBinaries(); !missing.empty()) {
      GTEST_SKIP() << missing;
    }
    SlurmTestCluster::Options options;
    options.rest = false;
    Result<std::unique_ptr<SlurmTestCluster>> cluster = SlurmTestCluster::Start(options);
    ASSERT_TRUE(cluster) << cluster.error().ToString();
    cluster_ = std::move(*cluster);
    char tmpl[] = "/tmp/gpuscale_slurm_serve_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }

  void TearDown() override {
    KillDaemon(SIGKILL);
    if (HasFailure() && !dir_.empty()) {
      std::ifstream err(dir_ + "/daemon.err");
      std::cerr << "--- daemon stderr ---\n" << err.rdbuf() << "\n";
    }
    cluster_.reset();  // cancels the jobs, stops Slurm
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string Config() const {
    std::mt19937 random{std::random_device{}()};
    int base = 0;
    for (int attempt = 0; attempt < 50; ++attempt) {
      base = 40000 + static_cast<int>(random() % 1000) * 10;
      bool free = true;
      for (int p = base; p < base + 10 && free; ++p) {
        free = orch::PickFreePort(p, p, {}).has_value();
      }
      if (free) break;
    }
    std::ofstream(dir_ + "/inventory.yaml") << "gpus:\n  - index: 0\n";
    std::ostringstream c;
    c << "gpu: {backend: simulated, inventory: " << dir_ << "/inventory.yaml}\n"
      << "services:\n"
      << "  - name: x\n"
      << "    engine: slurm\n"
      << "    command: [" << kBinary << ", emulate, --port, \"{port}\", --startup-seconds, "
      << "\"0.2\"]\n"
      << "    gpus_per_replica: 2\n"
      << "    startup_timeout_seconds: 30\n"
      << "    min_replicas: 2\n    max_replicas: 2\n"
      << "    slurm:\n"
      << "      transport: cli\n"
      << "      slurm_conf: " << cluster_->conf() << "\n"
      << "      gres_type: tesla\n"
      << "      time_limit_minutes: 10\n"
      << "      timeout_seconds: 10\n"
      << "      port_range: [" << base << ", " << base + 9 << "]\n"
      << "    policy:\n"
      << "      family: target\n"
      << "      target:\n"
      << "        metrics:\n"
      << "          - {name: \"vllm:num_requests_waiting\", type: AverageValue, "
      << "average_value: 5}\n";
    return c.str();
  }

  void StartDaemon(const std::string& config) {
    std::ofstream(dir_ + "/gpuscale.yaml") << config;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    daemon_pid_ = Spawn({kBinary, "serve", "--config", dir_ + "/gpuscale.yaml", "--listen",
                         "127.0.0.1:0", "--state-dir", dir_ + "/state", "--loop-interval", "1"},
                        fds[1], dir_ + "/daemon.err");
    close(fds[1]);
    ASSERT_GT(daemon_pid_, 0);
    std::string seen;
    std::optional<std::string> line = ReadLineWithPrefix(
        fds[0], "gpuscale serve: API http://127.0.0.1:", std::chrono::seconds(20), seen);
    close(fds[0]);
    ASSERT_TRUE(line) << "no start-up line: " << seen;
    port_ = std::atoi(line->c_str() + std::string("gpuscale serve: API http://127.0.0.1:").size());
  }

  void KillDaemon(int sig) {
    if (daemon_pid_ <= 0) return;
    kill(-daemon_pid_, sig);
    waitpid(daemon_pid_, nullptr, 0);
    daemon_pid_ = -1;
  }

  json Replicas() {
    HttpReply r = Http(port_, "GET", "/v1/services/x/replicas");
    return r.status == 200 ? r.body["replicas"] : json::array();
  }
  int CountReady() {
    int n = 0;
    for (const json& r : Replicas()) n += r["phase"] == "ready" ? 1 : 0;
    return n;
  }
  // Job ids of the service's jobs Slurm still runs or queues.
  std::set<std::string> LiveJobs() {
    Result<std::string> out = cluster_->Client({"squeue", "-h", "-o", "%i %j %T"});
    std::set<std::string> ids;
    if (!out) return ids;
    std::istringstream lines(*out);
    std::string id, name, state;
    while (lines >> id >> name >> state) {
      if (name.rfind("gpuscale.x.", 0) == 0 && (state == "RUNNING" || state == "PENDING")) {
        ids.insert(id);
      }
    }
    return ids;
  }

  std::unique_ptr<SlurmTestCluster> cluster_;
  std::string dir_;
  pid_t daemon_pid_ = -1;
  int port_ = 0;
};

TEST_F(SlurmDaemonTest, ServeRunsReplicasAsJobsAdoptsThemAndCancelsOnDelete) {
  const std::string config = Config();
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return CountReady() == 2; }, std::chrono::seconds(40)))
      << Replicas().dump();
  for (const json& r : Replicas()) EXPECT_EQ(r["host"], "127.0.0.1") << r;
  const std::set<std::string> jobs = LiveJobs();
  ASSERT_EQ(jobs.size(), 2u);

  KillDaemon(SIGKILL);  // the jobs run on
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return CountReady() == 2; }, std::chrono::seconds(30)))
      << Replicas().dump();
  for (const json& r : Replicas()) EXPECT_TRUE(r["adopted"].get<bool>()) << r;
  EXPECT_EQ(LiveJobs(), jobs);  // adopted, not resubmitted

  HttpReply deleted = Http(port_, "DELETE", "/v1/services/x");
  EXPECT_LT(deleted.status, 300) << deleted.body.dump();
  EXPECT_TRUE(WaitFor([&] { return LiveJobs().empty(); }, std::chrono::seconds(30)));
}

}  // namespace
}  // namespace gpuscale::daemon_test
