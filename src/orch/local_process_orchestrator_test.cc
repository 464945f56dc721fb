#include "orch/local_process_orchestrator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <signal.h>

#include "testing/orch_test_util.h"

namespace gpuscale::orch {
namespace {

using scale::ReplicaPhase;
using LocalProcessTest = OrchTest;

TEST_F(LocalProcessTest, StartsHttpServerThatBecomesReadyThenStopsWithSigterm) {
  LocalProcessConfig config =
      Config({"python3", "-m", "http.server", "--bind", "127.0.0.1", "{port}"});
  config.readiness_path = "/";  // real HTTP probe
  auto& orch = Make(config);
  auto status = orch.Start(now_);
  ASSERT_TRUE(status) << status.error().ToString();
  EXPECT_EQ(status->id, "svc-0");
  EXPECT_EQ(status->phase, ReplicaPhase::kStarting);
  ASSERT_EQ(ledger_.LeasesOf("replica/svc-0").size(), 1u);

  ASSERT_TRUE(PumpUntil(orch, [&] { return orch.ListReplicas()[0].phase == ReplicaPhase::kReady; }))
      << InfoOf(orch, "svc-0", now_).last_error;
  const ReplicaInfo info = InfoOf(orch, "svc-0", now_);
  EXPECT_GT(info.port, 0);
  EXPECT_GT(info.pid, 0);
  EXPECT_EQ(info.gpus.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(info.log_path));
  EXPECT_TRUE(HasEvent("replica_ready", "svc-0"));

  ASSERT_TRUE(orch.Stop("svc-0", now_));
  EXPECT_TRUE(orch.ListReplicas().empty());
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).state, ReplicaState::kStopping);
  // GPUs stay leased until the process has exited.
  EXPECT_EQ(ledger_.LeasesOf("replica/svc-0").size(), 1u);
  ASSERT_TRUE(PumpUntil(orch, [&] { return !orch.HasProcesses(); }));
  EXPECT_EQ(ledger_.size(), 0u);
  ASSERT_NE(LastEvent("replica_stopped"), nullptr);
  EXPECT_NE(LastEvent("replica_stopped")->message.find("SIGTERM"), std::string::npos)
      << LastEvent("replica_stopped")->message;
  EXPECT_FALSE(HasEvent("replica_killed"));
  EXPECT_FALSE(ProcessAlive(info.pid));
}

TEST_F(LocalProcessTest, ExecsArgvWithoutAShellAndSetsGpusAndEnvironment) {
  gpus_ = FakeGpus(2);
  LocalProcessConfig config =
      Config({"printf", "[%s]\\n", "a;b c", "$HOME", "{replica}", "{gpus}"});
  config.command[1] = "[%s]\n";
  config.gpus_per_replica = 2;
  auto& printer = Make(config);
  ASSERT_TRUE(printer.Start(now_));
  ASSERT_TRUE(PumpUntil(printer, [&] { return HasEvent("replica_crashed"); }));
  const std::string log = ReadFile(InfoOf(printer, "svc-0", now_).log_path);
  // A shell would have split "a;b c", run "b c" and expanded $HOME.
  EXPECT_NE(log.find("[a;b c]\n[$HOME]\n[svc-0]\n[0,1]\n"), std::string::npos) << log;
  ASSERT_TRUE(printer.Stop("svc-0", now_));

  LocalProcessConfig env_config = Config({"env"});
  env_config.service = "env";
  env_config.gpus_per_replica = 2;
  env_config.env = {{"GPUSCALE_TEST_VAR", "x y;z"}, {"CUDA_VISIBLE_DEVICES", "ignored"}};
  auto& env = Make(env_config);
  ASSERT_TRUE(env.Start(now_));
  ASSERT_TRUE(PumpUntil(env, [&] { return HasEvent("replica_crashed", "env-0"); }));
  const std::string env_log = ReadFile(InfoOf(env, "env-0", now_).log_path);
  EXPECT_NE(env_log.find("\nGPUSCALE_TEST_VAR=x y;z\n"), std::string::npos) << env_log;
  EXPECT_NE(env_log.find("\nCUDA_VISIBLE_DEVICES=0,1\n"), std::string::npos) << env_log;
  EXPECT_EQ(env_log.find("CUDA_VISIBLE_DEVICES=ignored"), std::string::npos);
}

