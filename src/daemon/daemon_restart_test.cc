// Daemon restart safety: a Slurm service deleted while the daemon dies (or before its delete
// was applied) has its jobs cancelled through Slurm by the next daemon; a manual replica
// override survives restarts until cleared; queued Slurm replicas show no host. Slurm is the
// fake CLI of fake_slurm_cli.h; local replicas are `sleep` processes; the clock is manual.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "daemon/daemon.h"
#include "testing/daemon_test_fixture.h"
#include "testing/fake_slurm_cli.h"
#include "store/store.h"

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class DaemonRestartTest : public DaemonFixture {
 protected:
  DaemonRestartTest() : DaemonFixture("gpuscale_daemon_restart") {}

  void SetUp() override {
    DaemonFixture::SetUp();
    if (HasFatalFailure()) return;
    slurm_ = std::make_unique<FakeSlurmCli>(dir_ + "/slurm");
  }
  void TearDown() override {
    if (slurm_) slurm_->SetDown(false);  // so that Shutdown can cancel what is left
    StopDaemon();
    slurm_.reset();
    DaemonFixture::TearDown();
  }

  // Simulated GPUs; `local` adds service "svc" of `sleep` replicas (ready once running).
  DaemonConfig Config(bool local, int min = 1, int max = 3) const {
    DaemonConfig c;
    c.gpu.backend.kind = "simulated";
    c.state_dir = dir_ + "/state";
    if (local) {
      ServiceConfig s;
      s.name = "svc";
      s.command = {"sleep", "300"};
      s.readiness_path = "";
      s.min_replicas = min;
      s.max_replicas = max;
      c.services.push_back(s);
    }
    return c;
  }

  ServiceConfig SlurmService(int replicas) const {
    ServiceConfig s;
    s.name = "gpu";
    s.engine = "slurm";
    s.command = {"srv", "--port", "{port}"};  // never runs: the fake's jobs stay queued
    s.min_replicas = replicas;
    s.max_replicas = replicas;
    s.slurm.bin_dir = slurm_->bin_dir();
    s.slurm.timeout = Seconds{5};
    return s;
  }

  void Open(DaemonConfig config) {
    DaemonOptions options = QuietOptions();
    options.stop_grace = Seconds{2};
    DaemonFixture::Open(std::move(config), std::move(options));
  }

  // The daemon dies: its replicas (processes, jobs) keep running.
  void Crash() {
    daemon_->Shutdown(/*stop_replicas=*/false);
    daemon_.reset();
  }

  // Service "gpu" with two queued Slurm jobs; returns their ids.
  std::set<std::string> StartSlurmService() {
    auto created = daemon_->CreateService(SlurmService(2));
    EXPECT_TRUE(created) << created.error().ToString();
    Tick();
    Tick();  // the sbatch answers are applied (and the job ids stored) by the next tick
    const std::set<std::string> jobs = slurm_->Jobs("PENDING");
    EXPECT_EQ(jobs.size(), 2u);
    return jobs;
  }

  // The state database as the next daemon would find it. REQUIRES: no daemon is open.
  std::unique_ptr<store::Store> OpenStore() {
    auto store = store::Store::Open(dir_ + "/state/gpuscale.db", clock_.Now());
    EXPECT_TRUE(store) << store.error().ToString();
    return store ? std::move(*store) : nullptr;
  }

  std::unique_ptr<FakeSlurmCli> slurm_;
};

TEST_F(DaemonRestartTest, SlurmJobsOfAServiceDeletedWhileSlurmWasDownAreCancelledAfterRestart) {
  Open(Config(/*local=*/false));
  const std::set<std::string> jobs = StartSlurmService();
  slurm_->SetDown(true);  // the delete's cancels fail; the daemon dies before retrying
  ASSERT_TRUE(daemon_->DeleteService("gpu"));
  Tick();
  Crash();
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto row = store->services().Get("gpu");
    ASSERT_TRUE(row) << "the row holds the engine settings until the jobs are gone";
    EXPECT_TRUE(row->deleting);
    EXPECT_EQ(store->replicas().ListForService("gpu")->size(), 2u);
  }
  EXPECT_TRUE(slurm_->Cancelled().empty());

  slurm_->SetDown(false);
  Open(Config(/*local=*/false));
  EXPECT_FALSE(daemon_->GetService("gpu"));  // not a service again
  Tick(2);
  EXPECT_EQ(slurm_->Cancelled(), jobs);
  EXPECT_TRUE(slurm_->Jobs("PENDING").empty());
  Crash();
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->services().Get("gpu").error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(store->replicas().ListForService("gpu")->empty());
}

