#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "orch/local_process_orchestrator.h"
#include "orch/marked_replicas.h"
#include "orch/process_util.h"
#include "testing/orch_test_util.h"
#include "testing/wait_until.h"

namespace gpuscale::orch {
namespace {

using scale::ReplicaPhase;
using AdoptionTest = OrchTest;

// Runs `count` replicas of `sleep 60` under an orchestrator with its own ledger (the
// "previous daemon"), waits until they are ready, and returns their records. The
// orchestrator is then destroyed, which leaves the processes running.
std::vector<ReplicaRecord> RunPreviousDaemon(LocalProcessConfig config, int count, Seconds now,
                                             const gpu::GpuSnapshot& gpus = FakeGpus(2)) {
  alloc::LeaseLedger old_ledger;
  auto old = LocalProcessOrchestrator::Create(config, old_ledger, [gpus](Seconds) { return gpus; });
  EXPECT_TRUE(old);
  for (int i = 0; i < count; ++i) EXPECT_TRUE((*old)->Start(now));
  (*old)->Poll(now);
  for (const auto& status : (*old)->ListReplicas()) {
    EXPECT_EQ(status.phase, ReplicaPhase::kReady);
  }
  std::vector<ReplicaRecord> records = (*old)->Records();
  // posix_spawn returns once the child's exec has begun, slightly before the kernel shows
  // the new command line; a real daemon restart happens long after that.
  for (const ReplicaRecord& r : records) {
    gpuscale::testing::WaitUntil([&] { return ReadCmdline(r.pid) == r.argv; },
                                 std::chrono::seconds(1));
  }
  return records;
}

TEST_F(AdoptionTest, AdoptsLiveReplicaAndCleansUpDeadOneWithConsistentLeases) {
  const LocalProcessConfig config = Config({"sleep", "60"});
  std::vector<ReplicaRecord> records = RunPreviousDaemon(config, 2, now_);
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) pids_.insert(r.pid);
  ASSERT_EQ(records[0].argv, (std::vector<std::string>{"sleep", "60"}));
  ASSERT_EQ(records[1].gpu_keys, (std::vector<std::string>{"GPU-fake-1"}));
  // svc-1 died while the daemon was down.
  kill(records[1].pid, SIGKILL);
  waitpid(records[1].pid, nullptr, 0);
  // The new daemon's ledger still lists svc-1's GPU (restored from the store).
  alloc::SelectionRequest one;
  gpu::GpuSnapshot gpu1 = FakeGpus(2);
  gpu1.gpus.erase(gpu1.gpus.begin());
  ASSERT_TRUE(ledger_.Allocate(gpu1, one, "replica/svc-1", now_));
  // A stale record whose pid now runs something else (this test binary): never signalled.
  ReplicaRecord stale = records[0];
  stale.id = "svc-7";
  stale.pid = getpid();
  stale.lease_owner = "replica/svc-7";
  ReplicaRecord duplicate = records[0];
  records.push_back(stale);
  records.push_back(duplicate);

  auto& orch = Make(config);
  now_ += Seconds{60};
  AdoptionReport report = orch.Adopt(records, now_);
  EXPECT_EQ(report.adopted, std::vector<std::string>{"svc-0"});
  EXPECT_EQ(report.cleaned_up, (std::vector<std::string>{"svc-1", "svc-7"}));
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("duplicate"), std::string::npos);

  // Leases: svc-0 holds its GPU again under the same owner; svc-1's was released.
  auto leases = ledger_.Leases();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].key, "GPU-fake-0");
  EXPECT_EQ(leases[0].owner, "replica/svc-0");

  ASSERT_EQ(orch.ListReplicas().size(), 1u);
  orch.Poll(now_);
  EXPECT_EQ(orch.ListReplicas()[0].phase, ReplicaPhase::kReady);
  ReplicaInfo info = InfoOf(orch, "svc-0", now_);
  EXPECT_TRUE(info.adopted);
  EXPECT_EQ(info.pid, records[0].pid);
  EXPECT_EQ(info.uptime, Seconds{60});

  // New replicas get ids no record used (svc-7 included) and the freed GPU.
  auto started = orch.Start(now_);
  ASSERT_TRUE(started);
  Track(orch);
  EXPECT_EQ(started->id, "svc-8");
  ASSERT_EQ(ledger_.LeasesOf("replica/svc-8").size(), 1u);
  EXPECT_EQ(ledger_.LeasesOf("replica/svc-8").front().key, "GPU-fake-1");

  // The adopted replica stops like any other and gives its GPU back.
  ASSERT_TRUE(orch.Stop("svc-0", now_));
  ASSERT_TRUE(PumpUntil(orch, [&] { return orch.Replicas(now_).size() == 1; }));
  EXPECT_TRUE(ledger_.LeasesOf("replica/svc-0").empty());
  EXPECT_FALSE(ProcessAlive(records[0].pid));
}