TEST_F(LocalProcessTest, CrashedReplicaRestartsWithExponentialBackoffThatResetsWhenStable) {
  LocalProcessConfig config = Config({"sleep", "60"});
  config.restart_backoff_initial = Seconds{1};
  config.restart_backoff_max = Seconds{3};
  config.stable_after = Seconds{100};
  auto& orch = Make(config);
  ASSERT_TRUE(orch.Start(now_));
  ASSERT_TRUE(PumpUntil(orch, [&] { return orch.ListReplicas()[0].phase == ReplicaPhase::kReady; }));

  // Each crash waits initial * 2^(n-1), capped at max: 1, 2, 3 s.
  for (double delay : {1.0, 2.0, 3.0}) {
    const int pid = InfoOf(orch, "svc-0", now_).pid;
    ASSERT_GT(pid, 0);
    kill(pid, SIGKILL);
    events_.clear();
    ASSERT_TRUE(PumpUntil(orch, [&] { return HasEvent("replica_crashed"); })) << delay;
    EXPECT_NE(LastEvent("replica_crashed")->message.find("SIGKILL"), std::string::npos);
    EXPECT_EQ(InfoOf(orch, "svc-0", now_).state, ReplicaState::kRestarting);
    EXPECT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kStarting);
    const Seconds crashed_at = now_;
    now_ = crashed_at + Seconds{delay - 0.1};
    orch.Poll(now_);
    EXPECT_EQ(InfoOf(orch, "svc-0", now_).pid, 0) << "restarted before the backoff ended";
    now_ = crashed_at + Seconds{delay};
    orch.Poll(now_);
    Track(orch);
    EXPECT_GT(InfoOf(orch, "svc-0", now_).pid, 0) << "not restarted after " << delay << " s";
  }
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).restarts, 3);
  EXPECT_EQ(ledger_.LeasesOf("replica/svc-0").size(), 1u);  // kept GPUs throughout

  // Running for stable_after resets the doubling: the next crash waits 1 s again.
  now_ += Seconds{100};
  orch.Poll(now_);
  kill(InfoOf(orch, "svc-0", now_).pid, SIGKILL);
  ASSERT_TRUE(PumpUntil(orch, [&] { return InfoOf(orch, "svc-0", now_).pid == 0; }));
  now_ += Seconds{1};
  orch.Poll(now_);
  Track(orch);
  EXPECT_GT(InfoOf(orch, "svc-0", now_).pid, 0);
}

TEST_F(LocalProcessTest, StopSendsSigkillAfterGraceToAChildIgnoringSigterm) {
  auto& orch = Make(Config({"sh", "-c", "trap '' TERM; echo armed; exec sleep 60"}));
  ASSERT_TRUE(orch.Start(now_));
  const std::string log_path = InfoOf(orch, "svc-0", now_).log_path;
  // "\narmed\n": the log's header line quotes the command, which also contains "armed".
  ASSERT_TRUE(PumpUntil(orch, [&] { return ReadFile(log_path).find("\narmed\n") != std::string::npos; }));
  const int pid = InfoOf(orch, "svc-0", now_).pid;

  ASSERT_TRUE(orch.Stop("svc-0", now_));
  now_ += Seconds{4.9};  // inside the 5 s grace
  // Give SIGTERM real time to (not) work; it is ignored, so the process stays.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  orch.Poll(now_);
  EXPECT_TRUE(ProcessAlive(pid));
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).state, ReplicaState::kStopping);
  EXPECT_EQ(ledger_.size(), 1u);

  now_ += Seconds{0.1};
  ASSERT_TRUE(PumpUntil(orch, [&] { return !orch.HasProcesses(); }));
  EXPECT_TRUE(HasEvent("replica_killed", "svc-0"));
  ASSERT_NE(LastEvent("replica_stopped"), nullptr);
  EXPECT_NE(LastEvent("replica_stopped")->message.find("SIGKILL"), std::string::npos);
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_EQ(ledger_.size(), 0u);
  EXPECT_TRUE(orch.Replicas(now_).empty());
}

