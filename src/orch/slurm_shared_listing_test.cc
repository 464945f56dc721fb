#include "orch/slurm_shared_listing.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testing/wait_until.h"

namespace gpuscale::orch {
namespace {

using namespace std::chrono_literals;

// Lists one job whose id is the number of the fetch ("1", "2", ...); a fetch waits until the
// test opens the gate for it, so the test decides what overlaps.
class GatedLister final : public SlurmTransport {
 public:
  std::string_view Name() const override { return "gated"; }
  Result<std::string> Submit(const SlurmJobRequest&) override { return std::string("own"); }
  Status Cancel(const std::string&) override { return OkStatus(); }
  Result<std::vector<SlurmJob>> ListJobs() override {
    std::unique_lock<std::mutex> lock(mu_);
    const int number = ++started_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return opened_ >= number; });
    SlurmJob job;
    job.id = std::to_string(number);
    return std::vector<SlurmJob>{job};
  }
  Result<std::vector<SlurmNode>> ListNodes() override {
    return Unavailable("sinfo: controller down", "slurm");
  }

  void WaitStarted(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return started_ >= n; });
  }
  void Open(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    opened_ = n;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int started_ = 0;
  int opened_ = 0;
};

std::string FirstId(const Result<std::vector<SlurmJob>>& jobs) {
  return jobs && !jobs->empty() ? jobs->front().id : "error";
}

TEST(SlurmListingHubTest, CallersDuringAFetchShareTheNextOneAndNeverGetAnOlderListing) {
  auto lister = std::make_shared<GatedLister>();
  SlurmListingHub hub(lister);
  std::string first;
  std::thread a([&] { first = FirstId(hub.ListJobs()); });
  lister->WaitStarted(1);
  // Five services ask while fetch 1 runs: it began before they asked, so none may take it
  // (one of them may have just seen its sbatch answered), and all five share fetch 2.
  std::vector<std::string> later(5);
  std::vector<std::thread> waiting;
  for (std::string& id : later) waiting.emplace_back([&] { id = FirstId(hub.ListJobs()); });
  ASSERT_TRUE(gpuscale::testing::WaitUntil([&] { return hub.callers() >= 6; }));  // all five wait
  lister->Open(1);
  lister->WaitStarted(2);
  lister->Open(2);
  a.join();
  for (std::thread& t : waiting) t.join();
  EXPECT_EQ(first, "1");
  for (const std::string& id : later) EXPECT_EQ(id, "2");
  EXPECT_EQ(hub.fetches(), 2) << "six callers, two fetches";
}

TEST(SlurmListingHubTest, ACallAfterAFetchEndedFetchesAgainAndErrorsAreShared) {
  auto lister = std::make_shared<GatedLister>();
  lister->Open(100);
  SlurmListingHub hub(lister);
  EXPECT_EQ(FirstId(hub.ListJobs()), "1");
  EXPECT_EQ(FirstId(hub.ListJobs()), "2") << "no listing is served from a cache";
  Result<std::vector<SlurmNode>> nodes = hub.ListNodes();
  ASSERT_FALSE(nodes.has_value());
  EXPECT_EQ(nodes.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(hub.fetches(), 3);
}

TEST(SlurmClustersTest, ServicesOfOneClusterShareAHubThatLivesAsLongAsOneUsesIt) {
  SlurmClusters clusters;
  auto lister = std::make_shared<GatedLister>();
  lister->Open(100);
  std::unique_ptr<SlurmTransport> a =
      clusters.Share("cli|/usr/bin|", std::make_unique<GatedLister>(), lister);
  std::unique_ptr<SlurmTransport> b = clusters.Share(
      "cli|/usr/bin|", std::make_unique<GatedLister>(), std::make_shared<GatedLister>());
  std::unique_ptr<SlurmTransport> other =
      clusters.Share("rest|http://127.0.0.1:6820|", std::make_unique<GatedLister>(),
                     std::make_shared<GatedLister>());
  EXPECT_EQ(clusters.hubs(), 2u);
  // Both services of the first cluster list through the first lister (its fetch count).
  EXPECT_EQ(FirstId(a->ListJobs()), "1");
  EXPECT_EQ(FirstId(b->ListJobs()), "2");
  // Submit and cancel stay each service's own.
  EXPECT_EQ(*a->Submit({}), "own");
  EXPECT_EQ(a->Name(), "gated");
  other.reset();
  EXPECT_EQ(clusters.hubs(), 1u);
  a.reset();
  b.reset();
  EXPECT_EQ(clusters.hubs(), 0u);
}

}  // namespace
}  // namespace gpuscale::orch
