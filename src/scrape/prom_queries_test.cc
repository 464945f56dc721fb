// PromQueries: a query that misses the tick's cutoff keeps running without holding the tick,
// its last answer stands while young, and its late answer lands in a later tick. A fake query
// function stands in for Prometheus; it blocks chosen PromQL until the test releases it, so
// that every assertion is about order, never about how long something took.
#include "scrape/prom_queries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "testing/wait_until.h"

namespace gpuscale::metrics {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr char kPromUrl[] = "http://prometheus.test:9090";

// Answers each PromQL with its value (or an error) at once, except the blocked ones: those
// wait until Release. Thread-safe: PromQueries' workers call Query concurrently.
class BlockingPromQuery {
 public:
  void Answer(const std::string& promql, Result<double> value) {
    MutexLock lock(mu_);
    answers_.insert_or_assign(promql, std::move(value));
  }
  void Block(const std::string& promql) {
    MutexLock lock(mu_);
    blocked_.insert(promql);
  }
  void Release() {
    MutexLock lock(mu_);
    released_ = true;
    cv_.NotifyAll();
  }
  bool released() const {
    MutexLock lock(mu_);
    return released_;
  }
  int calls(const std::string& promql) const {
    MutexLock lock(mu_);
    auto it = calls_.find(promql);
    return it == calls_.end() ? 0 : it->second;
  }
  int most_at_once() const {
    MutexLock lock(mu_);
    return most_at_once_;
  }
  std::vector<std::string> urls() const {
    MutexLock lock(mu_);
    return urls_;
  }
  // Blocks until `n` queries are waiting for Release.
  void AwaitBlocked(int n) {
    MutexLock lock(mu_);
    cv_.Wait(mu_, [&]() GS_REQUIRES(mu_) { return waiting_ >= n; });
  }

  Result<double> Query(std::string_view url, std::string_view promql,
                       const metrics::PrometheusQueryOptions& /*options*/) {
    MutexLock lock(mu_);
    const std::string key(promql);
    ++calls_[key];
    urls_.emplace_back(url);
    ++running_;
    most_at_once_ = std::max(most_at_once_, running_);
    if (blocked_.contains(key)) {
      ++waiting_;
      cv_.NotifyAll();
      cv_.Wait(mu_, [&]() GS_REQUIRES(mu_) { return released_; });
      --waiting_;
    }
    --running_;
    auto it = answers_.find(key);
    if (it == answers_.end()) return Unavailable("no answer set for " + key);
    return it->second;
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, Result<double>> answers_ GS_GUARDED_BY(mu_);
  std::set<std::string> blocked_ GS_GUARDED_BY(mu_);
  std::map<std::string, int> calls_ GS_GUARDED_BY(mu_);
  std::vector<std::string> urls_ GS_GUARDED_BY(mu_);
  bool released_ GS_GUARDED_BY(mu_) = false;
  int running_ GS_GUARDED_BY(mu_) = 0;
  int waiting_ GS_GUARDED_BY(mu_) = 0;
  int most_at_once_ GS_GUARDED_BY(mu_) = 0;
};

class PromQueriesTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(16); }
  // Whatever an assertion left blocked is released before the workers are joined.
  void TearDown() override {
    fake_.Release();
    queries_.reset();
  }

  // REQUIRES: nothing blocked in the fake (a test calls it first).
  void Make(size_t max_threads) {
    queries_.reset();
    queries_ = std::make_unique<PromQueries>(
        max_threads, [this](std::string_view url, std::string_view promql,
                            const metrics::PrometheusQueryOptions& options) {
          return fake_.Query(url, promql, options);
        });
  }

  // One tick over `promqls`. `wait_all`: a cutoff far away (the tick ends when every query
  // started in it has answered); otherwise one that has passed already.
  std::vector<QueryJob> Tick(const std::vector<std::string>& promqls, bool wait_all,
                             std::string url = kPromUrl) {
    std::vector<QueryJob> jobs;
    for (const std::string& promql : promqls) jobs.push_back({promql});
    QueryRound round;
    round.url = std::move(url);
    round.stale_after_ticks = 3;
    round.cutoff = wait_all ? Clock::now() + std::chrono::minutes(10) : Clock::now();
    queries_->Collect(jobs, std::move(round));
    return jobs;
  }

