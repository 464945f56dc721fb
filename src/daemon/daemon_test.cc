// Daemon with real replica processes (`sleep`, ready as soon as they run), simulated GPUs, a
// temporary state directory and a manual clock: ticks, API requests, adoption after a
// restart, pending replicas, shutdown. Every test stops what it started (TearDown).
#include "daemon/daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <vector>

#include "metrics/metric_lookup.h"
#include "metrics/prometheus_text_parser.h"
#include "testing/daemon_test_fixture.h"
#include "testing/wait_until.h"

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;

class DaemonTest : public DaemonFixture {
 protected:
  DaemonTest() : DaemonFixture("gpuscale_daemon_test") {}

  DaemonConfig Config(int min, int max, int gpus = 0) {
    DaemonConfig c;
    c.gpu.backend.kind = "simulated";
    if (gpus > 0) {
      std::ofstream(dir_ + "/inventory.yaml") << "gpus:\n"
                                              << [&] {
                                                   std::string s;
                                                   for (int i = 0; i < gpus; ++i)
                                                     s += "  - index: " + std::to_string(i) + "\n";
                                                   return s;
                                                 }();
      c.gpu.backend.inventory_path = dir_ + "/inventory.yaml";
    }
    c.state_dir = dir_ + "/state";
    ServiceConfig s;
    s.name = "svc";
    s.command = {"sleep", "300"};
    s.readiness_path = "";  // ready once the process runs
    s.min_replicas = min;
    s.max_replicas = max;
    c.services.push_back(s);
    return c;
  }

  std::vector<ReplicaView> Replicas(const std::string& service = "svc") {
    auto r = daemon_->ListReplicas(service);
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? *r : std::vector<ReplicaView>{};
  }

  // One sample of the daemon's /metrics, parsed: NotFound when the series is absent, so that
  // a test can tell "the counter is 0" from "the counter is gone" (a text search for
  // "name 0" being absent cannot).
  Result<double> Metric(std::string_view name, std::vector<metrics::LabelMatcher> labels = {}) {
    const std::string text = daemon_->MetricsText();
    Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(text);
    if (!parsed) return Unexpected<Error>(parsed.error());
    return metrics::FindValue(*parsed, name, labels);
  }

