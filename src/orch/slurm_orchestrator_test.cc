// SlurmOrchestrator against a scripted fake transport: job states -> replica phases,
// crashes and resubmission with backoff, outages, stray jobs, adoption, capacity.
// tests/slurm_orchestrator_test.cc runs the same adapter against a real Slurm cluster.
#include "orch/slurm_orchestrator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/mutex.h"

namespace gpuscale::orch {
namespace {

using scale::ReplicaPhase;

// A cluster in memory: jobs keyed by id; `down` makes every call kUnavailable.
struct FakeCluster {
  std::map<std::string, SlurmJob> jobs;
  std::vector<SlurmNode> nodes;
  std::vector<SlurmJobRequest> submitted;
  std::vector<std::string> cancelled;
  bool down = false;
  int next_id = 100;
};

class FakeTransport final : public SlurmTransport {
 public:
  explicit FakeTransport(FakeCluster& cluster) : c_(cluster) {}
  std::string_view Name() const override { return "fake"; }
  Result<std::string> Submit(const SlurmJobRequest& request) override {
    if (c_.down) return Unavailable("controller down");
    c_.submitted.push_back(request);
    const std::string id = std::to_string(c_.next_id++);
    c_.jobs[id] = SlurmJob{id, request.name, request.comment, "PENDING", "Priority", "", ""};
    return id;
  }
  Result<std::vector<SlurmJob>> ListJobs() override {
    if (c_.down) return Unavailable("controller down");
    std::vector<SlurmJob> out;
    for (const auto& [id, job] : c_.jobs) out.push_back(job);
    return out;
  }
  Result<std::vector<SlurmNode>> ListNodes() override {
    if (c_.down) return Unavailable("controller down");
    return c_.nodes;
  }
  Status Cancel(const std::string& job_id) override {
    if (c_.down) return Unavailable("controller down");
    auto it = c_.jobs.find(job_id);
    if (it == c_.jobs.end()) return NotFound("Invalid job id specified");
    c_.cancelled.push_back(job_id);
    it->second.state = "CANCELLED";
    return OkStatus();
  }

 private:
  FakeCluster& c_;
};

class SlurmOrchestratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscale_slurm_orch_" + std::to_string(getpid()));
    cluster_.nodes = {
        SlurmNode{"n1", "10.0.0.1", "h1", "mixed", {}, {"gpu"}, "gpu:tesla:4",
                  "gpu:tesla:2(IDX:0-1)"},
        SlurmNode{"n2", "10.0.0.2", "h2", "idle", {}, {"gpu"}, "gpu:tesla:4", "gpu:tesla:0"},
        SlurmNode{"n3", "10.0.0.3", "h3", "idle", {"DRAIN"}, {"gpu"}, "gpu:tesla:4", ""}};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  SlurmOrchestratorConfig Config() const {
    SlurmOrchestratorConfig c;
    c.service = "chat";
    c.command = {"server", "--port", "{port}"};
    c.gpus_per_replica = 2;
    c.gres_type = "tesla";
    c.state_dir = dir_.string();
    c.port_range_start = 21000;
    c.port_range_end = 21009;
    c.restart_backoff_initial = Seconds{2};
    c.restart_backoff_max = Seconds{8};
    return c;
  }

  std::unique_ptr<SlurmOrchestrator> Make(SlurmOrchestratorConfig config) {
    auto orch = SlurmOrchestrator::Create(
        std::move(config), std::make_unique<FakeTransport>(cluster_),
        [this](const std::string& host, int port, const std::string&) {
          probes_.push_back(host + ":" + std::to_string(port));
          return ready_;
        },
        SerialCalls::Mode::kInline);
    EXPECT_TRUE(orch) << orch.error().ToString();
    return std::move(*orch);
  }

  void Run(const std::string& job_id, const std::string& node) {
    cluster_.jobs[job_id].state = "RUNNING";
    cluster_.jobs[job_id].reason = "None";
    cluster_.jobs[job_id].batch_host = node;
    cluster_.jobs[job_id].nodes = node;
  }

