#include "alloc/lease_ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <set>
#include <thread>

#include "testing/alloc_test_util.h"

namespace gpuscale::alloc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::IdleSnapshot;

SelectionRequest Gpus(int n) {
  SelectionRequest r;
  r.gpu_count = n;
  return r;
}

TEST(LeaseLedgerTest, LeasedGpuIsNotHandedOutAgainThoughMetricsStillLookIdle) {
  LeaseLedger ledger;
  const gpu::GpuSnapshot snapshot = IdleSnapshot(2);  // the same reading twice, same second
  Result<Selection> first = ledger.Allocate(snapshot, Gpus(1), "job-a", Seconds{10});
  Result<Selection> second = ledger.Allocate(snapshot, Gpus(1), "job-b", Seconds{10});
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_THAT(first->Indices(), ElementsAre(0));
  EXPECT_THAT(second->Indices(), ElementsAre(1));
  Result<Selection> third = ledger.Allocate(snapshot, Gpus(1), "job-c", Seconds{10});
  ASSERT_FALSE(third.has_value());
  EXPECT_EQ(third.error().code, ErrorCode::kResourceExhausted);
  EXPECT_THAT(third.error().message, HasSubstr("GPU 0: leased to job-a; GPU 1: leased to job-b"));
}

SelectionRequest GpusOf(int n, std::string type) {
  SelectionRequest r = Gpus(n);
  r.gpu_type = std::move(type);
  return r;
}

TEST(LeaseLedgerTest, NeverLeasesAGpuOfAnotherTypeEvenWhenOnlyThoseAreFree) {
  LeaseLedger ledger;
  const gpu::GpuSnapshot fleet = testing::MixedSnapshot(2, 2);
  Result<Selection> a = ledger.Allocate(fleet, GpusOf(1, "A100-80GB"), "job-a", Seconds{1});
  Result<Selection> b = ledger.Allocate(fleet, GpusOf(1, "A100-80GB"), "job-b", Seconds{1});
  ASSERT_TRUE(a && b);
  EXPECT_THAT(a->Indices(), ElementsAre(2));
  EXPECT_THAT(b->Indices(), ElementsAre(3));
  Result<Selection> c = ledger.Allocate(fleet, GpusOf(1, "A100-80GB"), "job-c", Seconds{1});
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message, HasSubstr("of type A100-80GB, 0 of 4 eligible; free by type: "
                                           "H100-80GB 2; excluded: GPU 0: type H100-80GB"));
  EXPECT_THAT(c.error().message, HasSubstr("GPU 2: leased to job-a"));
  EXPECT_TRUE(ledger.LeasesOf("job-c").empty());
  ASSERT_EQ(ledger.LeasesOf("job-a").size(), 1u);
  EXPECT_EQ(ledger.LeasesOf("job-a")[0].gpu_type, "A100-80GB");
}

// After a restart the daemon's ledger is rebuilt from the store: each stored lease is taken
// again for its owner on a snapshot of just its key, readings and type unknown
// (orch/local_process_adoption.cc). Typed requests on the live fleet must still see them.
TEST(LeaseLedgerTest, RestoredLeasesKeepTypedRequestsOffTheirGpusAndOffOtherTypes) {
  const gpu::GpuSnapshot fleet = testing::MixedSnapshot(2, 3);
  std::vector<Lease> stored;
  {
    LeaseLedger before;
    ASSERT_TRUE(before.Allocate(fleet, GpusOf(2, "A100-80GB"), "replica/a-0", Seconds{1}));
    stored = before.Leases();
  }
  ASSERT_EQ(stored.size(), 2u);
  LeaseLedger restored;
  gpu::GpuSnapshot keys_only;
  for (const Lease& lease : stored) {
    gpu::GpuInfo info;
    info.index = lease.gpu_index;
    info.uuid = lease.key;
    keys_only.gpus.push_back(info);
  }
  ASSERT_TRUE(restored.Allocate(keys_only, Gpus(2), "replica/a-0", Seconds{2}));

  Result<Selection> next =
      restored.Allocate(fleet, GpusOf(1, "A100-80GB"), "replica/a-1", Seconds{3});
  ASSERT_TRUE(next) << next.error().ToString();
  EXPECT_THAT(next->Indices(), ElementsAre(4)) << "the one A100 no restored lease holds";
  Result<Selection> none =
      restored.Allocate(fleet, GpusOf(1, "A100-80GB"), "replica/a-2", Seconds{3});
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("free by type: H100-80GB 2"));
  EXPECT_EQ(restored.size(), 3u);
}

