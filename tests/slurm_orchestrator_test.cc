// SlurmOrchestrator against a real Slurm cluster (tests/slurm_fixture.h: 2 nodes x 4 fake
// GPUs on this host), for both transports: the CLI (sbatch/squeue/sinfo/scancel) and
// slurmrestd (REST, JWT). Replicas are `gpuscale emulate` servers or `sleep`.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "core/clock.h"
#include "orch/slurm_cli_transport.h"
#include "orch/slurm_json.h"
#include "orch/slurm_orchestrator.h"
#include "orch/slurm_rest_transport.h"
#include "slurm_cluster_suite.h"

namespace gpuscale::orch {
namespace {

namespace fs = std::filesystem;
using scale::ReplicaPhase;

class SlurmOrchestratorRealTest : public slurm_test::SlurmClusterSuite {
 protected:
  void SetUp() override {
    SlurmClusterSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("gpuscale_slurm_it_{}_{}", getpid(),
                                                   std::string(info->name()).substr(0, 12));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  void TearDown() override {
    CancelJobs(Seconds{15});
    fs::remove_all(dir_);
  }

  std::unique_ptr<SlurmTransport> Transport() const {
    if (GetParam() == "rest") {
      return std::make_unique<SlurmRestTransport>(
          SlurmRestConfig{cluster_->rest_url(), cluster_->user(), cluster_->token(), Seconds{10}});
    }
    SlurmCliConfig cli;
    cli.slurm_conf = cluster_->conf();
    cli.script_dir = (dir_ / "slurm").string();
    cli.timeout = Seconds{10};
    return std::make_unique<SlurmCliTransport>(cli);
  }

  // An emulated vLLM replica per job (1 GPU), on ports from a free range.
  SlurmOrchestratorConfig Config(const std::string& name) {
    SlurmOrchestratorConfig c;
    c.service = name + "-" + GetParam();
    c.command = {GPUSCALE_BINARY_DIR "/gpuscale", "emulate", "--port", "{port}"};
    c.gpus_per_replica = 1;
    c.gres_type = "tesla";
    c.state_dir = dir_.string();
    c.time_limit_minutes = 10;
    c.port_range_start = FreePortBase(26000, 600);
    c.port_range_end = c.port_range_start + 9;
    c.restart_backoff_initial = Seconds{1};
    c.restart_backoff_max = Seconds{2};
    return c;
  }

  std::unique_ptr<SlurmOrchestrator> Make(SlurmOrchestratorConfig config) {
    auto orch = SlurmOrchestrator::Create(std::move(config), Transport());
    EXPECT_TRUE(orch) << orch.error().ToString();
    return orch ? std::move(*orch) : nullptr;
  }

  // Polls every 200 ms until `done` or `timeout`; true when done.
  static bool PollUntil(SlurmOrchestrator& orch, const std::function<bool()>& done,
                        Seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      orch.Poll(SystemClock::Instance().Now());
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  static int CountPhase(const SlurmOrchestrator& orch, ReplicaPhase phase) {
    int n = 0;
    for (const auto& r : orch.ListReplicas()) n += r.phase == phase ? 1 : 0;
    return n;
  }

  // Active jobs carrying the service's name prefix, as Slurm lists them.
  int ActiveJobsOf(const std::string& service) {
    Result<std::vector<SlurmJob>> jobs = Transport()->ListJobs();
    EXPECT_TRUE(jobs) << jobs.error().ToString();
    int n = 0;
    for (const SlurmJob& job : jobs ? *jobs : std::vector<SlurmJob>{}) {
      n += SlurmJobActive(job.state) && job.name.rfind("gpuscale." + service + ".", 0) == 0;
    }
    return n;
  }

  static void StopAllAndWait(SlurmOrchestrator& orch) {
    orch.StopAll(SystemClock::Instance().Now());
    EXPECT_TRUE(PollUntil(orch, [&] { return !orch.HasProcesses(); }, Seconds{20}));
  }

  static Seconds Now() { return SystemClock::Instance().Now(); }

  fs::path dir_;
};

TEST_P(SlurmOrchestratorRealTest, ReplicaBecomesReadyOnItsNodeAndIsScraped) {
  auto orch = Make(Config("ready"));
  ASSERT_NE(orch, nullptr);
  Result<scale::ReplicaStatus> started = orch->Start(Now());
  ASSERT_TRUE(started) << started.error().ToString();
  ASSERT_TRUE(PollUntil(*orch, [&] { return CountPhase(*orch, ReplicaPhase::kReady) == 1; },
                        Seconds{30}))
      << orch->Replicas(Now())[0].last_error;
  const ReplicaInfo info = orch->Replicas(Now())[0];
  EXPECT_EQ(info.host, "127.0.0.1");  // the node's NodeAddr
  httplib::Client client(info.host, info.port);
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("vllm:num_requests_waiting"), std::string::npos);
  std::ifstream log(info.log_path);
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("gpuscale: replica"), std::string::npos) << info.log_path;

