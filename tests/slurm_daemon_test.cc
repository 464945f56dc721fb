// `gpuscale serve` with an `engine: slurm` service on a real Slurm cluster
// (tests/slurm_fixture.h: 2 nodes x 4 fake GPUs, slurmrestd with JWT), once per transport
// (cli: sbatch/squeue/sinfo/scancel; rest: slurmrestd). Replicas are `gpuscale emulate`
// servers run as Slurm jobs. Scenarios: `gpuscale bench` load scales the service out as new
// jobs and back in after the load stops; a job cancelled behind gpuscale's back (`scancel`)
// is replaced by a new job; a replica Slurm cannot place is `pending` with Slurm's reason; a
// restarted daemon adopts the running jobs (no duplicates) and deleting the service cancels
// them. One cluster serves the whole suite; TearDown cancels every job so each test starts
// from an empty queue.
#include <fmt/format.h>
#include <gmock/gmock.h>
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
using ::testing::HasSubstr;

// Target policy on the replicas' queue with short HPA windows, so scaling takes seconds.
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

class SlurmDaemonTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    if (!SlurmTestCluster::MissingBinaries().empty()) return;
    Result<std::unique_ptr<SlurmTestCluster>> started = SlurmTestCluster::Start({});
    if (started) {
      cluster_ = std::move(*started);
    } else {
      start_error_ = started.error().ToString();
    }
  }
  static void TearDownTestSuite() { cluster_.reset(); }  // cancels the jobs, stops Slurm

  void SetUp() override {
    if (const std::string missing = SlurmTestCluster::MissingBinaries(); !missing.empty()) {
      GTEST_SKIP() << missing;
    }
    ASSERT_NE(cluster_, nullptr) << start_error_;
    char tmpl[] = "/tmp/gpuscale_slurm_serve_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }

  void TearDown() override {
    KillDaemon(SIGKILL);
    if (bench_pid_ > 0) kill(-bench_pid_, SIGKILL), waitpid(bench_pid_, nullptr, 0);
    if (HasFailure() && !dir_.empty()) {
      std::ifstream err(dir_ + "/daemon.err");
      std::cerr << "--- daemon stderr ---\n" << err.rdbuf() << "\n";
    }
    if (cluster_ != nullptr && !cluster_->CancelAllJobs(Seconds{20})) {
      ADD_FAILURE() << "jobs left behind";
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Ten consecutive free ports for the replicas (ports are per node; both nodes are here).
  static int FreePortBase() {
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
    return base;
  }

  // The transport's lines of the service's `slurm:` block.
  std::string TransportYaml() const {
    std::ostringstream t;
    if (GetParam() == "rest") {
      t << "      transport: rest\n"
        << "      url: " << cluster_->rest_url() << "\n"
        << "      user: " << cluster_->user() << "\n"
        << "      token: " << cluster_->token() << "\n";
    } else {
      t << "      transport: cli\n"
        << "      slurm_conf: " << cluster_->conf() << "\n";
    }
    return t.str();
  }

  // One service "x": emulated replicas (1 GPU each, slow enough to queue under bench load).
  std::string Config(int min, int max, int gpus_per_replica = 1) const {
    const int base = FreePortBase();
    std::ofstream(dir_ + "/inventory.yaml") << "gpus:\n  - index: 0\n";
    std::ostringstream c;
    c << "gpu: {backend: simulated, inventory: " << dir_ << "/inventory.yaml}\n"
      << "services:\n"
      << "  - name: x\n"
      << "    engine: slurm\n"
      << "    command: [" << kBinary << ", emulate, --port, \"{port}\", --model, m,\n"
      << "              --startup-seconds, \"0.2\", --max-batch-size, \"1\",\n"
      << "              --decode-ms-base, \"20\", --drain-seconds, \"1\"]\n"
      << "    gpus_per_replica: " << gpus_per_replica << "\n"
      << "    startup_timeout_seconds: 30\n"
      << "    drain_timeout_seconds: 3\n"
      << "    min_replicas: " << min << "\n    max_replicas: " << max << "\n"
      << "    slurm:\n"
      << TransportYaml() << "      gres_type: tesla\n"
      << "      time_limit_minutes: 10\n"
      << "      timeout_seconds: 10\n"
      << "      port_range: [" << base << ", " << base + 9 << "]\n"
      << "    policy:\n"
      << kQueuePolicy;
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
  // Replicas counted as the controller does (not draining), by phase when given.
  int Count(const std::string& phase = "") {
    int n = 0;
    for (const json& r : Replicas()) {
      const std::string p = r["phase"];
      if (p != "draining" && (phase.empty() || p == phase)) ++n;
    }
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

  static inline std::unique_ptr<SlurmTestCluster> cluster_;
  static inline std::string start_error_;
  std::string dir_;
  pid_t daemon_pid_ = -1;
  pid_t bench_pid_ = -1;
  int port_ = 0;
};

TEST_P(SlurmDaemonTest, BenchLoadScalesOutAsJobsAndBackIn) {
  StartDaemon(Config(1, 3));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(30)))
      << Replicas().dump();
  ASSERT_EQ(LiveJobs().size(), 1u);
  const json first = Replicas()[0];
  bench_pid_ = Spawn(
      {kBinary, "bench", "--url",
       fmt::format("http://{}:{}", first["host"].get<std::string>(), first["port"].get<int>()),
       "--concurrency", "8", "--duration", "25", "--input-tokens", "16", "--output-tokens", "16",
       "--no-progress"},
      -1, dir_ + "/bench.err");
  ASSERT_GT(bench_pid_, 0);
  const bool scaled_out = WaitFor([&] { return Count("ready") == 3; }, std::chrono::seconds(25));
  const std::set<std::string> jobs_at_peak = LiveJobs();
  kill(bench_pid_, SIGKILL);
  waitpid(bench_pid_, nullptr, 0);
  bench_pid_ = -1;
  ASSERT_TRUE(scaled_out) << Replicas().dump();
  EXPECT_EQ(jobs_at_peak.size(), 3u);  // every replica is its own Slurm job
  EXPECT_EQ(Http(port_, "GET", "/v1/services/x").body["desired_replicas"], 3);

  // Load gone: the queue drains, the window passes, two replicas drain and their jobs end.
  EXPECT_TRUE(
      WaitFor([&] { return Count() == 1 && Replicas().size() == 1; }, std::chrono::seconds(30)))
      << Replicas().dump();
  EXPECT_TRUE(WaitFor([&] { return LiveJobs().size() == 1; }, std::chrono::seconds(20)));
  HttpReply events = Http(port_, "GET", "/v1/events?kind=decision&limit=100");
  EXPECT_THAT(events.body.dump(), HasSubstr("-> 3"));
}

TEST_P(SlurmDaemonTest, JobCancelledBehindItsBackIsReplacedByANewJob) {
  StartDaemon(Config(1, 1));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(30)))
      << Replicas().dump();
  const std::set<std::string> before = LiveJobs();
  ASSERT_EQ(before.size(), 1u);
  ASSERT_TRUE(cluster_->Client({"scancel", *before.begin()}));

  std::set<std::string> after;
  EXPECT_TRUE(WaitFor(
      [&] {
        after = LiveJobs();
        return Count("ready") == 1 && after.size() == 1 && after != before;
      },
      std::chrono::seconds(40)))
      << Replicas().dump();
  EXPECT_GE(Replicas()[0]["restarts"].get<int>(), 1) << Replicas().dump();
  HttpReply events = Http(port_, "GET", "/v1/events?limit=200");
  EXPECT_THAT(events.body.dump(), HasSubstr("replica_crashed"));
}