  // Polls until no query is in flight (a landed answer is bookkept after the fake returns).
  bool AwaitSettled() {
    return gpuscale::testing::WaitUntil([this] { return queries_->in_flight() == 0; },
                                        std::chrono::seconds(10), std::chrono::milliseconds(1));
  }

  BlockingPromQuery fake_;
  std::unique_ptr<PromQueries> queries_;
};

TEST_F(PromQueriesTest, FastQueryAnswersFreshInTheSameTick) {
  fake_.Answer("up", 42.0);
  std::vector<QueryJob> jobs = Tick({"up"}, /*wait_all=*/true);
  ASSERT_TRUE(jobs[0].result) << jobs[0].result.error().ToString();
  EXPECT_EQ(*jobs[0].result, 42.0);
  EXPECT_EQ(queries_->in_flight(), 0u);
  EXPECT_EQ(queries_->ended(), 1);
}

TEST_F(PromQueriesTest, HungQueryDoesNotHoldTheTickPastTheCutoff) {
  fake_.Answer("fast", 1.0);
  fake_.Answer("slow", 2.0);
  fake_.Block("slow");
  std::vector<QueryJob> jobs;
  std::vector<std::string> promqls = {"fast", "slow"};
  for (const std::string& promql : promqls) jobs.push_back({promql});
  QueryRound round;
  round.url = kPromUrl;
  // Far enough that the fast query answers first even on a loaded machine.
  round.cutoff = Clock::now() + std::chrono::seconds(2);
  queries_->Collect(jobs, std::move(round));
  // Collect returned while the slow query was still blocked in the fake.
  EXPECT_FALSE(fake_.released());
  EXPECT_EQ(queries_->in_flight(), 1u);
  ASSERT_TRUE(jobs[0].result);
  EXPECT_EQ(*jobs[0].result, 1.0);
  ASSERT_FALSE(jobs[1].result);
  EXPECT_EQ(jobs[1].result.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(jobs[1].result.error().message, HasSubstr("has not answered yet"));
  EXPECT_THAT(jobs[1].result.error().message, HasSubstr(kPromUrl));
}

TEST_F(PromQueriesTest, PreviousValueStandsWhileYoungThenStaleError) {
  fake_.Answer("q", 7.0);
  ASSERT_TRUE(Tick({"q"}, true)[0].result);
  fake_.Block("q");
  // stale_after_ticks 3: two ticks without an answer use the last one, the third does not.
  for (int tick = 1; tick <= 2; ++tick) {
    std::vector<QueryJob> jobs = Tick({"q"}, false);
    ASSERT_TRUE(jobs[0].result) << "tick " << tick << ": " << jobs[0].result.error().ToString();
    EXPECT_EQ(*jobs[0].result, 7.0);
  }
  std::vector<QueryJob> jobs = Tick({"q"}, false);
  ASSERT_FALSE(jobs[0].result);
  EXPECT_EQ(jobs[0].result.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(jobs[0].result.error().message, HasSubstr("has not answered within 3 ticks"));
  EXPECT_THAT(jobs[0].result.error().message, HasSubstr("too old to scale on"));
  EXPECT_THAT(jobs[0].result.error().message, HasSubstr(kPromUrl));
  // The same text while it stays stale: one metrics_error event, not one a tick.
  EXPECT_EQ(Tick({"q"}, false)[0].result.error().message, jobs[0].result.error().message);
}

TEST_F(PromQueriesTest, LateAnswerIsTakenFreshByTheNextTick) {
  fake_.Answer("q", 3.0);
  fake_.Block("q");
  EXPECT_FALSE(Tick({"q"}, false)[0].result);
  fake_.Answer("q", 5.0);
  fake_.Release();
  ASSERT_TRUE(AwaitSettled());
  std::vector<QueryJob> jobs = Tick({"q"}, false);  // the cutoff has passed: no new answer
  ASSERT_TRUE(jobs[0].result) << jobs[0].result.error().ToString();
  EXPECT_EQ(*jobs[0].result, 5.0);
  EXPECT_EQ(fake_.calls("q"), 1);  // taken, not asked again
  EXPECT_EQ(queries_->ended(), 1);
}

TEST_F(PromQueriesTest, NoSecondCopyWhileOneIsInFlight) {
  fake_.Answer("q", 1.0);
  fake_.Block("q");
  for (int tick = 0; tick < 4; ++tick) Tick({"q", "q"}, false);  // asked twice a tick, too
  fake_.AwaitBlocked(1);
  EXPECT_EQ(fake_.calls("q"), 1);
  EXPECT_EQ(queries_->in_flight(), 1u);
}

TEST_F(PromQueriesTest, SameQueryOfTwoServicesSharesOneAnswer) {
  fake_.Answer("q", 9.0);
  std::vector<QueryJob> jobs = Tick({"q", "q"}, true);
  ASSERT_TRUE(jobs[0].result && jobs[1].result);
  EXPECT_EQ(*jobs[0].result, 9.0);
  EXPECT_EQ(*jobs[1].result, 9.0);
  EXPECT_EQ(fake_.calls("q"), 1);
}

TEST_F(PromQueriesTest, FailedQueryErrorRepeatsWhileTheNextRuns) {
  fake_.Answer("q", InvalidArgument("bad PromQL"));
  ASSERT_FALSE(Tick({"q"}, true)[0].result);
  fake_.Block("q");
  for (int tick = 0; tick < 5; ++tick) {
    std::vector<QueryJob> jobs = Tick({"q"}, false);
    ASSERT_FALSE(jobs[0].result);
    EXPECT_THAT(jobs[0].result.error().message, HasSubstr("bad PromQL"));
  }
}

TEST_F(PromQueriesTest, RunsAtMostMaxThreadsQueriesAtOnce) {
  Make(2);
  for (const char* q : {"a", "b", "c"}) {
    fake_.Answer(q, 1.0);
    fake_.Block(q);
  }
  Tick({"a", "b", "c"}, false);
  fake_.AwaitBlocked(2);
  EXPECT_EQ(queries_->in_flight(), 3u);  // the third queued
  fake_.Release();
  ASSERT_TRUE(AwaitSettled());
  EXPECT_EQ(fake_.most_at_once(), 2);
  std::vector<QueryJob> jobs = Tick({"a", "b", "c"}, false);
  for (const QueryJob& job : jobs) EXPECT_TRUE(job.result) << job.promql;
}

TEST_F(PromQueriesTest, ChangedUrlAsksTheNewServer) {
  fake_.Answer("q", 1.0);
  ASSERT_TRUE(Tick({"q"}, true)[0].result);
  ASSERT_TRUE(Tick({"q"}, true, "http://other.test:9090")[0].result);
  EXPECT_THAT(fake_.urls(), ::testing::ElementsAre(kPromUrl, "http://other.test:9090"));
}

TEST_F(PromQueriesTest, ForgetsQueriesNoTickAsksFor) {
  fake_.Answer("q", 1.0);
  ASSERT_TRUE(Tick({"q"}, true)[0].result);
  Tick({}, true);
  // Forgotten: asked again, not answered from the old bookkeeping.
  ASSERT_TRUE(Tick({"q"}, true)[0].result);
  EXPECT_EQ(fake_.calls("q"), 2);
}

TEST_F(PromQueriesTest, NoUrlFailsEveryQueryNamingTheField) {
  std::vector<QueryJob> jobs = Tick({"q"}, true, "");
  ASSERT_FALSE(jobs[0].result);
  EXPECT_EQ(jobs[0].result.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(jobs[0].result.error().ToString(), HasSubstr("prometheus.url"));
  EXPECT_EQ(fake_.calls("q"), 0);
}

TEST_F(PromQueriesTest, DestructionWaitsForTheRunningQueryAndDropsTheQueued) {
  Make(1);
  fake_.Answer("a", 1.0);
  fake_.Answer("b", 2.0);
  fake_.Block("a");
  Tick({"a", "b"}, false);
  fake_.AwaitBlocked(1);
  std::thread releaser([this] {
    // Real time for the destructor below to begin waiting on the running query: nothing
    // signals that it waits.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fake_.Release();
  });
  queries_.reset();  // joins the worker once "a" returns
  releaser.join();
  EXPECT_TRUE(fake_.released());
  EXPECT_EQ(fake_.calls("a"), 1);
  EXPECT_EQ(fake_.calls("b"), 0);  // queued behind "a": dropped, never run
}

}  // namespace
}  // namespace gpuscale::metrics