  static std::vector<std::string> Kinds(const std::vector<OrchestratorEvent>& events) {
    std::vector<std::string> kinds;
    for (const auto& e : events) kinds.emplace_back(events::EventKindName(e.kind));
    return kinds;
  }

  std::filesystem::path dir_;
  FakeCluster cluster_;
  std::vector<std::string> probes_;
  bool ready_ = false;
};

TEST_F(SlurmOrchestratorTest, SubmitsANamedJobWithGresAndBecomesReadyOnItsNode) {
  auto orch = Make(Config());
  Result<scale::ReplicaStatus> started = orch->Start(Seconds{0});
  ASSERT_TRUE(started) << started.error().ToString();
  EXPECT_EQ(started->phase, ReplicaPhase::kPending);
  ASSERT_EQ(cluster_.submitted.size(), 1u);
  const SlurmJobRequest& job = cluster_.submitted[0];
  EXPECT_EQ(job.name, "gpuscale.chat.chat-0");
  EXPECT_EQ(job.comment, "gpuscale service=chat replica=chat-0");
  EXPECT_EQ(job.gres, "gpu:tesla:2");
  EXPECT_NE(job.script.find("exec 'server' '--port' '21000'"), std::string::npos) << job.script;

  orch->Poll(Seconds{1});
  EXPECT_EQ(orch->Replicas(Seconds{1})[0].last_error, "Priority");
  EXPECT_EQ(orch->Replicas(Seconds{1})[0].host, "");  // queued: no node, no address yet
  EXPECT_EQ(orch->Replicas(Seconds{1})[0].port, 0);
  EXPECT_FALSE(orch->Place("chat-0", Seconds{1}));  // queued: Slurm decides

  Run("100", "n2");
  orch->Poll(Seconds{2});
  EXPECT_EQ(orch->ListReplicas()[0].phase, ReplicaPhase::kStarting);
  EXPECT_EQ(probes_, std::vector<std::string>{"10.0.0.2:21000"});
  ready_ = true;
  // Prepared ahead (the daemon probes every service at once), Poll uses the answer.
  orch->PrepareProbes(Seconds{3});
  EXPECT_EQ(probes_.size(), 2u);
  orch->Poll(Seconds{3});
  EXPECT_EQ(probes_.size(), 2u) << "Poll probed again";
  EXPECT_EQ(orch->ListReplicas()[0].phase, ReplicaPhase::kReady);
  const ReplicaInfo info = orch->Replicas(Seconds{3})[0];
  EXPECT_EQ(info.host, "10.0.0.2");
  EXPECT_EQ(info.port, 21000);
  EXPECT_EQ(orch->Records()[0].engine_id, "100");
  EXPECT_EQ(Kinds(orch->TakeEvents()),
            (std::vector<std::string>{"replica_started", "replica_pending", "replica_scheduled",
                                      "replica_ready"}));
}

TEST_F(SlurmOrchestratorTest, PortsAreUniqueAmongReplicas) {
  auto orch = Make(Config());
  ASSERT_TRUE(orch->Start(Seconds{0}));
  ASSERT_TRUE(orch->Start(Seconds{0}));
  EXPECT_NE(cluster_.submitted[0].script, cluster_.submitted[1].script);
  EXPECT_NE(cluster_.submitted[1].script.find("'21001'"), std::string::npos);
}

TEST_F(SlurmOrchestratorTest, EndedJobIsResubmittedAfterBackoff) {
  auto orch = Make(Config());
  ASSERT_TRUE(orch->Start(Seconds{0}));
  Run("100", "n1");
  ready_ = true;
  orch->Poll(Seconds{1});
  cluster_.jobs["100"].state = "FAILED";
  orch->Poll(Seconds{10});
  EXPECT_EQ(orch->Replicas(Seconds{10})[0].state, ReplicaState::kRestarting);
  EXPECT_EQ(cluster_.submitted.size(), 1u);
  orch->Poll(Seconds{11});  // backoff (2 s) not over
  EXPECT_EQ(cluster_.submitted.size(), 1u);
  orch->Poll(Seconds{12});
  ASSERT_EQ(cluster_.submitted.size(), 2u);
  EXPECT_EQ(cluster_.submitted[1].name, "gpuscale.chat.chat-0");
  orch->Poll(Seconds{13});  // the sbatch's answer is applied by the next Poll
  EXPECT_EQ(orch->Records()[0].engine_id, "101");
  EXPECT_EQ(orch->Records()[0].restarts, 1);
}

// Something else on the node may hold the port (a replica then dies at start, every time):
// each resubmission tries the next port no other replica holds, wrapping around the range.
TEST_F(SlurmOrchestratorTest, ResubmissionTriesTheNextFreePort) {
  SlurmOrchestratorConfig config = Config();
  config.port_range_end = 21002;  // three ports
  auto orch = Make(config);
  ASSERT_TRUE(orch->Start(Seconds{0}));  // chat-0 on 21000
  ASSERT_TRUE(orch->Start(Seconds{0}));  // chat-1 on 21001
  const auto fail_and_resubmit = [&](const std::string& job_id, Seconds now) {
    cluster_.jobs[job_id].state = "FAILED";
    orch->Poll(now);
    orch->Poll(now + Seconds{10});  // past the backoff (at most 8 s)
  };
  fail_and_resubmit("100", Seconds{1});
  ASSERT_EQ(cluster_.submitted.size(), 3u);
  EXPECT_NE(cluster_.submitted[2].script.find("'21002'"), std::string::npos)
      << cluster_.submitted[2].script;  // 21001 is chat-1's
  fail_and_resubmit("102", Seconds{20});
  ASSERT_EQ(cluster_.submitted.size(), 4u);
  EXPECT_NE(cluster_.submitted[3].script.find("'21000'"), std::string::npos)
      << cluster_.submitted[3].script;  // wrapped around
  EXPECT_EQ(orch->Records()[0].port, 21000);

  config.port_range_end = 21000;  // one port: the only one is retried
  config.service = "solo";
  auto solo = Make(config);
  ASSERT_TRUE(solo->Start(Seconds{0}));
  const std::string job_id = std::to_string(cluster_.next_id - 1);
  cluster_.jobs[job_id].state = "FAILED";
  solo->Poll(Seconds{1});
  solo->Poll(Seconds{11});
  EXPECT_NE(cluster_.submitted.back().script.find("'21000'"), std::string::npos);
  EXPECT_EQ(cluster_.submitted.back().name, "gpuscale.solo.solo-0");
}

TEST_F(SlurmOrchestratorTest, OutageKeepsReplicasAndReportsTheEngineUnavailable) {
  auto orch = Make(Config());
  ASSERT_TRUE(orch->Start(Seconds{0}));
  Run("100", "n1");
  ready_ = true;
  orch->Poll(Seconds{1});
  (void)orch->TakeEvents();
  cluster_.down = true;
  orch->Poll(Seconds{2});
  orch->Poll(Seconds{3});
  EXPECT_EQ(orch->ListReplicas()[0].phase, ReplicaPhase::kReady);
  EXPECT_NE(orch->Replicas(Seconds{3})[0].last_error.find("controller down"), std::string::npos);
  EXPECT_EQ(Kinds(orch->TakeEvents()), std::vector<std::string>{"engine_unavailable"});
  EXPECT_FALSE(orch->Start(Seconds{3}));  // no half-created replica
  EXPECT_EQ(orch->ListReplicas().size(), 1u);
  EXPECT_TRUE(cluster_.cancelled.empty());

  cluster_.down = false;
  orch->Poll(Seconds{4});
  EXPECT_EQ(Kinds(orch->TakeEvents()), std::vector<std::string>{"engine_recovered"});
  EXPECT_EQ(orch->engine_error(), "");
  EXPECT_EQ(cluster_.submitted.size(), 1u);
}

TEST_F(SlurmOrchestratorTest, StopCancelsAndWaitsForTheJobToEnd) {
  auto orch = Make(Config());
  ASSERT_TRUE(orch->Start(Seconds{0}));
  Run("100", "n1");
  ready_ = true;
  orch->Poll(Seconds{1});
  cluster_.down = true;  // the cancel cannot land yet
  ASSERT_TRUE(orch->Stop("chat-0", Seconds{2}));
  EXPECT_TRUE(orch->ListReplicas().empty());
  EXPECT_TRUE(orch->HasProcesses());
  cluster_.down = false;
  orch->Poll(Seconds{3});  // retries the cancel; the job is CANCELLED by the next listing
  EXPECT_EQ(cluster_.cancelled, std::vector<std::string>{"100"});
  orch->Poll(Seconds{4});
  EXPECT_FALSE(orch->HasProcesses());
  EXPECT_TRUE(orch->Records().empty());
}

TEST_F(SlurmOrchestratorTest, DrainingReplicaWaitsForReportsThenStops) {
  auto orch = Make(Config());
  ASSERT_TRUE(orch->Start(Seconds{0}));
  Run("100", "n1");
  ready_ = true;
  orch->Poll(Seconds{1});
  ASSERT_TRUE(orch->Drain("chat-0", Seconds{2}));
  EXPECT_EQ(orch->ListReplicas()[0].outstanding_requests, 1);  // no report yet
  ASSERT_TRUE(orch->ReportOutstanding("chat-0", 0));
  EXPECT_EQ(orch->ListReplicas()[0].outstanding_requests, 0);
  ASSERT_TRUE(orch->Resume("chat-0", Seconds{3}));
  EXPECT_EQ(orch->ListReplicas()[0].phase, ReplicaPhase::kReady);
}

TEST_F(SlurmOrchestratorTest, StrayJobsOfTheServiceAreCancelledOnce) {
  auto orch = Make(Config());
  cluster_.jobs["7"] = SlurmJob{"7", "gpuscale.chat.chat-41", "", "RUNNING", "None", "n1", "n1"};
  cluster_.jobs["8"] = SlurmJob{"8", "gpuscale.other.other-0", "", "RUNNING", "None", "n1", "n1"};
  orch->Poll(Seconds{1});
  orch->Poll(Seconds{2});
  EXPECT_EQ(cluster_.cancelled, std::vector<std::string>{"7"});
  EXPECT_EQ(Kinds(orch->TakeEvents()), std::vector<std::string>{"replica_cleaned_up"});
}

TEST_F(SlurmOrchestratorTest, AdoptsLiveJobsAndDropsTheRest) {
  auto first = Make(Config());
  ASSERT_TRUE(first->Start(Seconds{0}));
  ASSERT_TRUE(first->Start(Seconds{0}));
  ASSERT_TRUE(first->Start(Seconds{0}));
  Run("100", "n1");
  ready_ = true;
  first->Poll(Seconds{1});
  std::vector<ReplicaRecord> records = first->Records();
  cluster_.jobs["102"].state = "CANCELLED";  // ended while the daemon was away
  records.push_back(ReplicaRecord{});
  records.back().id = "chat-9";  // never got a job

  auto second = Make(Config());
  AdoptionReport report = second->Adopt(records, Seconds{5});
  EXPECT_EQ(report.adopted, (std::vector<std::string>{"chat-0", "chat-1"}));
  EXPECT_EQ(report.cleaned_up, (std::vector<std::string>{"chat-2", "chat-9"}));
  const std::vector<scale::ReplicaStatus> replicas = second->ListReplicas();
  ASSERT_EQ(replicas.size(), 2u);
  EXPECT_EQ(replicas[0].phase, ReplicaPhase::kReady);
  EXPECT_EQ(replicas[1].phase, ReplicaPhase::kPending);
  second->Poll(Seconds{6});
  EXPECT_EQ(cluster_.submitted.size(), 3u);  // no duplicate
  EXPECT_TRUE(cluster_.cancelled.empty());   // adopted jobs are not strays
  ASSERT_TRUE(second->Start(Seconds{7}));
  EXPECT_EQ(second->ListReplicas().back().id, "chat-10");
}

TEST_F(SlurmOrchestratorTest, AdoptionDuringAnOutageKeepsRecordsUnverified) {
  auto first = Make(Config());
  ASSERT_TRUE(first->Start(Seconds{0}));
  first->Poll(Seconds{1});  // applies the sbatch's answer: the job id
  const std::vector<ReplicaRecord> records = first->Records();
  cluster_.down = true;
  auto second = Make(Config());
  AdoptionReport report = second->Adopt(records, Seconds{5});
  EXPECT_EQ(report.adopted, std::vector<std::string>{"chat-0"});
  EXPECT_EQ(report.errors.size(), 1u);
  cluster_.down = false;
  second->Poll(Seconds{6});
  EXPECT_EQ(second->ListReplicas().size(), 1u);
  EXPECT_EQ(cluster_.submitted.size(), 1u);
}

TEST_F(SlurmOrchestratorTest, CapacityCountsFreeGpusOnUsableNodes) {
  auto orch = Make(Config());
  orch->Poll(Seconds{0});
  // n1: 2 free -> 1 replica; n2: 4 free -> 2; n3 drained -> 0.
  EXPECT_EQ(orch->Capacity(Seconds{0}).max_worker_groups, 3);
  SlurmOrchestratorConfig capped = Config();
  capped.max_replicas = 2;
  auto small = Make(capped);
  small->Poll(Seconds{0});
  EXPECT_EQ(small->Capacity(Seconds{0}).max_worker_groups, 2);
}

TEST_F(SlurmOrchestratorTest, ValidatesTheConfig) {
  SlurmOrchestratorConfig c = Config();
  c.port_range_end = 10;
  Status valid = ValidateSlurmOrchestratorConfig(c);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().field, "port_range_start");
  c = Config();
  c.command = {};
  EXPECT_FALSE(ValidateSlurmOrchestratorConfig(c));
}