  // Rows of a history table ("decisions", "events"), read through a connection of its own.
  int HistoryRows(const std::string& table) {
    sqlite3* db = nullptr;
    EXPECT_EQ(
        sqlite3_open_v2((dir_ + "/state/gpuscale.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
        SQLITE_OK);
    sqlite3_stmt* count = nullptr;
    sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &count, nullptr);
    sqlite3_step(count);
    const int n = sqlite3_column_int(count, 0);
    sqlite3_finalize(count);
    sqlite3_close(db);
    return n;
  }
};

TEST_F(DaemonTest, FirstTickStartsMinReplicasAndMakesItReady) {
  Open(Config(2, 3));
  EXPECT_FALSE(daemon_->Ready());
  Tick();
  EXPECT_TRUE(daemon_->Ready());
  Tick();  // the second poll sees the processes running
  const auto replicas = Replicas();
  ASSERT_EQ(replicas.size(), 2u);
  for (const auto& r : replicas) EXPECT_GT(r.pid, 0);
  EXPECT_EQ(daemon_->Leases().size(), 2u);
  auto view = daemon_->GetService("svc");
  ASSERT_TRUE(view);
  EXPECT_EQ(view->desired_replicas, 2);
  EXPECT_EQ(view->policy_family, "rules");
  auto events = daemon_->Events({});
  ASSERT_TRUE(events);
  std::set<std::string> kinds;
  for (const auto& e : *events) kinds.insert(e.kind);
  EXPECT_TRUE(kinds.count("daemon_started"));
  EXPECT_TRUE(kinds.count("replica_started"));
  EXPECT_TRUE(kinds.count("decision"));
}

// State grows with events, not with time (issue 28): a steady service writes a decision row
// when its counts change and then one per heartbeat, however fast the loop ticks.
TEST_F(DaemonTest, SteadyServiceWritesDecisionsOnChangeAndHeartbeatOnly) {
  DaemonOptions options = QuietOptions();
  options.decision_heartbeat = Seconds{60};
  Open(Config(1, 1), options);
  auto rows = [&] { return HistoryRows("decisions"); };
  Tick(3);  // start (desired 0 -> 1), running, ready: each a change
  const int started = rows();
  EXPECT_GE(started, 2);
  Tick(50);  // 50 s of nothing new
  EXPECT_EQ(rows(), started);
  Tick(15);  // past the 60 s heartbeat
  EXPECT_EQ(rows(), started + 1);
}

TEST_F(DaemonTest, HistoryPastTheRetentionAgeIsDeletedWithinTheHourAndCounted) {
  DaemonConfig config = Config(1, 1);
  config.retention.max_age = Seconds{600};
  Open(config, QuietOptions());
  Tick(3);
  const int decisions = HistoryRows("decisions");
  ASSERT_GT(decisions, 0);
  const int events = HistoryRows("events");
  ASSERT_GT(events, 0);
  clock_.Advance(Seconds{3600});  // the rows are an hour old: past the age, and the check due
  Tick();
  EXPECT_LE(HistoryRows("decisions"), 1);  // at most this tick's
  // Every row written before the jump was past the age: each one is counted, under "age".
  Result<double> age = Metric("gpuscale_store_history_deleted_rows_total", {{"reason", "age"}});
  ASSERT_TRUE(age) << age.error().ToString();
  EXPECT_EQ(*age, decisions + events);
  Result<double> size = Metric("gpuscale_store_history_deleted_rows_total", {{"reason", "size"}});
  ASSERT_TRUE(size) << size.error().ToString();
  EXPECT_EQ(*size, 0);
}

TEST_F(DaemonTest, FullStoreMakesTheDaemonNotReadyWhileReplicasKeepRunning) {
  DaemonOptions options = QuietOptions();
  // The service's 100 KB argument fits under a 320 KB cap at the start (schema + the
  // service's row); the two replica rows that carry it too do not.
  options.store_max_bytes = 320 * 1024;
  DaemonConfig config = Config(2, 2);
  config.services[0].command = {"/bin/sh", "-c", "exec sleep 300", std::string(100000, 'x')};
  Open(config, options);
  Tick(2);
  // The loop goes on and the replicas run, but they could not be saved: /readyz says so.
  EXPECT_EQ(Replicas().size(), 2u);
  Status ready = daemon_->Ready();
  ASSERT_FALSE(ready);
  EXPECT_EQ(ready.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(ready.error().message, ::testing::HasSubstr("writing replicas of svc"));
  EXPECT_THAT(ready.error().message, ::testing::HasSubstr("disk is full"));
  // Small writes that still fit (events) do not hide the failing one.
  Tick(3);
  EXPECT_FALSE(daemon_->Ready());
  Result<double> errors = Metric("gpuscale_store_errors_total");
  ASSERT_TRUE(errors) << errors.error().ToString();
  // Each failed write counts, not each kind of failure: the replica rows were retried, and
  // failed, on every one of the 5 ticks.
  EXPECT_EQ(*errors, 5);
}

TEST_F(DaemonTest, ManualOverrideScalesAndIsValidated) {
  Open(Config(1, 3));
  Tick();
  auto bad = daemon_->SetDesiredReplicas("svc", 4);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "replicas");
  auto view = daemon_->SetDesiredReplicas("svc", 3);
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_EQ(view->manual_replicas, 3);
  Tick();
  EXPECT_EQ(Replicas().size(), 3u);
  EXPECT_THAT(daemon_->GetService("svc")->last_reason, HasSubstr("manual override"));
  EXPECT_FALSE(daemon_->SetDesiredReplicas("nope", 1));
}

TEST_F(DaemonTest, ReplicaWithoutGpusIsPendingWithTheAllocatorsReason) {
  Open(Config(2, 2, /*gpus=*/1));
  Tick(2);
  const auto replicas = Replicas();
  ASSERT_EQ(replicas.size(), 2u);
  int pending = 0;
  for (const auto& r : replicas) {
    if (r.phase != scale::ReplicaPhase::kPending) continue;
    ++pending;
    EXPECT_FALSE(r.last_error.empty());
  }
  EXPECT_EQ(pending, 1);
  EXPECT_EQ(daemon_->GetService("svc")->pending_replicas, 1);
}

// Issue 44: a service whose command is not installed holds no GPU (the README's PUT of 3
// replicas held 3 of 4 GPUs for replicas that never ran), and says why: on its view, to the
// gateway (which then answers at once) and in one log line, not one per tick.
TEST_F(DaemonTest, ReplicasThatCannotStartHoldNoGpuAndTheServiceSaysWhyOnce) {
  DaemonConfig config = Config(1, 4, /*gpus=*/4);
  config.services[0].command = {"gpuscale-test-no-such-command", "{port}"};
  DaemonOptions options = QuietOptions();
  auto lines = std::make_shared<std::vector<std::string>>();
  auto lines_mu = std::make_shared<std::mutex>();
  options.log = [lines, lines_mu](std::string_view line) {
    std::lock_guard lock(*lines_mu);
    lines->emplace_back(line);
  };
  options.gateway = std::make_shared<gateway::GatewayState>(gateway::GatewayConfig{});
  Open(config, options);
  ASSERT_TRUE(daemon_->SetDesiredReplicas("svc", 3));
  Tick(6);
  ASSERT_EQ(Replicas().size(), 3u);
  EXPECT_TRUE(daemon_->Leases().empty()) << daemon_->Leases().size() << " GPUs held";
  const Result<ServiceView> view = daemon_->GetService("svc");
  ASSERT_TRUE(view);
  EXPECT_THAT(view->failure, HasSubstr("cannot start 'gpuscale-test-no-such-command'"));
  EXPECT_EQ(options.gateway->UnavailableReason("svc"), view->failure);
  std::lock_guard lock(*lines_mu);
  int said = 0;
  for (const std::string& line : *lines) {
    said += line.find("service 'svc' cannot start replicas: cannot start") != std::string::npos;
  }
  EXPECT_EQ(said, 1) << ::testing::PrintToString(*lines);
}

TEST_F(DaemonTest, RestartAdoptsRunningReplicasWithoutDuplicatesOrLeakedLeases) {
  Open(Config(2, 2));
  Tick(2);
  std::set<int> pids;
  for (const auto& r : Replicas()) pids.insert(r.pid);
  ASSERT_EQ(pids.size(), 2u);
  daemon_->Shutdown(/*stop_replicas=*/false);
  daemon_.reset();

  Open(Config(2, 2));
  EXPECT_EQ(daemon_->Leases().size(), 2u);
  Tick(2);
  std::set<int> adopted;
  for (const auto& r : Replicas()) {
    adopted.insert(r.pid);
    EXPECT_TRUE(r.adopted);
  }
  EXPECT_EQ(adopted, pids);
  EXPECT_EQ(daemon_->Leases().size(), 2u);
  std::set<std::string> owners;
  for (const auto& l : daemon_->Leases()) owners.insert(l.owner);
  EXPECT_EQ(owners.size(), 2u);
}

TEST_F(DaemonTest, DeadReplicasAreCleanedUpAtRestart) {
  Open(Config(1, 1));
  Tick(2);
  const int pid = Replicas().at(0).pid;
  daemon_->Shutdown(false);
  daemon_.reset();
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  gpuscale::testing::WaitUntil([&] { return kill(pid, 0) != 0; },
                               std::chrono::seconds(1));  // our child: a zombie
  Open(Config(1, 1));
  Tick(2);
  const auto replicas = Replicas();
  ASSERT_EQ(replicas.size(), 1u);
  EXPECT_NE(replicas[0].pid, pid);
  EXPECT_EQ(daemon_->Leases().size(), 1u);
}

TEST_F(DaemonTest, ServicesCreatedThroughTheApiRunAndDeleteStopsThem) {
  Open(Config(1, 1));
  ServiceConfig s = Config(1, 1).services[0];
  s.name = "extra";
  auto created = daemon_->CreateService(s);
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_EQ(daemon_->CreateService(s).error().code, ErrorCode::kFailedPrecondition);
  s.name = "Bad_Name";
  EXPECT_EQ(daemon_->CreateService(s).error().field, "name");
  Tick(2);
  ASSERT_EQ(Replicas("extra").size(), 1u);
  EXPECT_EQ(daemon_->Leases().size(), 2u);
  ASSERT_TRUE(daemon_->DeleteService("extra"));
  EXPECT_FALSE(daemon_->GetService("extra"));
  gpuscale::testing::WaitUntil(  // the stopped replica's exit, reaped by a tick
      [&] {
        Tick();
        return daemon_->Leases().size() == 1u;
      },
      std::chrono::seconds(1), std::chrono::milliseconds(20));
  EXPECT_EQ(daemon_->Leases().size(), 1u);
  EXPECT_EQ(daemon_->ListServices().size(), 1u);
}

// GET /v1/services reads one shared list: the same list until the views change, a new one
// after every change (create, scale, delete, a tick), and a list handed out earlier keeps
// what it held.
TEST_F(DaemonTest, ServicesSnapshotFollowsEveryChangeOfTheViews) {
  Open(Config(1, 2));
  Tick();
  const auto first = daemon_->ServicesSnapshot();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ(daemon_->ServicesSnapshot(), first);
  ServiceConfig s = Config(1, 1).services[0];
  s.name = "extra";
  ASSERT_TRUE(daemon_->CreateService(s));
  const auto created = daemon_->ServicesSnapshot();
  ASSERT_EQ(created->size(), 2u);
  EXPECT_EQ((*created)[0].config.name, "extra");
  EXPECT_EQ(first->size(), 1u);
  ASSERT_TRUE(daemon_->SetDesiredReplicas("svc", 2));
  const auto scaled = daemon_->ServicesSnapshot();
  EXPECT_EQ((*scaled)[1].manual_replicas, 2);
  EXPECT_EQ((*created)[1].manual_replicas, std::nullopt);
  Tick();
  const auto ticked = daemon_->ServicesSnapshot();
  EXPECT_NE(ticked, scaled);
  EXPECT_EQ((*ticked)[1].desired_replicas, 2);
  ASSERT_TRUE(daemon_->DeleteService("extra"));
  const auto deleted = daemon_->ServicesSnapshot();
  ASSERT_EQ(deleted->size(), 1u);
  EXPECT_EQ((*deleted)[0].config.name, "svc");
  ASSERT_EQ(daemon_->ListServices().size(), 1u);
  EXPECT_EQ(daemon_->ListServices()[0].desired_replicas, (*deleted)[0].desired_replicas);
}

TEST_F(DaemonTest, ServicesThatCouldNeverBePlacedAreRefusedAs409) {
  Open(Config(1, 1, /*gpus=*/4));
  ServiceConfig s = Config(1, 1).services[0];
  s.name = "huge";
  s.gpus_per_replica = 1000000;
  auto huge = daemon_->CreateService(s);
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().code, ErrorCode::kResourceExhausted);  // HTTP 409
  EXPECT_EQ(huge.error().field, "gpus_per_replica");
  EXPECT_THAT(huge.error().message, ::testing::HasSubstr("inventory has 4"));
  s.gpus_per_replica = 2;
  s.min_replicas = 3;
  s.max_replicas = 3;
  EXPECT_EQ(daemon_->CreateService(s).error().field, "min_replicas");
  s.min_replicas = 1;
  s.max_replicas = 2147483647;
  EXPECT_EQ(daemon_->CreateService(s).error().field, "max_replicas");
  // An update is checked the same way.
  ServiceConfig svc = Config(1, 1).services[0];
  svc.gpus_per_replica = 5;
  EXPECT_EQ(daemon_->UpdateService(svc).error().code, ErrorCode::kResourceExhausted);
  // A max above what the machine holds is a ceiling, not an error.
  s.max_replicas = 100;
  EXPECT_TRUE(daemon_->CreateService(s)) << "max_replicas 100 x 2 GPUs on 4 GPUs";
  EXPECT_TRUE(daemon_->GetService("huge"));
  // A typed service fits only on GPUs of its type (the inventory: 4 x H100 80GB).
  ServiceConfig typed = Config(1, 1).services[0];
  typed.name = "typed";
  typed.gpu_type = "A100-80GB";
  auto none = daemon_->CreateService(typed);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(none.error().field, "gpu_type");
  EXPECT_THAT(none.error().message,
              ::testing::HasSubstr("no GPU of type A100-80GB; it has H100-80GB 4"));
  typed.gpu_type = "H100-80GB";
  typed.gpus_per_replica = 5;
  EXPECT_THAT(daemon_->CreateService(typed).error().message,
              ::testing::HasSubstr("needs 5 GPUs of type H100-80GB; this machine's inventory "
                                   "has 4"));
}