// GPU-fake-0/1 are H100s, GPU-fake-2/3 A100s.
gpu::GpuSnapshot MixedFakeGpus() {
  gpu::GpuSnapshot snapshot = FakeGpus(4);
  for (gpu::GpuInfo& g : snapshot.gpus) g.type = g.index < 2 ? "H100-80GB" : "A100-80GB";
  return snapshot;
}

// After a restart the ledger is rebuilt from the stored records: a typed service's restored
// lease keeps its type, new replicas land only on free GPUs of that type, and a recorded
// GPU that is now of another type is not leased again.
TEST_F(AdoptionTest, TypedServiceKeepsItsTypeAcrossARestart) {
  LocalProcessConfig config = Config({"sleep", "60"});
  config.gpu_type = "A100-80GB";
  gpus_ = MixedFakeGpus();
  std::vector<ReplicaRecord> records = RunPreviousDaemon(config, 1, now_, gpus_);
  ASSERT_EQ(records.size(), 1u);
  pids_.insert(records[0].pid);
  ASSERT_EQ(records[0].gpu_keys, std::vector<std::string>{"GPU-fake-2"});

  auto& orch = Make(config);
  AdoptionReport report = orch.Adopt(records, now_);
  ASSERT_EQ(report.adopted, std::vector<std::string>{"svc-0"});
  ASSERT_EQ(ledger_.Leases().size(), 1u);
  EXPECT_EQ(ledger_.Leases()[0].gpu_type, "A100-80GB");

  ASSERT_TRUE(orch.Start(now_));
  Track(orch);
  ASSERT_EQ(ledger_.LeasesOf("replica/svc-1").size(), 1u);
  EXPECT_EQ(ledger_.LeasesOf("replica/svc-1")[0].key, "GPU-fake-3");
  ASSERT_TRUE(orch.Start(now_));  // no A100 left: pending, though two H100s are free
  EXPECT_TRUE(ledger_.LeasesOf("replica/svc-2").empty());
  bool pending_says_why = false;
  for (const auto& e : orch.TakeEvents()) {
    pending_says_why |= e.kind == events::EventKind::kReplicaPending &&
                        e.message.find(
                            "of type A100-80GB, 0 of 4 eligible; free by type: "
                            "H100-80GB 2") != std::string::npos;
  }
  EXPECT_TRUE(pending_says_why);

  // The same record after the inventory turned GPU-fake-2 into an H100: not re-leased.
  alloc::LeaseLedger other_ledger;
  gpu::GpuSnapshot changed = MixedFakeGpus();
  changed.gpus[2].type = "H100-80GB";
  auto again = LocalProcessOrchestrator::Create(config, other_ledger,
                                                [changed](Seconds) { return changed; });
  ASSERT_TRUE(again);
  AdoptionReport refused = (*again)->Adopt(records, now_);
  EXPECT_TRUE(refused.adopted.empty());
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_NE(refused.errors[0].find("type H100-80GB, not A100-80GB"), std::string::npos)
      << refused.errors[0];
  EXPECT_EQ(other_ledger.size(), 0u);
}

TEST_F(AdoptionTest, StopsAdoptedProcessWhoseGpuIsNowLeasedElsewhereAndFinishesStopping) {
  const LocalProcessConfig config = Config({"sleep", "60"});
  std::vector<ReplicaRecord> records = RunPreviousDaemon(config, 2, now_);
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) pids_.insert(r.pid);
  records[1].stopping = true;  // the previous daemon had sent SIGTERM to svc-1
  alloc::SelectionRequest one;
  gpu::GpuSnapshot gpu0 = FakeGpus(1);
  ASSERT_TRUE(ledger_.Allocate(gpu0, one, "job-9", now_));  // svc-0's GPU, taken meanwhile

  auto& orch = Make(config);
  AdoptionReport report = orch.Adopt(records, now_);
  EXPECT_TRUE(report.adopted.empty());
  EXPECT_EQ(report.cleaned_up, std::vector<std::string>{"svc-1"});
  for (const auto& e : orch.TakeEvents()) {
    if (e.kind == events::EventKind::kReplicaCleanedUp && e.replica == "svc-1") {
      ASSERT_NE(e.message.find("killed"), std::string::npos) << e.message;
    }
  }
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("leased to job-9"), std::string::npos) << report.errors[0];
  EXPECT_TRUE(orch.ListReplicas().empty());

  ASSERT_TRUE(PumpUntil(orch, [&] { return !orch.HasProcesses(); }));
  EXPECT_FALSE(ProcessAlive(records[0].pid));
  // svc-1 was killed outright; reap it (this test is its parent) and check it is gone.
  waitpid(records[1].pid, nullptr, 0);
  EXPECT_FALSE(ProcessAlive(records[1].pid));
  auto leases = ledger_.Leases();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].owner, "job-9");
}

