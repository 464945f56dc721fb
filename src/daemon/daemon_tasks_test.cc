// Daemon with its tasks service: what shutting down does to experiment leases in the state
// store. One service replica (`sleep`, ready as soon as it runs) and one experiment whose
// server (`sleep`) never answers readiness, so it holds its GPU lease until it is stopped.
// Simulated GPUs, a temporary state directory; every process is stopped in TearDown.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "daemon/daemon.h"
#include "testing/daemon_test_fixture.h"
#include "testing/wait_until.h"

namespace gpuscale::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class DaemonTasksTest : public DaemonFixture {
 protected:
  DaemonTasksTest() : DaemonFixture("gpuscale_daemon_tasks_test") {}

  DaemonConfig Config() {
    DaemonConfig c;
    c.gpu.backend.kind = "simulated";  // 4 idle H100s
    c.state_dir = dir_ + "/state";
    ServiceConfig s;
    s.name = "svc";
    s.command = {"sleep", "300"};
    s.readiness_path = "";  // ready once the process runs
    s.min_replicas = 1;
    s.max_replicas = 1;
    c.services.push_back(s);
    return c;
  }

  void Open() {
    DaemonOptions options = QuietOptions();
    options.probe_interval = Seconds{0.05};
    options.stop_grace = Seconds{2};
    DaemonFixture::Open(Config(), std::move(options));
  }

  // One experiment on one GPU whose server runs but never becomes ready.
  static task::TaskDefinition NeverReadyTask() {
    task::TaskDefinition d;
    d.name = "never-ready";
    d.spec.model = "meta-llama/Llama-3.1-8B-Instruct";
    d.spec.params_b = 8;
    d.server_command = {"sleep", "300"};
    return d;
  }

  // Polls (real time) until the experiment's server process runs; its record then.
  task::ExperimentRecord WaitForServer(int64_t task_id) {
    task::ExperimentRecord found;
    gpuscale::testing::WaitUntil(
        [&] {
          auto experiments = daemon_->ListExperiments(task_id);
          if (!experiments || experiments->empty() || (*experiments)[0].pid <= 0) return false;
          found = (*experiments)[0];
          return true;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(10));
    return found;
  }

  // The lease owners in the state store, read through a connection of its own.
  std::multiset<std::string> StoredLeaseOwners() {
    auto store = store::Store::Open(dir_ + "/state/gpuscale.db", clock_.Now());
    EXPECT_TRUE(store) << store.error().ToString();
    if (!store) return {};
    auto rows = (*store)->leases().List();
    EXPECT_TRUE(rows) << rows.error().ToString();
    std::multiset<std::string> owners;
    if (rows) {
      for (const store::LeaseRow& row : *rows) owners.insert(row.owner);
    }
    return owners;
  }

};

TEST_F(DaemonTasksTest, ShutdownLeavingReplicasDropsReleasedExperimentLeasesFromTheStore) {
  Open();
  daemon_->Run();  // the loop's first tick starts the replica; the scheduler starts experiments
  Result<task::TaskRecord> task = daemon_->SubmitTask(NeverReadyTask(), "");
  ASSERT_TRUE(task) << task.error().ToString();
  const task::ExperimentRecord experiment = WaitForServer(task->id);
  ASSERT_GT(experiment.pid, 0) << "the experiment's server did not start";
  daemon_->Tick();  // persists the lease table, the experiment's lease included
  const std::string experiment_owner = fmt::format("experiment/{}", experiment.id);
  std::multiset<std::string> before = StoredLeaseOwners();
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(before.count(experiment_owner), 1u);

  daemon_->Shutdown(/*stop_replicas=*/false);

  // The replica keeps its lease for the next daemon to adopt; the experiment's is gone.
  EXPECT_THAT(StoredLeaseOwners(), ElementsAre(StartsWith("replica/")));
  auto stopped = daemon_->GetExperiment(experiment.id);
  ASSERT_TRUE(stopped) << stopped.error().ToString();
  EXPECT_EQ(stopped->status, task::ExperimentStatus::kFailed);
  EXPECT_THAT(stopped->message, HasSubstr("daemon shut down"));
  EXPECT_NE(kill(experiment.pid, 0), 0) << "the experiment's server outlived the daemon";

  // The next daemon adopts the replica (TearDown stops it) and finds no stale lease.
  daemon_.reset();
  Open();
  ASSERT_EQ(daemon_->Leases().size(), 1u);
  EXPECT_THAT(daemon_->Leases()[0].owner, StartsWith("replica/"));
}

}  // namespace
}  // namespace gpuscale::daemon
