// `gpuscale serve` with an `engine: slurm` service on a real Slurm cluster
// (tests/slurm_fixture.h: 2 nodes x 4 fake GPUs, slurmrestd with JWT), once per transport
// (cli: sbatch/squeue/sinfo/scancel; rest: slurmrestd). Replicas are `gpuscale emulate`
// servers run as Slurm jobs. Scenarios: `gpuscale bench` load scales the service out as new
// jobs and back in after the load stops; a job cancelled behind gpuscale's back (`scancel`)
// is replaced by a new job; a replica Slurm cannot place is `pending` with Slurm's reason; a
// restarted daemon adopts the running jobs (no duplicates) and deleting the service cancels
// them; a service created through the API and deleted while slurmctld was down, by a daemon
// killed before Slurm took the cancellation, has its jobs cancelled by the next daemon. One
// cluster serves the whole suite; TearDown restarts slurmctld when a test stopped it and
// cancels every job so each test starts from an empty queue.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "daemon_test_util.h"
#include "slurm_cluster_suite.h"

namespace gpuscale::daemon_test {
namespace {

using ::testing::HasSubstr;

class SlurmDaemonTest : public slurm_test::SlurmClusterSuite {
 protected:
  void SetUp() override {
    SlurmClusterSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    dir_ = MakeTempDir("gpuscale_slurm_serve_");
    ASSERT_FALSE(dir_.empty());
  }

  void TearDown() override {
    daemon_.Kill(SIGKILL);
    if (bench_pid_ > 0) kill(-bench_pid_, SIGKILL), waitpid(bench_pid_, nullptr, 0);
    if (HasFailure() && !dir_.empty()) DumpFile("daemon stderr", dir_ + "/daemon.err");
    if (controller_stopped_) {  // else CancelJobs could not reach Slurm
      EXPECT_TRUE(cluster_->StartController());
      controller_stopped_ = false;
    }
    CancelJobs(Seconds{20});
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
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
    const int base = FreePortBase(20000, 600);
    std::ofstream(dir_ + "/inventory.yaml") << "gpus:\n  - index: 0\n";
    std::ostringstream c;
    c << "gpu: {backend: simulated, inventory: " << dir_ << "/inventory.yaml}\n"
      << "services:\n"
      << "  - name: x\n"
      << "    engine: slurm\n"
      << EmulatedReplicaYaml() << "    gpus_per_replica: " << gpus_per_replica << "\n"
      << "    startup_timeout_seconds: 30\n"
      << "    drain_timeout_seconds: 3\n"
      << "    min_replicas: " << min << "\n    max_replicas: " << max << "\n"
      << "    slurm:\n"
      << TransportYaml() << "      gres_type: tesla\n"
      << "      time_limit_minutes: 10\n"
      << "      timeout_seconds: 10\n"
      << "      port_range: [" << base << ", " << base + 9 << "]\n"
      << "    policy:\n"
      << kFastQueuePolicyYaml;
    return c.str();
  }

  // A daemon config without services (the same GPU inventory as Config's).
  std::string ConfigWithoutServices() const {
    std::ofstream(dir_ + "/inventory.yaml") << "gpus:\n  - index: 0\n";
    return "gpu: {backend: simulated, inventory: " + dir_ + "/inventory.yaml}\nservices: []\n";
  }