// The transport calls run on the service's own thread (SerialCalls): a controller that hangs
// holds neither Poll nor Start, and the answers are applied in the order the calls ran.
// Every step waits for the posted calls before it touches the cluster, so the fake cluster is
// never read and written at once.

// Holds job listings until Release(), as a hung slurmctld would.
class Gate {
 public:
  void Hold() {
    MutexLock lock(mu_);
    held_ = true;
  }
  void Release() {
    MutexLock lock(mu_);
    held_ = false;
    cv_.NotifyAll();
  }
  void Pass() {
    MutexLock lock(mu_);
    cv_.Wait(mu_, [this]() GS_REQUIRES(mu_) { return !held_; });
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool held_ GS_GUARDED_BY(mu_) = false;
};

class GatedTransport final : public SlurmTransport {
 public:
  GatedTransport(FakeCluster& cluster, Gate& gate) : fake_(cluster), gate_(gate) {}
  std::string_view Name() const override { return "gated"; }
  Result<std::string> Submit(const SlurmJobRequest& request) override {
    return fake_.Submit(request);
  }
  Result<std::vector<SlurmJob>> ListJobs() override {
    gate_.Pass();
    return fake_.ListJobs();
  }
  Result<std::vector<SlurmNode>> ListNodes() override { return fake_.ListNodes(); }
  Status Cancel(const std::string& job_id) override { return fake_.Cancel(job_id); }

