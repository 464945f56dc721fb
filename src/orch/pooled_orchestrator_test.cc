// Two pools of `sleep` replicas on one alloc::PoolBudget (a disaggregated service's prefill and
// decode pools): a placement the budget refuses stays pending with the budget's reason, a
// stopped replica's GPUs go back to the budget once its process is gone, and a daemon restart
// (adoption through a PooledOrchestrator) rebuilds the held counts from the running replicas.
#include "orch/pooled_orchestrator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "orch/local_process_orchestrator.h"
#include "orch/process_util.h"
#include "testing/orch_test_util.h"
#include "testing/wait_until.h"

namespace gpuscale::orch {
namespace {

using scale::ReplicaPhase;
class PooledOrchestratorTest : public OrchTest {
 protected:
  // Service x's prefill (pool 0) and decode (pool 1) pools of `sleep` replicas on `budget`.
  struct TwoPools {
    LocalProcessConfig prefill_config, decode_config;
    LocalProcessOrchestrator* prefill = nullptr;
    LocalProcessOrchestrator* decode = nullptr;
  };
  TwoPools MakePools(alloc::PoolBudget& budget) {
    TwoPools pools;
    pools.prefill_config = Config({"sleep", "60"});
    pools.prefill_config.service = "x.prefill";
    pools.decode_config = pools.prefill_config;
    pools.decode_config.service = "x.decode";
    pools.prefill = &Make(pools.prefill_config);
    pools.decode = &Make(pools.decode_config);
    pools.prefill->SetPoolBudget(&budget, 0);
    pools.decode->SetPoolBudget(&budget, 1);
    return pools;
  }
};

alloc::PoolBudget BudgetOfThree() {
  return *alloc::PoolBudget::Make(3, {{"prefill", 1}, {"decode", 1}});
}

TEST_F(PooledOrchestratorTest, ABudgetRefusalLeavesTheReplicaPendingUntilTheOtherPoolGivesBack) {
  gpus_ = FakeGpus(4);
  alloc::PoolBudget budget = BudgetOfThree();
  const TwoPools pools = MakePools(budget);
  LocalProcessOrchestrator& prefill = *pools.prefill;
  LocalProcessOrchestrator& decode = *pools.decode;
  for (LocalProcessOrchestrator* pool : {&prefill, &prefill, &decode}) {
    auto started = pool->Start(now_);
    ASSERT_TRUE(started);
    EXPECT_EQ(started->phase, ReplicaPhase::kStarting);
  }
  EXPECT_EQ(budget.total_held(), 3);
  // A fourth GPU is free on the machine, but not in the budget.
  auto refused = decode.Start(now_);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->phase, ReplicaPhase::kPending);
  EXPECT_NE(InfoOf(decode, "x.decode-1", now_).last_error.find("GPU budget"), std::string::npos)
      << InfoOf(decode, "x.decode-1", now_).last_error;
  for (auto& e : decode.TakeEvents()) events_.push_back(e);
  ASSERT_NE(LastEvent("replica_pending"), nullptr);
  EXPECT_NE(LastEvent("replica_pending")->message.find("GPU budget"), std::string::npos);
  Status retry = decode.Place("x.decode-1", now_);
  ASSERT_FALSE(retry);
  EXPECT_EQ(retry.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(ledger_.size(), 3u);  // the refused replica leased nothing
  EXPECT_EQ(budget.held(1), 1);

  // The prefill pool scales in: its GPU goes back once the process has exited.
  ASSERT_TRUE(prefill.Stop("x.prefill-1", now_));
  EXPECT_EQ(budget.held(0), 2);
  ASSERT_TRUE(PumpUntil(prefill, [&] { return budget.held(0) == 1; }));
  ASSERT_TRUE(decode.Place("x.decode-1", now_));
  EXPECT_EQ(budget.held(1), 2);
  EXPECT_EQ(budget.total_held(), 3);
}

TEST_F(PooledOrchestratorTest, AdoptionSplitsRecordsByPoolAndRebuildsTheBudget) {
  gpus_ = FakeGpus(4);
  alloc::PoolBudget before = BudgetOfThree();
  const TwoPools old = MakePools(before);
  LocalProcessOrchestrator& old_prefill = *old.prefill;
  LocalProcessOrchestrator& old_decode = *old.decode;
  ASSERT_TRUE(old_prefill.Start(now_));
  ASSERT_TRUE(old_prefill.Start(now_));
  ASSERT_TRUE(old_decode.Start(now_));
  Track(old_prefill);
  Track(old_decode);
  std::vector<ReplicaRecord> records = old_prefill.Records();
  for (ReplicaRecord& r : old_decode.Records()) records.push_back(std::move(r));
  // The record of a replica the service ran before it was disaggregated: stopped.
  ReplicaRecord aggregated = records[0];
  aggregated.id = "x-0";
  aggregated.pid = 0;
  aggregated.lease_owner = "replica/x-0";
  records.push_back(aggregated);
  // The next daemon: the store's leases are handed over, then adopted by a fresh budget.
  for (const ReplicaRecord& r : records) ledger_.ReleaseOwner(r.lease_owner);
  auto budget = std::make_shared<alloc::PoolBudget>(BudgetOfThree());
  std::vector<PooledOrchestrator::Pool> pools;
  for (int role = 0; role < 2; ++role) {
    LocalProcessConfig c = role == 0 ? old.prefill_config : old.decode_config;
    auto local = LocalProcessOrchestrator::Create(c, ledger_, [this](Seconds) { return gpus_; });
    ASSERT_TRUE(local);
    (*local)->SetPoolBudget(budget.get(), role);
    pools.push_back({c.service, std::move(*local)});
  }
  PooledOrchestrator pooled(budget, std::move(pools));
  // Adoption compares command lines: wait until each forked child runs its own.
  for (const ReplicaRecord& r : records) {
    if (r.pid > 0)
      gpuscale::testing::WaitUntil([&] { return ReadCmdline(r.pid) == r.argv; },
                                   std::chrono::seconds(1));
  }
  const AdoptionReport report = pooled.Adopt(records, now_);
  EXPECT_EQ(report.adopted.size(), 3u) << (report.errors.empty() ? "" : report.errors[0]);
  EXPECT_EQ(report.cleaned_up, std::vector<std::string>{"x-0"});
  EXPECT_EQ(budget->held(0), 2);
  EXPECT_EQ(budget->held(1), 1);
  EXPECT_EQ(pooled.PoolOf("x.decode-0"), 1);
  EXPECT_EQ(pooled.PoolOf("x-0"), -1);
  EXPECT_EQ(pooled.ListReplicas().size(), 3u);
  EXPECT_EQ(pooled.Records().size(), 3u);
  EXPECT_FALSE(pooled.Start(now_));  // a pool starts replicas, not the service
  ASSERT_TRUE(pooled.Stop("x.prefill-0", now_));
  pooled.StopAll(now_);
  gpuscale::testing::WaitUntil(
      [&] {
        pooled.Poll(now_);
        return !pooled.HasProcesses();
      },
      std::chrono::seconds(10), std::chrono::milliseconds(10));
  EXPECT_FALSE(pooled.HasProcesses());
  EXPECT_EQ(budget->total_held(), 0);
}

}  // namespace
}  // namespace gpuscale::orch