// An engine's worker processes (same process group) can outlive the replica's leader and
// still hold its GPUs: the lease waits for the whole group, which gets the stop's grace and
// then SIGKILL.
TEST_F(LocalProcessTest, GpusStayLeasedUntilTheReplicasWholeProcessGroupIsGone) {
  auto& orch =
      // The worker says "armed" once its trap is set (said by the leader, a SIGTERM could
      // reach the worker before its trap on a loaded machine, and nothing would linger).
      Make(Config({"sh", "-c", "(trap '' TERM; echo armed; exec sleep 60) & exec sleep 60"}));
  ASSERT_TRUE(orch.Start(now_));
  const std::string log_path = InfoOf(orch, "svc-0", now_).log_path;
  ASSERT_TRUE(
      PumpUntil(orch, [&] { return ReadFile(log_path).find("\narmed\n") != std::string::npos; }));
  const int pid = InfoOf(orch, "svc-0", now_).pid;

  ASSERT_TRUE(orch.Stop("svc-0", now_));  // SIGTERM: the leader ends, the worker ignores it
  ASSERT_TRUE(PumpUntil(orch, [&] { return HasEvent("replica_group_lingers", "svc-0"); }));
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_TRUE(GroupHasLiveMembers(pid));
  EXPECT_EQ(ledger_.size(), 1u) << "the GPUs were released while a worker of the replica ran";
  EXPECT_EQ(LastEvent("replica_stopped"), nullptr);

  now_ += Seconds{5};  // the stop's grace has passed
  ASSERT_TRUE(PumpUntil(orch, [&] { return !orch.HasProcesses(); }));
  EXPECT_TRUE(HasEvent("replica_killed", "svc-0"));
  EXPECT_FALSE(GroupHasLiveMembers(pid));
  EXPECT_NE(LastEvent("replica_stopped"), nullptr);
  EXPECT_EQ(ledger_.size(), 0u);
}

// A leader that crashes leaves its workers too: they are stopped before the replica restarts
// on the same GPUs.
TEST_F(LocalProcessTest, ACrashedLeadersWorkersAreStoppedBeforeTheRestart) {
  auto& orch = Make(Config({"sh", "-c", "sleep 60 & echo armed; exit 3"}));
  ASSERT_TRUE(orch.Start(now_));
  const std::string log_path = InfoOf(orch, "svc-0", now_).log_path;
  ASSERT_TRUE(PumpUntil(orch, [&] { return HasEvent("replica_crashed", "svc-0"); }));
  ASSERT_NE(LastEvent("replica_group_lingers"), nullptr);
  EXPECT_NE(LastEvent("replica_crashed")->message.find("exit code 3"), std::string::npos);
  EXPECT_EQ(ledger_.size(), 1u);  // kept for the restart
}

TEST_F(LocalProcessTest, NoFreeGpusLeavesReplicaPendingWithTheAllocatorsReason) {
  gpus_ = FakeGpus(1);
  alloc::SelectionRequest one;
  ASSERT_TRUE(ledger_.Allocate(gpus_, one, "job-7", now_));
  auto& orch = Make(Config({"sleep", "60"}));
  auto status = orch.Start(now_);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->phase, ReplicaPhase::kPending);
  ReplicaInfo info = InfoOf(orch, "svc-0", now_);
  EXPECT_EQ(info.pid, 0);
  EXPECT_NE(info.last_error.find("leased to job-7"), std::string::npos) << info.last_error;
  EXPECT_TRUE(orch.TakeEvents().front().kind == events::EventKind::kReplicaPending);

  Status place = orch.Place("svc-0", now_);
  ASSERT_FALSE(place);
  EXPECT_EQ(place.error().code, ErrorCode::kResourceExhausted);

  ledger_.ReleaseOwner("job-7");
  ASSERT_TRUE(orch.Place("svc-0", now_));
  Track(orch);
  EXPECT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kStarting);
  EXPECT_GT(InfoOf(orch, "svc-0", now_).pid, 0);
  EXPECT_EQ(orch.Place("svc-0", now_).error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(orch.Place("nope", now_).error().code, ErrorCode::kNotFound);
}