 private:
  FakeTransport fake_;
  Gate& gate_;
};

class SlurmOrchestratorCallsTest : public SlurmOrchestratorTest {
 protected:
  // The fixture owns the orchestrators: their calls read cluster_, so TearDown lets the
  // calls finish before the cluster goes (a destroyed orchestrator no longer waits).
  SlurmOrchestrator* MakeThreaded() {
    auto orch = SlurmOrchestrator::Create(
        Config(), std::make_unique<GatedTransport>(cluster_, gate_),
        [](const std::string&, int, const std::string&) { return true; },
        SerialCalls::Mode::kThread);
    EXPECT_TRUE(orch) << orch.error().ToString();
    if (!orch) return nullptr;
    orchestrators_.push_back(std::move(*orch));
    return orchestrators_.back().get();
  }
  void TearDown() override {
    gate_.Release();
    for (auto& orch : orchestrators_) orch->WaitForCalls();
    orchestrators_.clear();
    SlurmOrchestratorTest::TearDown();
  }
  // Lets the posted calls finish, then polls (which applies their answers).
  static void Step(SlurmOrchestrator& orch, double now) {
    orch.WaitForCalls();
    orch.Poll(Seconds{now});
  }
  Gate gate_;
  std::vector<std::unique_ptr<SlurmOrchestrator>> orchestrators_;
};

TEST_F(SlurmOrchestratorCallsTest, AHungListingHoldsNeitherPollNorStartAndNeverDuplicatesAJob) {
  auto orch = MakeThreaded();
  gate_.Hold();
  orch->Poll(Seconds{1});  // posts a listing that hangs: Poll returns all the same
  Result<scale::ReplicaStatus> started = orch->Start(Seconds{1});
  ASSERT_TRUE(started) << started.error().ToString();
  EXPECT_EQ(started->phase, ReplicaPhase::kPending);
  orch->Poll(Seconds{2});
  ASSERT_EQ(orch->Replicas(Seconds{2}).size(), 1u);
  EXPECT_EQ(orch->Replicas(Seconds{2})[0].last_error, "submitting to Slurm");
  EXPECT_TRUE(orch->HasProcesses());  // shutdown waits for the sbatch's answer
  gate_.Release();
  // The listing ran before the sbatch (posted first), so it lacks the new job: applied while
  // the replica is still submitting, it must not count the job as vanished.
  Step(*orch, 3);
  EXPECT_EQ(cluster_.submitted.size(), 1u);
  EXPECT_EQ(orch->Records()[0].engine_id, "100");
  Step(*orch, 4);  // a listing that ran after the sbatch: the job is there
  Step(*orch, 5);
  EXPECT_EQ(cluster_.submitted.size(), 1u);
  EXPECT_TRUE(cluster_.cancelled.empty());
  const std::vector<std::string> kinds = Kinds(orch->TakeEvents());
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "replica_crashed"), 0);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "replica_started"), 1);
  EXPECT_EQ(orch->Replicas(Seconds{5})[0].state, ReplicaState::kPending);
}