  ASSERT_TRUE(orch->Stop(info.id, Now()));
  EXPECT_TRUE(PollUntil(*orch, [&] { return !orch->HasProcesses(); }, Seconds{20}));
  EXPECT_EQ(ActiveJobsOf(orch->config().service), 0);
}

TEST_P(SlurmOrchestratorRealTest, ReplicaSlurmCannotPlaceIsPendingWithReasonResources) {
  SlurmOrchestratorConfig config = Config("pending");
  config.command = {"sleep", "300"};
  config.readiness_path = "";
  config.gpus_per_replica = 4;  // one node's worth: the third replica cannot run
  auto orch = Make(config);
  ASSERT_NE(orch, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(orch->Start(Now()));
  ASSERT_TRUE(PollUntil(*orch,
                        [&] {
                          // Slurm may say "Priority" until its scheduler has looked.
                          const auto infos = orch->Replicas(Now());
                          return CountPhase(*orch, ReplicaPhase::kReady) == 2 &&
                                 CountPhase(*orch, ReplicaPhase::kPending) == 1 &&
                                 std::any_of(infos.begin(), infos.end(), [](const auto& i) {
                                   return i.last_error == "Resources";
                                 });
                        },
                        Seconds{20}));
  for (const ReplicaInfo& info : orch->Replicas(Now())) {
    if (info.phase == ReplicaPhase::kPending) {
      EXPECT_EQ(info.last_error, "Resources");
      Status placed = orch->Place(info.id, Now());
      ASSERT_FALSE(placed);
      EXPECT_EQ(placed.error().code, ErrorCode::kResourceExhausted);
    }
  }
  EXPECT_EQ(orch->Capacity(Now()).max_worker_groups, 2);  // both running, no GPU free
  StopAllAndWait(*orch);
}

TEST_P(SlurmOrchestratorRealTest, RecreatedOrchestratorAdoptsItsJobsWithoutDuplicates) {
  SlurmOrchestratorConfig config = Config("adopt");
  config.command = {"sleep", "300"};
  config.readiness_path = "";
  auto first = Make(config);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->Start(Now()));
  ASSERT_TRUE(first->Start(Now()));
  ASSERT_TRUE(PollUntil(*first, [&] { return CountPhase(*first, ReplicaPhase::kReady) == 2; },
                        Seconds{20}));
  const std::vector<ReplicaRecord> records = first->Records();
  first.reset();  // a daemon restart: jobs keep running

  auto second = Make(config);
  ASSERT_NE(second, nullptr);
  const AdoptionReport report = second->Adopt(records, Now());
  EXPECT_EQ(report.adopted.size(), 2u);
  EXPECT_TRUE(report.errors.empty());
  for (int i = 0; i < 3; ++i) second->Poll(Now());
  EXPECT_EQ(CountPhase(*second, ReplicaPhase::kReady), 2);
  EXPECT_EQ(ActiveJobsOf(config.service), 2);
  EXPECT_EQ(second->Records()[0].engine_id, records[0].engine_id);
  StopAllAndWait(*second);
}

TEST_P(SlurmOrchestratorRealTest, ControllerOutageKeepsReplicasAndRecovers) {
  auto orch = Make(Config("outage"));
  ASSERT_NE(orch, nullptr);
  ASSERT_TRUE(orch->Start(Now()));
  ASSERT_TRUE(PollUntil(*orch, [&] { return CountPhase(*orch, ReplicaPhase::kReady) == 1; },
                        Seconds{30}));
  const ReplicaInfo before = orch->Replicas(Now())[0];
  const std::string job_before = orch->Records()[0].engine_id;
  (void)orch->TakeEvents();

  cluster_->StopController();
  // The listings run on the service's own thread: the failure shows once one has answered.
  ASSERT_TRUE(PollUntil(
      *orch, [&] { return !orch->engine_error().empty(); }, Seconds{30}));
  EXPECT_EQ(CountPhase(*orch, ReplicaPhase::kReady), 1);  // nothing stopped on missing data
  const std::vector<OrchestratorEvent> events = orch->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, events::EventKind::kEngineUnavailable);
  Result<scale::ReplicaStatus> refused = orch->Start(Now());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable) << refused.error().ToString();
  EXPECT_EQ(orch->ListReplicas().size(), 1u);
  httplib::Client client(before.host, before.port);
  httplib::Result health = client.Get("/health");  // the job runs on without its controller
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  ASSERT_TRUE(cluster_->StartController());
  ASSERT_TRUE(PollUntil(*orch, [&] { return orch->engine_error().empty(); }, Seconds{20}));
  EXPECT_EQ(orch->Records()[0].engine_id, job_before);  // the same job, not a resubmission
  EXPECT_EQ(CountPhase(*orch, ReplicaPhase::kReady), 1);
  EXPECT_EQ(ActiveJobsOf(orch->config().service), 1);
  StopAllAndWait(*orch);
}

INSTANTIATE_TEST_SUITE_P(Transports, SlurmOrchestratorRealTest, ::testing::Values("cli", "rest"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gpuscale::orch