// A command that cannot be started (not installed) holds no GPU: the lease goes back at once,
// so another owner may take it; at the end of the backoff the replica leases again (pending
// while none is free), and its start_error names the cause throughout.
TEST_F(LocalProcessTest, ACommandThatCannotStartHoldsNoGpuWhileItWaitsToRetry) {
  gpus_ = FakeGpus(1);
  auto& orch = Make(Config({"gpuscale-test-no-such-command", "{port}"}));
  auto status = orch.Start(now_);
  ASSERT_TRUE(status);
  ReplicaInfo info = InfoOf(orch, "svc-0", now_);
  EXPECT_EQ(info.state, ReplicaState::kRestarting);
  EXPECT_NE(info.start_error.find("cannot start 'gpuscale-test-no-such-command'"),
            std::string::npos)
      << info.start_error;
  EXPECT_TRUE(info.gpus.empty());
  EXPECT_EQ(ledger_.size(), 0u) << "a replica that never ran holds a GPU";
  alloc::SelectionRequest one;
  ASSERT_TRUE(ledger_.Allocate(gpus_, one, "job-7", now_));

  now_ += Seconds{1};  // restart_backoff_initial: the GPU is job-7's now
  orch.Poll(now_);
  EXPECT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kPending);
  EXPECT_NE(InfoOf(orch, "svc-0", now_).last_error.find("leased to job-7"), std::string::npos);
  EXPECT_FALSE(InfoOf(orch, "svc-0", now_).start_error.empty());

  ledger_.ReleaseOwner("job-7");
  ASSERT_TRUE(orch.Place("svc-0", now_));  // leased, launched, failed again, released
  EXPECT_EQ(ledger_.size(), 0u);
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).state, ReplicaState::kRestarting);
  std::vector<OrchestratorEvent> events = orch.TakeEvents();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, events::EventKind::kReplicaRestartScheduled);
  EXPECT_NE(events.back().message.find("failure 2 in a row"), std::string::npos)
      << events.back().message;
}

TEST_F(LocalProcessTest, UnreadableGpusLeavePendingAndStopOfPendingNeedsNoProcess) {
  auto orch = LocalProcessOrchestrator::Create(
      Config({"sleep", "60"}), ledger_,
      [](Seconds) -> Result<gpu::GpuSnapshot> { return Unavailable("nvidia-smi not found"); });
  ASSERT_TRUE(orch);
  auto status = (*orch)->Start(now_);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->phase, ReplicaPhase::kPending);
  EXPECT_NE(InfoOf(**orch, "svc-0", now_).last_error.find("nvidia-smi not found"),
            std::string::npos);
  EXPECT_EQ((*orch)->Place("svc-0", now_).error().code, ErrorCode::kUnavailable);
  ASSERT_TRUE((*orch)->Stop("svc-0", now_));
  EXPECT_TRUE((*orch)->Replicas(now_).empty());
  EXPECT_EQ((*orch)->Stop("svc-0", now_).error().code, ErrorCode::kNotFound);
}

TEST_F(LocalProcessTest, StartupTimeoutAndFailedHealthChecksRestartTheReplica) {
  bool healthy = false;
  LocalProcessConfig config = Config({"sleep", "60"});
  config.readiness_path = "/health";
  config.startup_timeout = Seconds{30};
  config.health_interval = Seconds{10};
  config.health_failure_threshold = 2;
  auto& orch = Make(config, [&](int, const std::string&) {
    return healthy ? ProbeResult::kOk : ProbeResult::kFailed;
  });
  ASSERT_TRUE(orch.Start(now_));
  orch.Poll(now_);
  EXPECT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kStarting);
  now_ += Seconds{30};
  ASSERT_TRUE(PumpUntil(
      orch, [&] { return InfoOf(orch, "svc-0", now_).state == ReplicaState::kRestarting; }));
  EXPECT_TRUE(HasEvent("replica_startup_timeout"));
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).restarts, 1);

  healthy = true;
  now_ += Seconds{1};  // backoff over: relaunch, then ready on the first probe
  orch.Poll(now_);
  orch.Poll(now_);
  Track(orch);
  ASSERT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kReady);

  healthy = false;
  now_ += Seconds{10};
  orch.Poll(now_);  // first failure: still ready
  EXPECT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kReady);
  now_ += Seconds{10};
  ASSERT_TRUE(PumpUntil(
      orch, [&] { return InfoOf(orch, "svc-0", now_).state == ReplicaState::kRestarting; }));
  for (const auto& e : orch.TakeEvents()) events_.push_back(e);
  EXPECT_TRUE(HasEvent("replica_unhealthy"));
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).restarts, 2);
}