TEST(LeaseLedgerTest, RecordsLeaseDetails) {
  LeaseLedger ledger;
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(3), Gpus(2), "job-a", Seconds{42}).has_value());
  std::vector<Lease> leases = ledger.LeasesOf("job-a");
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].key, "GPU-0");
  EXPECT_EQ(leases[0].gpu_index, 0);
  EXPECT_EQ(leases[1].key, "GPU-1");
  EXPECT_EQ(leases[1].owner, "job-a");
  EXPECT_EQ(leases[1].acquired_at, Seconds{42});
  EXPECT_TRUE(ledger.LeasesOf("job-b").empty());
}

TEST(LeaseLedgerTest, FailedAllocationLeasesNothing) {
  LeaseLedger ledger;
  EXPECT_FALSE(ledger.Allocate(IdleSnapshot(2), Gpus(3), "job-a", Seconds{0}).has_value());
  EXPECT_EQ(ledger.size(), 0u);
  EXPECT_EQ(ledger.Allocate(IdleSnapshot(2), Gpus(1), "", Seconds{0}).error().field, "owner");
}

TEST(LeaseLedgerTest, ReleaseChecksTheOwner) {
  LeaseLedger ledger;
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(1), Gpus(1), "job-a", Seconds{0}).has_value());
  Status wrong = ledger.Release("GPU-0", "job-b");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(wrong.error().message, HasSubstr("leased to 'job-a'"));
  EXPECT_EQ(ledger.Release("GPU-9", "job-a").error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(ledger.Release("GPU-0", "job-a").has_value());
  EXPECT_TRUE(ledger.Allocate(IdleSnapshot(1), Gpus(1), "job-b", Seconds{1}).has_value());
}

TEST(LeaseLedgerTest, ReleaseOwnerFreesAllItsGpus) {
  LeaseLedger ledger;
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(4), Gpus(3), "job-a", Seconds{0}).has_value());
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(4), Gpus(1), "job-b", Seconds{0}).has_value());
  EXPECT_EQ(ledger.ReleaseOwner("job-a"), 3u);
  EXPECT_EQ(ledger.ReleaseOwner("job-a"), 0u);
  EXPECT_EQ(ledger.size(), 1u);
  Result<Selection> again = ledger.Allocate(IdleSnapshot(4), Gpus(3), "job-c", Seconds{1});
  ASSERT_TRUE(again.has_value());
  EXPECT_THAT(again->Indices(), ElementsAre(0, 1, 2));
}

TEST(LeaseLedgerTest, ReapReleasesOnlyGoneOwners) {
  std::set<std::string> alive = {"pid:1"};
  std::mutex alive_mu;
  LeaseLedger ledger([&](std::string_view owner) {
    std::lock_guard<std::mutex> lock(alive_mu);
    return alive.contains(std::string(owner));
  });
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(4), Gpus(1), "pid:1", Seconds{0}).has_value());
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(4), Gpus(2), "pid:2", Seconds{0}).has_value());
  std::vector<Lease> reaped = ledger.Reap();
  ASSERT_EQ(reaped.size(), 2u);
  EXPECT_EQ(reaped[0].owner, "pid:2");
  EXPECT_EQ(reaped[1].owner, "pid:2");
  EXPECT_EQ(ledger.size(), 1u);
  EXPECT_TRUE(ledger.Reap().empty());
  EXPECT_EQ(ledger.LeasesOf("pid:1").size(), 1u);
}