  // Service "x" as a POST /v1/services body: Config's replicas and Slurm settings, `replicas`
  // of them pinned by min == max (no policy block: the rules family without rules).
  json ServiceJson(int replicas) const {
    const int base = FreePortBase(20000, 600);
    json slurm = {{"gres_type", "tesla"},
                  {"time_limit_minutes", 10},
                  {"timeout_seconds", 10},
                  {"port_range", {base, base + 9}}};
    if (GetParam() == "rest") {
      slurm.update({{"transport", "rest"},
                    {"url", cluster_->rest_url()},
                    {"user", cluster_->user()},
                    {"token", cluster_->token()}});
    } else {
      slurm.update({{"transport", "cli"}, {"slurm_conf", cluster_->conf()}});
    }
    const std::vector<std::string> command = {kBinary,
                                              "emulate",
                                              "--port",
                                              "{port}",
                                              "--model",
                                              "m",
                                              "--startup-seconds",
                                              "0.2",
                                              "--max-batch-size",
                                              "1",
                                              "--timing",
                                              "linear",
                                              "--decode-ms-base",
                                              "20",
                                              "--drain-seconds",
                                              "1"};
    return {{"name", "x"},
            {"engine", "slurm"},
            {"command", command},
            {"gpus_per_replica", 1},
            {"startup_timeout_seconds", 30},
            {"drain_timeout_seconds", 3},
            {"min_replicas", replicas},
            {"max_replicas", replicas},
            {"slurm", slurm}};
  }

  void StartDaemon(const std::string& config) { daemon_.Start(config, {.dir = dir_}); }

  // Stops slurmctld; TearDown restarts it if the test does not.
  void StopController() {
    cluster_->StopController();
    controller_stopped_ = true;
  }
  Status StartController() {
    controller_stopped_ = false;
    return cluster_->StartController();
  }

  // GET /v1/events filtered by `query` (e.g. "service=x&kind=replica_stopped").
  HttpReply Events(const std::string& query) {
    return Http(Port(), "GET", "/v1/events?limit=100&" + query);
  }

  int Port() const { return daemon_.port(); }
  json Replicas() { return ServiceReplicas(Port(), "x"); }
  int Count(const std::string& phase = "") { return CountReplicas(Replicas(), phase); }

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

  std::string dir_;
  ServeDaemon daemon_;
  pid_t bench_pid_ = -1;
  bool controller_stopped_ = false;
};

TEST_P(SlurmDaemonTest, BenchLoadScalesOutAsJobsAndBackIn) {
  StartDaemon(Config(1, 3));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(30)))
      << Replicas().dump();
  ASSERT_EQ(LiveJobs().size(), 1u);
  const json first = Replicas()[0];
  bench_pid_ = Spawn(BenchArgv(fmt::format("http://{}:{}", first["host"].get<std::string>(),
                                           first["port"].get<int>()),
                               25),
                     -1, dir_ + "/bench.err");
  ASSERT_GT(bench_pid_, 0);
  const bool scaled_out = WaitFor([&] { return Count("ready") == 3; }, std::chrono::seconds(25));
  const std::set<std::string> jobs_at_peak = LiveJobs();
  kill(bench_pid_, SIGKILL);
  waitpid(bench_pid_, nullptr, 0);
  bench_pid_ = -1;
  ASSERT_TRUE(scaled_out) << Replicas().dump();
  EXPECT_EQ(jobs_at_peak.size(), 3u);  // every replica is its own Slurm job
  EXPECT_EQ(Http(Port(), "GET", "/v1/services/x").body["desired_replicas"], 3);

  // Load gone: the queue drains, the window passes, two replicas drain and their jobs end.
  EXPECT_TRUE(
      WaitFor([&] { return Count() == 1 && Replicas().size() == 1; }, std::chrono::seconds(30)))
      << Replicas().dump();
  EXPECT_TRUE(WaitFor([&] { return LiveJobs().size() == 1; }, std::chrono::seconds(20)));
  HttpReply events = Http(Port(), "GET", "/v1/events?kind=decision&limit=100");
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
  HttpReply events = Http(Port(), "GET", "/v1/events?limit=200");
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
  // A queued job has no node yet: no address to show.
  for (const json& r : Replicas()) {
    if (r["phase"] == "pending") {
      EXPECT_TRUE(r["host"].is_null()) << r;
    } else {
      EXPECT_EQ(r["host"], "127.0.0.1") << r;
    }
  }
}