// Probes of one poll run at the same time: replicas that do not answer cost the tick one
// probe timeout, not one each (issue 27: a trickling replica stalled every service).
TEST_F(LocalProcessTest, ProbesOfOnePollRunConcurrently) {
  LocalProcessConfig config = Config({"sleep", "60"});
  config.readiness_path = "/health";
  std::atomic<int> running{0}, most{0}, calls{0};
  auto& orch = Make(config, [&](int, const std::string&) {
    const int now_running = ++running;
    for (int seen = most.load();
         now_running > seen && !most.compare_exchange_weak(seen, now_running);) {
    }
    ++calls;
    // A slow answer, in real time: the probes run on threads of their own, and their overlap
    // is what the test measures.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    --running;
    return ProbeResult::kNoAnswer;
  });
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(orch.Start(now_));
  orch.Poll(now_);  // launches those that got a GPU
  Track(orch);
  int launched = 0;
  for (const auto& r : orch.ListReplicas()) launched += r.phase == ReplicaPhase::kStarting;
  ASSERT_GE(launched, 2);
  now_ += Seconds{1};
  calls = 0;
  most = 0;
  orch.Poll(now_);
  EXPECT_EQ(calls.load(), launched);
  EXPECT_EQ(most.load(), launched) << "the probes ran one after another";

  // Prepared ahead (the daemon prepares every service's probes at once), the next Poll uses
  // those results instead of probing again.
  now_ += Seconds{1};
  calls = 0;
  orch.PrepareProbes(now_);
  EXPECT_EQ(calls.load(), launched);
  orch.Poll(now_);
  EXPECT_EQ(calls.load(), launched) << "Poll probed again";
  now_ += Seconds{1};
  orch.Poll(now_);  // nothing prepared for this moment: Poll probes by itself
  EXPECT_EQ(calls.load(), 2 * launched);
}

// Readiness is not liveness: a replica whose health probe goes unanswered (a busy server)
// leaves the gateway's rotation at once but is restarted only after liveness_timeout of
// silence; one answer brings it back.
TEST_F(LocalProcessTest, UnansweredHealthProbesTakeAReplicaOutOfRotationBeforeRestartingIt) {
  ProbeResult health = ProbeResult::kOk;
  LocalProcessConfig config = Config({"sleep", "60"});
  config.readiness_path = "/health";
  config.health_interval = Seconds{10};
  config.health_failure_threshold = 2;
  config.liveness_timeout = Seconds{60};
  auto& orch = Make(config, [&](int, const std::string&) { return health; });
  ASSERT_TRUE(orch.Start(now_));
  orch.Poll(now_);
  Track(orch);
  ASSERT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kReady);
  EXPECT_TRUE(InfoOf(orch, "svc-0", now_).serving);

  health = ProbeResult::kNoAnswer;
  for (int i = 0; i < 5; ++i) {  // 50 s of silence: over the failure threshold, under 60 s
    now_ += Seconds{10};
    orch.Poll(now_);
  }
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).state, ReplicaState::kReady);
  EXPECT_FALSE(InfoOf(orch, "svc-0", now_).serving);
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).restarts, 0);

  health = ProbeResult::kOk;
  now_ += Seconds{10};
  orch.Poll(now_);
  EXPECT_TRUE(InfoOf(orch, "svc-0", now_).serving);

  health = ProbeResult::kNoAnswer;  // silent again: the clock starts over, then it runs out
  for (int i = 0; i < 6; ++i) {
    now_ += Seconds{10};
    orch.Poll(now_);
    EXPECT_EQ(InfoOf(orch, "svc-0", now_).restarts, 0) << "restarted after " << (i + 1) * 10;
  }
  now_ += Seconds{10};
  ASSERT_TRUE(PumpUntil(
      orch, [&] { return InfoOf(orch, "svc-0", now_).state == ReplicaState::kRestarting; }));
  for (const auto& e : orch.TakeEvents()) events_.push_back(e);
  EXPECT_TRUE(HasEvent("replica_not_serving"));
  EXPECT_TRUE(HasEvent("replica_serving"));
  EXPECT_TRUE(HasEvent("replica_unhealthy"));
  EXPECT_EQ(InfoOf(orch, "svc-0", now_).restarts, 1);
}