// The listener fires once per call that released something (never for a no-op), and may
// call back into the ledger: it runs without the ledger's lock.
TEST(LeaseLedgerTest, ReleaseListenerFiresOnlyWhenSomethingWasReleased) {
  std::set<std::string> alive = {"job-a", "job-b"};
  LeaseLedger ledger([&](std::string_view owner) { return alive.contains(std::string(owner)); });
  int calls = 0;
  size_t leases_seen = 99;
  ledger.SetReleaseListener([&] {
    ++calls;
    leases_seen = ledger.size();  // would deadlock if called under the lock
  });
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(4), Gpus(2), "job-a", Seconds{0}).has_value());
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(4), Gpus(1), "job-b", Seconds{0}).has_value());
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(4), Gpus(1), "job-c", Seconds{0}).has_value());
  EXPECT_EQ(calls, 0);

  EXPECT_FALSE(ledger.Release("GPU-0", "job-b").has_value());  // wrong owner: no release
  EXPECT_FALSE(ledger.Release("GPU-9", "job-a").has_value());  // not leased
  EXPECT_EQ(ledger.ReleaseOwner("nobody"), 0u);
  EXPECT_TRUE(ledger.Reap().size() == 1u);  // job-c is gone
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(leases_seen, 3u);
  EXPECT_TRUE(ledger.Reap().empty());
  EXPECT_EQ(calls, 1);

  ASSERT_TRUE(ledger.Release("GPU-2", "job-b").has_value());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(leases_seen, 2u);
  EXPECT_EQ(ledger.ReleaseOwner("job-a"), 2u);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(leases_seen, 0u);

  ledger.SetReleaseListener({});  // removed: releases no longer call it
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(4), Gpus(1), "job-a", Seconds{1}).has_value());
  EXPECT_EQ(ledger.ReleaseOwner("job-a"), 1u);
  EXPECT_EQ(calls, 3);
}

TEST(LeaseLedgerTest, ReapWithoutPredicateKeepsEveryLease) {
  LeaseLedger ledger;
  ASSERT_TRUE(ledger.Allocate(IdleSnapshot(1), Gpus(1), "pid:1", Seconds{0}).has_value());
  EXPECT_TRUE(ledger.Reap().empty());
  EXPECT_EQ(ledger.size(), 1u);
}

// Many threads ask at the same instant, with the same (idle) reading: every GPU goes to
// exactly one owner, and exactly as many requests succeed as there are GPUs for them.
TEST(LeaseLedgerTest, ConcurrentRequestsNeverShareAGpu) {
  constexpr int kGpus = 64;
  constexpr int kThreads = 48;
  constexpr int kGpusPerRequest = 2;  // 32 requests fit, 16 must fail
  LeaseLedger ledger;
  const gpu::GpuSnapshot snapshot = IdleSnapshot(kGpus);
  std::barrier start(kThreads);
  std::vector<std::vector<int>> granted(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      Result<Selection> s =
          ledger.Allocate(snapshot, Gpus(kGpusPerRequest), "job-" + std::to_string(t), Seconds{0});
      if (s) {
        granted[t] = s->Indices();
      } else {
        EXPECT_EQ(s.error().code, ErrorCode::kResourceExhausted);
        failures.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::multiset<int> handed_out;
  for (const auto& gpus : granted) handed_out.insert(gpus.begin(), gpus.end());
  EXPECT_EQ(handed_out.size(), static_cast<size_t>(kGpus));
  for (int g = 0; g < kGpus; ++g) EXPECT_EQ(handed_out.count(g), 1u) << "GPU " << g;
  EXPECT_EQ(failures.load(), kThreads - kGpus / kGpusPerRequest);
  EXPECT_EQ(ledger.size(), static_cast<size_t>(kGpus));
}

// Threads acquire, release and reap in a loop; at no time may two owners hold one GPU.
TEST(LeaseLedgerTest, ConcurrentAcquireReleaseAndReapKeepLeasesExclusive) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  LeaseLedger ledger([](std::string_view owner) { return !owner.starts_with("dead"); });
  const gpu::GpuSnapshot snapshot = IdleSnapshot(6);
  std::vector<std::atomic<int>> holders(6);
  std::atomic<int> violations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const bool dies = round % 5 == 0;
        const std::string owner = (dies ? "dead-" : "live-") + std::to_string(t);
        Result<Selection> s = ledger.Allocate(snapshot, Gpus(1 + t % 2), owner, Seconds{0});
        if (!s) continue;
        if (dies) {  // another thread's Reap may take these back at any moment
          ledger.Reap();
          continue;
        }
        // A live owner holds its GPUs until it releases them: no one else may get them.
        for (int g : s->Indices()) {
          if (holders[g].fetch_add(1) != 0) violations.fetch_add(1);
        }
        std::this_thread::yield();
        for (int g : s->Indices()) holders[g].fetch_sub(1);
        ledger.ReleaseOwner(owner);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(violations.load(), 0);
  ledger.Reap();
  EXPECT_EQ(ledger.size(), 0u);
}

}  // namespace
}  // namespace gpuscale::alloc