TEST_F(DaemonRestartTest, SlurmServiceDeletedJustBeforeACrashIsStoppedByTheNextDaemon) {
  Open(Config(/*local=*/false));
  const std::set<std::string> jobs = StartSlurmService();
  ASSERT_TRUE(daemon_->DeleteService("gpu"));
  Crash();  // the queued delete never reached the control loop
  Open(Config(/*local=*/false));
  EXPECT_TRUE(daemon_->ListServices().empty());
  Tick(2);
  EXPECT_EQ(slurm_->Cancelled(), jobs);
  // The name is free again: a new service of that name starts its own jobs.
  ASSERT_TRUE(daemon_->CreateService(SlurmService(1)));
  Tick(2);
  EXPECT_EQ(slurm_->Jobs("PENDING").size(), 1u);
  EXPECT_TRUE(daemon_->GetService("gpu"));
}

TEST_F(DaemonRestartTest, DeletedServiceRowGoesOnceItsJobsAreCancelled) {
  Open(Config(/*local=*/false));
  const std::set<std::string> jobs = StartSlurmService();
  ASSERT_TRUE(daemon_->DeleteService("gpu"));
  Tick(2);
  EXPECT_EQ(slurm_->Cancelled(), jobs);
  Crash();
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->services().Get("gpu").error().code, ErrorCode::kNotFound);
}

// A database from a gpuscale that deleted the service row at once: the jobs' engine settings
// are gone, so the daemon says which jobs to cancel instead of dropping them silently.
TEST_F(DaemonRestartTest, OrphanJobsWithoutTheirServiceRowAreReportedForManualCancel) {
  Open(Config(/*local=*/false));
  const std::set<std::string> jobs = StartSlurmService();
  Crash();
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->services().Delete("gpu"));
  }
  Open(Config(/*local=*/false));
  Tick();
  const auto events = EventsOfKind(events::EventKind::kOrphanUnmanaged);
  ASSERT_EQ(events.size(), 1u);
  for (const std::string& job : jobs) EXPECT_THAT(events[0].message, HasSubstr(job));
  EXPECT_THAT(events[0].message, HasSubstr("scancel"));
  EXPECT_TRUE(slurm_->Cancelled().empty());
  Crash();
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->replicas().ListForService("gpu")->empty());  // reported once
}

// The stored engine settings of a deleted service cannot be set up after a restart (here its
// REST token file is gone): its jobs cannot be stopped, so its name stays taken rather than
// letting a new service overwrite the rows that track them; fixed, a restart stops them.
TEST_F(DaemonRestartTest, NameOfADeletedServiceWhoseJobsCannotBeStoppedStaysTaken) {
  Open(Config(/*local=*/false));
  const std::set<std::string> jobs = StartSlurmService();
  slurm_->SetDown(true);
  ASSERT_TRUE(daemon_->DeleteService("gpu"));
  Tick();
  Crash();
  std::string good_spec;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto row = store->services().Get("gpu");
    ASSERT_TRUE(row);
    good_spec = row->spec;
    ServiceConfig broken = SlurmService(2);
    broken.slurm.transport = "rest";
    broken.slurm.url = "http://127.0.0.1:9";
    broken.slurm.token_file = dir_ + "/no-such-token";
    row->spec = ServiceConfigToYaml(broken);
    ASSERT_TRUE(store->services().Put(*row));
  }
  slurm_->SetDown(false);
  Open(Config(/*local=*/false));
  Tick(2);
  const auto errors = EventsOfKind(events::EventKind::kOrphanError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].message, HasSubstr("no-such-token"));
  auto refused = daemon_->CreateService(SlurmService(1));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(refused.error().field, "name");
  EXPECT_THAT(refused.error().message, HasSubstr("could not be stopped"));
  EXPECT_THAT(refused.error().message, HasSubstr("no-such-token"));
  EXPECT_TRUE(slurm_->Cancelled().empty());
  Crash();
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->replicas().ListForService("gpu")->size(), 2u);  // still tracked
    auto row = store->services().Get("gpu");
    ASSERT_TRUE(row);
    EXPECT_TRUE(row->deleting);
    row->spec = good_spec;  // the user fixes the engine settings (the token file)
    ASSERT_TRUE(store->services().Put(*row));
  }
  Open(Config(/*local=*/false));
  Tick(2);
  EXPECT_EQ(slurm_->Cancelled(), jobs);
  ASSERT_TRUE(daemon_->CreateService(SlurmService(1)));
}