TEST_F(DaemonTest, RulesAreValidatedAndOnlyForServicesWithoutSpecPolicy) {
  Open(Config(1, 3));
  RuleView rule;
  rule.name = "queue";
  rule.metric = "vllm:num_requests_waiting";
  rule.comparator = "BIGGER";
  rule.step_size = 1;
  auto bad = daemon_->AddRule("svc", rule);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "comparator");
  rule.comparator = "GREATER_THAN";
  auto added = daemon_->AddRule("svc", rule);
  ASSERT_TRUE(added) << added.error().ToString();
  EXPECT_GT(added->id, 0);
  EXPECT_EQ(daemon_->ListRules("svc")->size(), 1u);
  Tick();
  ASSERT_TRUE(daemon_->DeleteRule("svc", added->id));
  EXPECT_EQ(daemon_->DeleteRule("svc", added->id).error().code, ErrorCode::kNotFound);
}

TEST_F(DaemonTest, UnreachableMetricsAreErrorsNotScaleIn) {
  Open(Config(1, 3));
  Tick(3);
  auto view = daemon_->GetService("svc");
  ASSERT_TRUE(view);
  ASSERT_FALSE(view->metric_errors.empty());  // `sleep` serves no /metrics
  EXPECT_EQ(view->replicas, 1);
  const std::string text = daemon_->MetricsText();
  EXPECT_THAT(text, HasSubstr("gpuscale_scrape_errors_total{service=\"svc\"}"));
  EXPECT_THAT(text, HasSubstr("gpuscale_gpu_utilization_ratio{gpu=\"0\""));
  EXPECT_THAT(text, HasSubstr("gpuscale_service_replicas{service=\"svc\",phase=\"ready\"} 1"));
}

TEST_F(DaemonTest, ShutdownStopsReplicas) {
  Open(Config(2, 2));
  Tick(2);
  std::vector<int> pids;
  for (const auto& r : Replicas()) pids.push_back(r.pid);
  ASSERT_EQ(pids.size(), 2u);
  daemon_->Shutdown(/*stop_replicas=*/true);
  for (int pid : pids) EXPECT_NE(kill(pid, 0), 0) << pid;  // reaped: gone
  daemon_.reset();
}

}  // namespace
}  // namespace gpuscale::daemon