TEST_P(SlurmDaemonTest, ReplicaSlurmCannotPlaceIsPendingWithSlurmsReason) {
  // 3 replicas x 4 GPUs on 2 nodes x 4 GPUs: Slurm runs two and queues the third. Its reason
  // reads "Priority" until the scheduler has looked at it, then "Resources".
  StartDaemon(Config(3, 3, /*gpus_per_replica=*/4));
  const auto pending_for_resources = [&] {
    int n = 0;
    for (const json& r : Replicas()) {
      n += r["phase"] == "pending" && r["last_error"] == "Resources" ? 1 : 0;
    }
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2 && pending_for_resources() == 1; },
                      std::chrono::seconds(30)))
      << Replicas().dump();
  EXPECT_EQ(LiveJobs().size(), 3u);  // queued in Slurm, not retried by gpuscale
}

TEST_P(SlurmDaemonTest, RestartedDaemonAdoptsJobsAndDeleteCancelsThem) {
  const std::string config = Config(2, 2, /*gpus_per_replica=*/2);
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(40)))
      << Replicas().dump();
  for (const json& r : Replicas()) EXPECT_EQ(r["host"], "127.0.0.1") << r;
  const std::set<std::string> jobs = LiveJobs();
  ASSERT_EQ(jobs.size(), 2u);

  KillDaemon(SIGKILL);  // the jobs run on
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(30)))
      << Replicas().dump();
  for (const json& r : Replicas()) EXPECT_TRUE(r["adopted"].get<bool>()) << r;
  EXPECT_EQ(LiveJobs(), jobs);  // adopted, not resubmitted

  HttpReply deleted = Http(port_, "DELETE", "/v1/services/x");
  EXPECT_LT(deleted.status, 300) << deleted.body.dump();
  EXPECT_TRUE(WaitFor([&] { return LiveJobs().empty(); }, std::chrono::seconds(30)));
}

INSTANTIATE_TEST_SUITE_P(Transports, SlurmDaemonTest, ::testing::Values("cli", "rest"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gpuscale::daemon_test