TEST_F(LocalProcessTest, DrainWaitsForReportedOrGraceThenResumes) {
  LocalProcessConfig config = Config({"sleep", "60"});
  config.drain_grace = Seconds{20};
  auto& orch = Make(config);
  ASSERT_TRUE(orch.Start(now_));
  EXPECT_EQ(orch.Drain("svc-0", now_).error().code, ErrorCode::kFailedPrecondition);
  orch.Poll(now_);
  ASSERT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kReady);
  ASSERT_TRUE(orch.ReportOutstanding("svc-0", 5));
  EXPECT_EQ(orch.ListReplicas()[0].outstanding_requests, 5);

  ASSERT_TRUE(orch.Drain("svc-0", now_));
  // No report since the drain began: assumed busy until drain_grace, then idle.
  EXPECT_EQ(orch.ListReplicas()[0].outstanding_requests, 1);
  now_ += Seconds{20};
  orch.Poll(now_);
  EXPECT_EQ(orch.ListReplicas()[0].outstanding_requests, 0);
  ASSERT_TRUE(orch.ReportOutstanding("svc-0", 2));
  EXPECT_EQ(orch.ListReplicas()[0].outstanding_requests, 2);
  EXPECT_EQ(orch.ListReplicas()[0].phase_since, now_ - Seconds{20});

  ASSERT_TRUE(orch.Resume("svc-0", now_));
  EXPECT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kReady);
  EXPECT_EQ(orch.Resume("svc-0", now_).error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(orch.Drain("ghost", now_).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(orch.ReportOutstanding("ghost", 1).error().code, ErrorCode::kNotFound);
}

TEST_F(LocalProcessTest, ReportsCapacityAndRefusesTooManyReplicas) {
  gpus_ = FakeGpus(4);
  LocalProcessConfig config = Config({"sleep", "60"});
  config.capabilities = {"gpu"};
  auto& unlimited = Make(config);
  scale::AdapterCapacity capacity = unlimited.Capacity(now_);
  EXPECT_EQ(capacity.name, "local");
  EXPECT_EQ(capacity.max_worker_groups, 4);
  EXPECT_EQ(capacity.workers_per_group, 1);
  EXPECT_EQ(capacity.capabilities, scale::CapabilitySet{"gpu"});

  config.service = "capped";
  config.max_replicas = 1;
  config.gpus_per_replica = 0;
  auto& capped = Make(config);
  EXPECT_EQ(capped.Capacity(now_).max_worker_groups, 1);
  ASSERT_TRUE(capped.Start(now_));
  Track(capped);
  auto second = capped.Start(now_);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(second.error().message.find("too many replicas"), std::string::npos);
  EXPECT_EQ(ledger_.size(), 0u);  // CPU-only replicas lease nothing
}

TEST(LocalProcessConfigTest, RejectsInvalidFieldsByName) {
  struct Case {
    std::function<void(LocalProcessConfig&)> mutate;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](auto& c) { c.service = ""; }, "service"},
      {[](auto& c) { c.command = {}; }, "command"},
      {[](auto& c) { c.command = {"x", "{prot}"}; }, "command[1]"},
      {[](auto& c) { c.gpus_per_replica = -1; }, "gpus_per_replica"},
      {[](auto& c) { c.state_dir = ""; }, "state_dir"},
      {[](auto& c) { c.port_range_start = 9000; c.port_range_end = 8000; }, "port_range_start"},
      {[](auto& c) { c.stop_grace = Seconds{-1}; }, "stop_grace"},
      {[](auto& c) { c.restart_backoff_max = Seconds{0.5}; }, "restart_backoff_max"},
      {[](auto& c) { c.health_failure_threshold = 0; }, "health_failure_threshold"},
  };
  for (const Case& c : cases) {
    LocalProcessConfig config;
    config.service = "svc";
    config.command = {"sleep", "1"};
    config.state_dir = "/tmp/unused";
    ASSERT_TRUE(ValidateLocalProcessConfig(config));
    c.mutate(config);
    Status status = ValidateLocalProcessConfig(config);
    ASSERT_FALSE(status) << c.field;
    EXPECT_EQ(status.error().field, c.field);
  }
}

}  // namespace
}  // namespace gpuscale::orch