// What a daemon whose replicas table cannot be read adopts instead: each replica process
// says which replica it is, on which port and GPUs, under which lease keys.
TEST_F(AdoptionTest, MarkedProcessesDescribeTheirReplicasWithoutTheDatabase) {
  const LocalProcessConfig config = Config({"sleep", "60"});
  const std::vector<ReplicaRecord> records = RunPreviousDaemon(config, 2, now_);
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) pids_.insert(r.pid);
  MarkedReplicas found = FindMarkedReplicas(config.state_dir, now_);
  EXPECT_TRUE(found.unidentified.empty());
  ASSERT_EQ(found.replicas.size(), 2u);
  std::sort(found.replicas.begin(), found.replicas.end(),
            [](const MarkedReplica& a, const MarkedReplica& b) { return a.record.id < b.record.id; });
  std::vector<ReplicaRecord> rebuilt;
  for (size_t i = 0; i < records.size(); ++i) {
    const ReplicaRecord& want = records[i];
    const MarkedReplica& got = found.replicas[i];
    EXPECT_EQ(got.service, "svc");
    EXPECT_EQ(got.record.id, want.id);
    EXPECT_EQ(got.record.pid, want.pid);
    EXPECT_EQ(got.record.port, want.port);
    EXPECT_EQ(got.record.gpus, want.gpus);
    EXPECT_EQ(got.record.gpu_keys, want.gpu_keys);
    EXPECT_EQ(got.record.argv, want.argv);
    EXPECT_EQ(got.record.lease_owner, want.lease_owner);
    EXPECT_EQ(got.record.log_path, want.log_path);
    rebuilt.push_back(got.record);
  }
  auto& orch = Make(config);
  AdoptionReport report = orch.Adopt(rebuilt, now_);
  EXPECT_EQ(report.adopted, (std::vector<std::string>{"svc-0", "svc-1"}));
  EXPECT_EQ(ledger_.Leases().size(), 2u);
}

// A record whose live process is marked for another state directory (this database is a
// copy of that directory's) belongs to the other daemon: dropped, its lease released here,
// and never signalled, not even by a StopAll.
TEST_F(AdoptionTest, ProcessMarkedForAnotherStateDirectoryIsLeftAloneAndItsLeaseReleased) {
  const LocalProcessConfig original = Config({"sleep", "60"});
  const std::vector<ReplicaRecord> records = RunPreviousDaemon(original, 1, now_);
  ASSERT_EQ(records.size(), 1u);
  pids_.insert(records[0].pid);
  alloc::SelectionRequest one;
  ASSERT_TRUE(ledger_.Allocate(FakeGpus(1), one, records[0].lease_owner, now_));  // the copy's
  LocalProcessConfig copy = original;
  copy.state_dir = original.state_dir + "/copy";
  auto& orch = Make(copy);
  AdoptionReport report = orch.Adopt(records, now_);
  EXPECT_TRUE(report.adopted.empty());
  EXPECT_EQ(report.cleaned_up, std::vector<std::string>{"svc-0"});
  ASSERT_EQ(report.other_state_dir.size(), 1u);
  EXPECT_NE(report.other_state_dir[0].find(ReplicaMarkerValue(original.state_dir)),
            std::string::npos)
      << report.other_state_dir[0];
  EXPECT_TRUE(ledger_.Leases().empty());
  EXPECT_TRUE(orch.ListReplicas().empty());
  orch.StopAll(now_);
  orch.Poll(now_);
  EXPECT_TRUE(ProcessAlive(records[0].pid));
}

}  // namespace
}  // namespace gpuscale::orch
