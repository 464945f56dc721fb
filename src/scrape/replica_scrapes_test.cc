// ReplicaScrapes against loopback replicas: fast ones (an HTTP server answering at once with
// a value the test changes between ticks) and stragglers the test answers by hand over a raw
// socket, between ticks, so that nothing depends on timing. A tick that waited for a
// straggler would block until its scrape timed out (30 s) and hand over a timeout error,
// which the expectations reject.
#include "scrape/replica_scrapes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "metrics/metric_lookup.h"
#include "testing/loopback_server.h"
#include "testing/raw_socket.h"

namespace gpuscale::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Body(int waiting) {
  return "vllm:num_requests_waiting " + std::to_string(waiting) + "\n";
}

// Answers /metrics at once with the value last set.
class FastReplica : public testing::LoopbackServer {
 public:
  FastReplica() {
    server().Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      res.set_content(Body(value_), "text/plain; version=0.0.4");
    });
    Start();
  }
  ~FastReplica() { Stop(); }
  void set_value(int value) {
    std::lock_guard lock(mu_);
    value_ = value;
  }

 private:
  std::mutex mu_;
  int value_ = 0;  // guarded by mu_
};

// A replica answered by the test: a scrape waits until Answer(), which the test calls between
// ticks, so the answer is in the scraper's socket when the next tick begins. Requests come
// over one kept-alive connection, accepted once a tick has started a scrape.
class ManualReplica {
 public:
  ManualReplica() = default;
  ~ManualReplica() {
    if (conn_ >= 0) close(conn_);
  }
  ManualReplica(const ManualReplica&) = delete;
  ManualReplica& operator=(const ManualReplica&) = delete;

  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(listener_.port()) + "/metrics";
  }

  // Requests received so far. REQUIRES: a tick has scraped this replica.
  int requests() {
    if (conn_ < 0) conn_ = listener_.Accept();  // connected: a tick scraped it
    for (pollfd p{conn_, POLLIN, 0}; poll(&p, 1, 0) > 0; p.revents = 0) {
      char buffer[4096];
      const ssize_t n = recv(conn_, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      received_.append(buffer, static_cast<size_t>(n));
    }
    int count = 0;
    for (size_t at = received_.find("GET "); at != std::string::npos;
         at = received_.find("GET ", at + 1)) {
      ++count;
    }
    return count;
  }

  // Answers the request in flight, keeping the connection.
  void Answer(int status, const std::string& body) {
    ASSERT_GT(requests(), answered_) << "no request to answer";
    const std::string response =
        "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
        "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n" + body;
    ASSERT_EQ(send(conn_, response.data(), response.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(response.size()));
    ++answered_;
  }

 private:
  testing::RawListener listener_;
  int conn_ = -1;
  std::string received_;
  int answered_ = 0;
};

std::optional<double> Waiting(const ScrapeJob& job) {
  if (!job.result) return std::nullopt;
  Result<double> value = metrics::FindValue(*job.result, "vllm:num_requests_waiting");
  return value ? std::optional<double>(*value) : std::nullopt;
}

// One tick's round: a cutoff well past what loopback answers take (even under sanitizers on
// a busy machine), far below the timeout. A tick that starts a straggler's scrape waits it out.
ScrapeRound Round() {
  ScrapeRound round;
  round.timeout = Seconds{30};
  round.cutoff = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  round.stale_after_ticks = 3;
  return round;
}

TEST(ReplicaScrapesTest, AStragglerIsCarriedOverWhileTheOthersAreFreshEveryTick) {
  FastReplica fast_a, fast_b;
  ManualReplica slow;
  ReplicaScrapes scrapes;
  auto jobs = [&] {
    return std::vector<ScrapeJob>{
        {"a", fast_a.Url("/metrics")}, {"b", fast_b.Url("/metrics")}, {"slow", slow.Url()}};
  };
  for (int tick = 1; tick <= 4; ++tick) {
    fast_a.set_value(tick);
    fast_b.set_value(10 * tick);
    std::vector<ScrapeJob> round = jobs();
    scrapes.Collect(round, Round());
    ASSERT_EQ(round[0].kind, SampleKind::kNew) << "tick " << tick;
    EXPECT_EQ(Waiting(round[0]), tick);
    ASSERT_EQ(round[1].kind, SampleKind::kNew) << "tick " << tick;
    EXPECT_EQ(Waiting(round[1]), 10 * tick);
    if (tick < 3) {
      // No sample yet, none overdue: nothing to report.
      EXPECT_EQ(round[2].kind, SampleKind::kKept) << "tick " << tick;
    } else {
      ASSERT_EQ(round[2].kind, SampleKind::kCarried) << "tick " << tick;
      ASSERT_FALSE(round[2].result.has_value());
      EXPECT_THAT(round[2].result.error().message, HasSubstr("replica slow: metrics stale"));
      EXPECT_THAT(round[2].result.error().message, HasSubstr(slow.Url()));
    }
    EXPECT_EQ(scrapes.in_flight(), 1u);
  }
  EXPECT_EQ(slow.requests(), 1) << "one scrape of the straggler in four ticks";

  // Its answer lands in the first tick after it came.
  slow.Answer(200, Body(7));
  std::vector<ScrapeJob> round = jobs();
  scrapes.Collect(round, Round());
  ASSERT_EQ(round[2].kind, SampleKind::kNew);
  EXPECT_EQ(Waiting(round[2]), 7);
  EXPECT_EQ(round[0].kind, SampleKind::kNew);
  EXPECT_EQ(scrapes.in_flight(), 0u);
  // The next tick scrapes it again.
  round = jobs();
  scrapes.Collect(round, Round());
  EXPECT_EQ(round[2].kind, SampleKind::kKept);
  EXPECT_EQ(slow.requests(), 2);
}

// A replica's values stand while its next scrape is in flight, for stale_after_ticks - 1
// ticks; then it is stale. A failure is reported again each tick until a scrape succeeds.
TEST(ReplicaScrapesTest, KeptValuesTurnStaleAndAFailureStandsUntilASuccess) {
  ManualReplica replica;
  ReplicaScrapes scrapes;
  std::vector<SampleKind> kinds;
  auto tick = [&] {
    std::vector<ScrapeJob> jobs = {{"r", replica.Url()}};
    scrapes.Collect(jobs, Round());
    kinds.push_back(jobs[0].kind);
    return jobs[0];
  };
  tick();
  replica.Answer(200, Body(5));
  EXPECT_EQ(Waiting(tick()), 5);
  for (int i = 0; i < 3; ++i) tick();
  EXPECT_THAT(kinds, ElementsAre(SampleKind::kKept, SampleKind::kNew, SampleKind::kKept,
                                 SampleKind::kKept, SampleKind::kCarried));
  EXPECT_THAT(tick().result.error().message, HasSubstr("replica r: metrics stale"));

  // The scrape in flight ends in an HTTP 500: a new failure, then carried while the next one
  // is in flight, past stale_after_ticks.
  replica.Answer(500, "no\n");
  kinds.clear();
  const ScrapeJob failed = tick();
  ASSERT_FALSE(failed.result.has_value());
  EXPECT_THAT(failed.result.error().message, HasSubstr("returned HTTP 500"));
  for (int i = 0; i < 4; ++i) {
    const ScrapeJob again = tick();
    ASSERT_FALSE(again.result.has_value());
    EXPECT_EQ(again.result.error().message, failed.result.error().message);
  }
  EXPECT_THAT(kinds, ElementsAre(SampleKind::kNew, SampleKind::kCarried, SampleKind::kCarried,
                                 SampleKind::kCarried, SampleKind::kCarried));
  replica.Answer(200, Body(4));
  const ScrapeJob recovered = tick();
  EXPECT_EQ(recovered.kind, SampleKind::kNew);
  EXPECT_EQ(Waiting(recovered), 4);
  EXPECT_EQ(replica.requests(), 3) << "one scrape at a time";
}

// A job that is not due starts no scrape once the replica has answered: its last values (or
// its failure) stand, without turning stale however many ticks pass; due again, it is
// scraped again. One that has never answered is scraped all the same.
TEST(ReplicaScrapesTest, NotDueJobsKeepTheLastOutcomeWithoutScrapingOrAging) {
  ManualReplica replica;
  ReplicaScrapes scrapes;
  auto tick = [&](bool due) {
    std::vector<ScrapeJob> jobs = {{"r", replica.Url()}};
    jobs[0].due = due;
    scrapes.Collect(jobs, Round());
    return jobs[0];
  };
  EXPECT_EQ(tick(false).kind, SampleKind::kKept);  // never answered: scraped anyway
  EXPECT_EQ(replica.requests(), 1);
  replica.Answer(200, Body(6));
  EXPECT_EQ(Waiting(tick(false)), 6);  // the answer lands; no new scrape starts
  for (int i = 0; i < 10; ++i) {
    const ScrapeJob kept = tick(false);
    ASSERT_EQ(kept.kind, SampleKind::kKept) << "tick " << i << ": not stale, not scraped";
  }
  EXPECT_EQ(replica.requests(), 1);
  EXPECT_EQ(scrapes.in_flight(), 0u);
  // Due: scraped, and the usual staleness applies while that scrape is in flight.
  EXPECT_EQ(tick(true).kind, SampleKind::kKept);
  EXPECT_EQ(replica.requests(), 2);
  replica.Answer(500, "no\n");
  const ScrapeJob failed = tick(false);
  ASSERT_EQ(failed.kind, SampleKind::kNew);
  ASSERT_FALSE(failed.result.has_value());
  for (int i = 0; i < 5; ++i) {
    const ScrapeJob carried = tick(false);
    ASSERT_EQ(carried.kind, SampleKind::kCarried);
    EXPECT_EQ(carried.result.error().message, failed.result.error().message);
  }
  EXPECT_EQ(replica.requests(), 2);
}

// A replica no tick names any more is forgotten, its scrape in flight dropped when it ends;
// a bad URL is an error in the tick, with no scrape.
TEST(ReplicaScrapesTest, ForgottenReplicasAndBadUrls) {
  ManualReplica replica;
  ReplicaScrapes scrapes;
  std::vector<ScrapeJob> jobs = {{"r", replica.Url()}};
  scrapes.Collect(jobs, Round());
  EXPECT_EQ(scrapes.in_flight(), 1u);
  for (int i = 0; i < 2; ++i) {
    jobs = {{"bad", "ftp://example/metrics"}};
    scrapes.Collect(jobs, Round());
    ASSERT_EQ(jobs[0].kind, SampleKind::kNew);
    ASSERT_FALSE(jobs[0].result.has_value());
    EXPECT_EQ(jobs[0].result.error().code, ErrorCode::kInvalidArgument);
    if (i == 0) replica.Answer(200, Body(9));  // lands in the next tick, for nobody
  }
  EXPECT_EQ(scrapes.in_flight(), 0u);
  // Named again, the replica starts afresh: a new scrape, not the forgotten one's answer.
  jobs = {{"r", replica.Url()}};
  scrapes.Collect(jobs, Round());
  EXPECT_EQ(jobs[0].kind, SampleKind::kKept);
  EXPECT_EQ(replica.requests(), 2);
}

}  // namespace
}  // namespace gpuscale::metrics