TEST_F(DaemonRestartTest, QueuedSlurmReplicasShowNoHost) {
  Open(Config(/*local=*/true, 1, 1));
  StartSlurmService();
  Tick();
  auto queued = daemon_->ListReplicas("gpu");
  ASSERT_TRUE(queued);
  ASSERT_EQ(queued->size(), 2u);
  for (const ReplicaView& r : *queued) {
    EXPECT_EQ(r.phase, scale::ReplicaPhase::kPending) << r.id;
    EXPECT_EQ(r.host, "") << r.id;
  }
  auto local = daemon_->ListReplicas("svc");
  ASSERT_TRUE(local);
  ASSERT_EQ(local->size(), 1u);
  EXPECT_EQ(local->at(0).host, "127.0.0.1");  // local replicas serve on this machine
}

// Slurm services adopt at the same time and share the cluster's listing: a daemon with
// hundreds of them listed the cluster once per service, one after another, before serving.
TEST_F(DaemonRestartTest, SlurmServicesAdoptTogetherOnSharedListings) {
  DaemonConfig config = Config(/*local=*/true, 1, 1);
  for (int i = 0; i < 6; ++i) {
    ServiceConfig s = SlurmService(0);
    s.name = "gpu" + std::to_string(i);
    s.min_replicas = 0;
    config.services.push_back(s);
  }
  slurm_->SetListingDelay(0.5);
  Open(std::move(config));
  // One by one: 6 listings. Together: the first caller's, and one the other five share (a
  // caller late to that one under load may need a third).
  EXPECT_LE(slurm_->ListingRuns(), 3);
  Tick();
  EXPECT_TRUE(daemon_->ListReplicas("gpu5"));
  auto local = daemon_->ListReplicas("svc");
  ASSERT_TRUE(local);
  EXPECT_EQ(local->size(), 1u) << "the local service adopted as before, then started";
}

TEST_F(DaemonRestartTest, ManualOverrideSurvivesRestartsUntilCleared) {
  Open(Config(/*local=*/true, 1, 3));
  Tick();
  ASSERT_TRUE(daemon_->SetDesiredReplicas("svc", 3));
  Tick(2);
  Crash();

  Open(Config(/*local=*/true, 1, 3));
  EXPECT_EQ(daemon_->GetService("svc")->manual_replicas, 3);
  Tick(2);
  auto view = daemon_->GetService("svc");
  ASSERT_TRUE(view);
  EXPECT_EQ(view->desired_replicas, 3);
  EXPECT_THAT(view->last_reason, HasSubstr("manual override"));
  EXPECT_EQ(daemon_->ListReplicas("svc")->size(), 3u);

  ASSERT_TRUE(daemon_->SetDesiredReplicas("svc", std::nullopt));
  Tick();
  Crash();
  Open(Config(/*local=*/true, 1, 3));
  EXPECT_FALSE(daemon_->GetService("svc")->manual_replicas.has_value());
  Tick();
  EXPECT_THAT(daemon_->GetService("svc")->last_reason, Not(HasSubstr("manual override")));
}

TEST_F(DaemonRestartTest, StoredOverrideOutsideNewConfigBoundsIsDroppedWithAnEvent) {
  Open(Config(/*local=*/true, 1, 3));
  ASSERT_TRUE(daemon_->SetDesiredReplicas("svc", 3));
  Crash();
  Open(Config(/*local=*/true, 1, 2));  // max_replicas lowered in the config meanwhile
  EXPECT_FALSE(daemon_->GetService("svc")->manual_replicas.has_value());
  const auto events = EventsOfKind(events::EventKind::kManualOverride);
  ASSERT_FALSE(events.empty());
  EXPECT_THAT(events.back().message, HasSubstr("dropped"));
  Crash();
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->services().Get("svc")->manual_replicas.has_value());
}

TEST_F(DaemonRestartTest, OverrideOfAnApiCreatedServiceSurvivesARestart) {
  Open(Config(/*local=*/false));
  ServiceConfig s = Config(/*local=*/true).services[0];
  s.name = "api";
  s.readiness_path = "/health";  // a stored spec must parse again ("" is no path)
  ASSERT_TRUE(daemon_->CreateService(s));
  Tick();
  ASSERT_TRUE(daemon_->SetDesiredReplicas("api", 2));
  Tick(2);
  Crash();
  Open(Config(/*local=*/false));
  auto view = daemon_->GetService("api");
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_EQ(view->manual_replicas, 2);
}

}  // namespace
}  // namespace gpuscale::daemon