TEST_F(SlurmOrchestratorCallsTest, AReplicaStoppedWhileSubmittingHasItsJobCancelled) {
  auto orch = MakeThreaded();
  gate_.Hold();
  orch->Poll(Seconds{1});
  ASSERT_TRUE(orch->Start(Seconds{1}));
  ASSERT_TRUE(orch->Stop("chat-0", Seconds{1}));
  EXPECT_TRUE(orch->HasProcesses());
  gate_.Release();
  Step(*orch, 2);  // the sbatch's answer: job 100, cancelled at once
  Step(*orch, 3);
  EXPECT_EQ(cluster_.cancelled, std::vector<std::string>{"100"});
  Step(*orch, 4);  // a listing after the cancel: the job ended
  EXPECT_FALSE(orch->HasProcesses());
  EXPECT_TRUE(orch->Replicas(Seconds{4}).empty());
  const std::vector<std::string> kinds = Kinds(orch->TakeEvents());
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "replica_stopped"), 1);
}

TEST_F(SlurmOrchestratorCallsTest, AFailedSubmissionWaitsOutTheBackoffAndIsRetried) {
  auto failing = MakeThreaded();
  gate_.Hold();
  failing->Poll(Seconds{1});  // the first listing hangs, so the sbatch queues behind it
  ASSERT_TRUE(failing->Start(Seconds{2}));
  cluster_.down = true;  // read by both calls once the gate opens
  gate_.Release();
  Step(*failing, 3);  // the listing failed too: outage, the replica is kept as it is
  EXPECT_EQ(failing->Replicas(Seconds{3}).size(), 1u);
  cluster_.down = false;
  Step(*failing, 4);
  Step(*failing, 20);  // past the backoff: submitted again
  Step(*failing, 21);
  EXPECT_EQ(cluster_.submitted.size(), 1u);
  EXPECT_FALSE(failing->Records()[0].engine_id.empty());
  const std::vector<std::string> kinds = Kinds(failing->TakeEvents());
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "replica_start_failed"), 1);
}

}  // namespace
}  // namespace gpuscale::orch