TEST_P(SlurmDaemonTest, RestartedDaemonAdoptsJobsAndDeleteCancelsThem) {
  const std::string config = Config(2, 2, /*gpus_per_replica=*/2);
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(40)))
      << Replicas().dump();
  for (const json& r : Replicas()) EXPECT_EQ(r["host"], "127.0.0.1") << r;
  const std::set<std::string> jobs = LiveJobs();
  ASSERT_EQ(jobs.size(), 2u);

  daemon_.Kill(SIGKILL);  // the jobs run on
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(30)))
      << Replicas().dump();
  for (const json& r : Replicas()) EXPECT_TRUE(r["adopted"].get<bool>()) << r;
  EXPECT_EQ(LiveJobs(), jobs);  // adopted, not resubmitted

  HttpReply deleted = Http(Port(), "DELETE", "/v1/services/x");
  EXPECT_LT(deleted.status, 300) << deleted.body.dump();
  EXPECT_TRUE(WaitFor([&] { return LiveJobs().empty(); }, std::chrono::seconds(30)));
}

TEST_P(SlurmDaemonTest, RestartedDaemonCancelsJobsOfAServiceDeletedWhileSlurmWasDown) {
  const std::string config = ConfigWithoutServices();  // x exists only through the API
  StartDaemon(config);
  HttpReply created = Http(Port(), "POST", "/v1/services", "", ServiceJson(2).dump());
  ASSERT_EQ(created.status, 201) << created.body.dump();
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(40)))
      << Replicas().dump();
  const std::set<std::string> jobs = LiveJobs();
  ASSERT_EQ(jobs.size(), 2u);

  // Mid-delete death: the daemon applies the delete but Slurm cannot take the cancellation
  // (slurmctld is down), then the daemon is killed; the jobs run on.
  StopController();
  HttpReply deleted = Http(Port(), "DELETE", "/v1/services/x");
  ASSERT_EQ(deleted.status, 204) << deleted.body.dump();
  int64_t before_restart = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        HttpReply applied = Events("service=x&kind=service_deleted");
        if (applied.status != 200) return false;
        before_restart = applied.body["last_id"].get<int64_t>();
        return applied.body["events"].size() == 1;
      },
      std::chrono::seconds(60)));
  // The cancels run on the service's own thread, after the delete is applied: kill the
  // daemon once both have come back refused, or one still waiting on the controller could
  // land after it restarts and leave nothing for the next daemon to do.
  ASSERT_TRUE(WaitFor(
      [&] {
        HttpReply failed = Events("service=x&kind=replica_stop_failed");
        return failed.status == 200 && failed.body["events"].size() == 2;
      },
      std::chrono::seconds(60)));
  daemon_.Kill(SIGKILL);
  ASSERT_TRUE(StartController());
  ASSERT_EQ(LiveJobs(), jobs);  // nobody cancelled them

  // The next daemon, whose config still lacks x, cancels them through Slurm.
  StartDaemon(config);
  EXPECT_TRUE(WaitFor([&] { return LiveJobs().empty(); }, std::chrono::seconds(30)))
      << "still live: " << fmt::format("{}", fmt::join(LiveJobs(), " "));
  EXPECT_EQ(Http(Port(), "GET", "/v1/services/x").status, 404);
  HttpReply stopped;
  const std::string since =
      fmt::format("service=x&kind=replica_stopped&since_id={}", before_restart);
  EXPECT_TRUE(WaitFor(
      [&] {
        stopped = Events(since);
        return stopped.status == 200 && stopped.body["events"].size() == 2;
      },
      std::chrono::seconds(15)))
      << stopped.body.dump();
  for (const std::string& job : jobs) {
    EXPECT_THAT(stopped.body.dump(), HasSubstr(fmt::format("Slurm job {} ended", job)));
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, SlurmDaemonTest, ::testing::Values("cli", "rest"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gpuscale::daemon_test
