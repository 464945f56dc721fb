#include "route/admission_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gpuscale::route {
namespace {

AdmissionRequest Req(uint64_t id, Priority p, std::string tenant, double tokens = 100) {
  return {.id = id,
          .priority = p,
          .tenant = std::move(tenant),
          .tokens = tokens,
          .max_wait_seconds = std::nullopt};
}

std::vector<uint64_t> Drain(AdmissionQueue& q) {
  std::vector<uint64_t> order;
  while (std::optional<AdmissionRequest> r = q.Pop()) order.push_back(r->id);
  return order;
}

TEST(PriorityTest, NamesRoundTripAndUnknownNamesAreRefused) {
  for (Priority p : {Priority::kCritical, Priority::kStandard, Priority::kSheddable}) {
    EXPECT_EQ(ParsePriority(PriorityName(p)), p);
  }
  EXPECT_EQ(ParsePriority("Critical"), std::nullopt);
  EXPECT_EQ(ParsePriority(""), std::nullopt);
}

struct OrderCase {
  const char* name;
  std::vector<AdmissionRequest> arrivals;
  std::vector<uint64_t> served;
};

TEST(AdmissionQueueTest, ServesStrictlyByPriorityThenFairlyWithin) {
  using enum Priority;
  for (const OrderCase& c : {
           OrderCase{"priority beats arrival order",
                     {Req(1, kSheddable, "a"), Req(2, kStandard, "a"), Req(3, kCritical, "a")},
                     {3, 2, 1}},
           OrderCase{"one tenant: arrival order",
                     {Req(1, kStandard, "a"), Req(2, kStandard, "a"), Req(3, kStandard, "a")},
                     {1, 2, 3}},
           OrderCase{"tenants alternate",
                     {Req(1, kStandard, "a"), Req(2, kStandard, "a"), Req(3, kStandard, "a"),
                      Req(4, kStandard, "b"), Req(5, kStandard, "b")},
                     {1, 4, 2, 5, 3}},
           OrderCase{"weighted by tokens: b's small requests go in a's big one's share",
                     {Req(1, kStandard, "a", 300), Req(2, kStandard, "a", 300),
                      Req(3, kStandard, "b", 100), Req(4, kStandard, "b", 100),
                      Req(5, kStandard, "b", 100), Req(6, kStandard, "b", 100)},
                     {1, 3, 4, 5, 2, 6}},
           OrderCase{"a critical request jumps a fair-share queue",
                     {Req(1, kStandard, "a"), Req(2, kStandard, "b"), Req(3, kCritical, "c")},
                     {3, 1, 2}},
       }) {
    AdmissionQueue q;
    for (const AdmissionRequest& r : c.arrivals) {
      ASSERT_EQ(q.Enter(r, 0).verdict, AdmissionVerdict::kQueued) << c.name;
    }
    EXPECT_EQ(Drain(q), c.served) << c.name;
  }
}

TEST(AdmissionQueueTest, ATenantSendingTenTimesMoreGetsItsShareWhileOthersWait) {
  AdmissionQueue q(100000);
  uint64_t id = 0;
  std::map<uint64_t, std::string> tenant_of;
  auto enter = [&](const std::string& tenant) {
    tenant_of[++id] = tenant;
    ASSERT_EQ(q.Enter(Req(id, Priority::kStandard, tenant), 0).verdict, AdmissionVerdict::kQueued);
  };
  // Interleaved arrivals: for each request of b and c, ten of the hot tenant's.
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 10; ++i) enter("hot");
    enter("b");
    enter("c");
  }
  ASSERT_EQ(q.Size(), 240u);
  std::map<std::string, int> served;
  int waiting_others = 40;
  while (waiting_others > 0) {
    std::optional<AdmissionRequest> r = q.Pop();
    ASSERT_TRUE(r);
    ++served[tenant_of[r->id]];
    if (tenant_of[r->id] != "hot") --waiting_others;
  }
  // While b and c waited the hot tenant got a third of the service (one request more at
  // most, for the tie it wins by arriving first), not ten twelfths.
  EXPECT_EQ(served["b"], 20);
  EXPECT_EQ(served["c"], 20);
  EXPECT_LE(served["hot"], 21);
  // Then it gets the rest.
  EXPECT_EQ(Drain(q).size(), 200u - served["hot"]);
}

TEST(AdmissionQueueTest, AnIdleTenantBanksNoCredit) {
  AdmissionQueue q;
  // a is served alone for a while: the virtual time moves on with it.
  for (uint64_t id = 1; id <= 5; ++id)
    ASSERT_EQ(q.Enter(Req(id, Priority::kStandard, "a"), 0).verdict, AdmissionVerdict::kQueued);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(q.Pop());
  // b arrives after a's long run, and alternates with a rather than taking five turns.
  for (uint64_t id = 10; id <= 12; ++id)
    ASSERT_EQ(q.Enter(Req(id, Priority::kStandard, "b"), 0).verdict, AdmissionVerdict::kQueued);
  ASSERT_EQ(q.Enter(Req(6, Priority::kStandard, "a"), 0).verdict, AdmissionVerdict::kQueued);
  // Without max(V, F) b's tags would start at 0 and all three would go before a's.
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{10, 5, 11, 12, 6}));
}

struct ShedCase {
  const char* name;
  double completed_tokens;  // 10 s before the arrival
  double queued_critical_tokens;
  std::optional<double> max_wait;
  AdmissionVerdict verdict;
  double expected_wait;
};

TEST(AdmissionQueueTest, ShedsARequestWhoseExpectedWaitExceedsItsBudget) {
  for (const ShedCase& c : {
           // 1000 tokens in 10 s: 100 tokens/s. 500 queued ahead: 5 s.
           ShedCase{"within budget", 1000, 500, 6, AdmissionVerdict::kQueued, 5},
           ShedCase{"over budget", 1000, 500, 4, AdmissionVerdict::kShed, 5},
           ShedCase{"no budget: waits whatever the wait", 1000, 500, std::nullopt,
                    AdmissionVerdict::kQueued, 5},
           ShedCase{"nothing ahead", 1000, 0, 0.5, AdmissionVerdict::kQueued, 0},
           ShedCase{"rate unknown: nothing is shed", 0, 500, 0.5, AdmissionVerdict::kQueued, 0},
       }) {
    AdmissionQueue q(100, /*rate_window_seconds=*/20);
    if (c.completed_tokens > 0) q.RecordCompletion(c.completed_tokens, 0);
    if (c.queued_critical_tokens > 0) {
      ASSERT_EQ(q.Enter(Req(1, Priority::kCritical, "a", c.queued_critical_tokens), 10).verdict,
                AdmissionVerdict::kQueued);
    }
    AdmissionRequest shed = Req(2, Priority::kSheddable, "b");
    shed.max_wait_seconds = c.max_wait;
    const Admission a = q.Enter(shed, 10);
    EXPECT_EQ(a.verdict, c.verdict) << c.name;
    EXPECT_NEAR(a.expected_wait_seconds, c.expected_wait, 1e-9) << c.name;
    EXPECT_EQ(q.Size(Priority::kSheddable), c.verdict == AdmissionVerdict::kQueued ? 1u : 0u)
        << c.name;
  }
}

TEST(AdmissionQueueTest, ExpectedWaitCountsOnlyWhatIsServedFirst) {
  AdmissionQueue q(100, 10);
  q.RecordCompletion(100, 0);
  q.RecordCompletion(100, 2);  // 200 tokens over 2 s: 100 tokens/s
  ASSERT_EQ(q.Enter(Req(1, Priority::kSheddable, "a", 300), 2).verdict, AdmissionVerdict::kQueued);
  ASSERT_EQ(q.Enter(Req(2, Priority::kSheddable, "a", 70), 2).verdict, AdmissionVerdict::kQueued);
  // A critical request waits for nothing queued below it.
  EXPECT_DOUBLE_EQ(q.Enter(Req(3, Priority::kCritical, "a", 50), 2).expected_wait_seconds, 0);
  // Another tenant's sheddable request is tagged level with a's first: it waits for the
  // critical one and a's first (which arrived before it), not for a's second.
  EXPECT_DOUBLE_EQ(q.Enter(Req(4, Priority::kSheddable, "b", 10), 2).expected_wait_seconds, 3.5);
}

// The expected wait is read from per-priority totals and a walk from the nearer end of the
// request's own level: the cases below land at the front, at the back and in the middle of
// a level, after removals from the middle and the front, so a total that drifts or a walk
// that stops at the wrong end gives another figure.
TEST(AdmissionQueueTest, ExpectedWaitHoldsWhereverTheRequestLandsInItsLevel) {
  using enum Priority;
  AdmissionQueue q(100, 10);
  q.RecordCompletion(100, 0);
  q.RecordCompletion(100, 2);  // 100 tokens/s at t = 2
  const auto wait = [&](uint64_t id, Priority p, const char* tenant, double tokens) {
    const Admission a = q.Enter(Req(id, p, tenant, tokens), 2);
    EXPECT_EQ(a.verdict, AdmissionVerdict::kQueued) << id;
    return a.expected_wait_seconds;
  };
  EXPECT_DOUBLE_EQ(wait(1, kCritical, "x", 40), 0);
  // a's sheddable requests are tagged 0, 100 and 300 (finish 600).
  EXPECT_DOUBLE_EQ(wait(2, kSheddable, "a", 100), 0.4);
  EXPECT_DOUBLE_EQ(wait(3, kSheddable, "a", 200), 1.4);
  EXPECT_DOUBLE_EQ(wait(4, kSheddable, "a", 300), 3.4);
  // b is tagged 0: behind a's first only (near the front).
  EXPECT_DOUBLE_EQ(wait(5, kSheddable, "b", 50), 1.4);
  // a's fourth is tagged 600: behind everything (at the back).
  EXPECT_DOUBLE_EQ(wait(6, kSheddable, "a", 10), 6.9);
  // Neither priority below counts for a standard request.
  EXPECT_DOUBLE_EQ(wait(7, kStandard, "c", 5), 0.4);
  ASSERT_TRUE(q.Remove(3));    // a's second, from the middle
  ASSERT_EQ(q.Pop()->id, 1u);  // the critical one
  ASSERT_EQ(q.Pop()->id, 7u);  // the standard one
  // c is tagged 0 in the sheddable level: behind a's first and b (150 of the 460 left).
  EXPECT_DOUBLE_EQ(wait(8, kSheddable, "c", 20), 1.5);
  // A fifth for a, tagged 610: everything left waits ahead of it.
  EXPECT_DOUBLE_EQ(wait(9, kSheddable, "a", 1), 4.8);
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{2, 5, 8, 4, 6, 9}));
  // An emptied level counts nothing, however its total was reached.
  EXPECT_DOUBLE_EQ(wait(10, kSheddable, "d", 1), 0);
}

TEST(AdmissionQueueTest, ExpectedWaitOfARequestNearTheBackOfItsLevel) {
  using enum Priority;
  AdmissionQueue q(100, 10);
  q.RecordCompletion(100, 0);
  q.RecordCompletion(100, 2);  // 100 tokens/s at t = 2
  const auto wait = [&](uint64_t id, const char* tenant, double tokens) {
    return q.Enter(Req(id, kSheddable, tenant, tokens), 2).expected_wait_seconds;
  };
  EXPECT_DOUBLE_EQ(wait(1, "a", 100), 0);    // tag 0
  EXPECT_DOUBLE_EQ(wait(2, "a", 100), 1);    // tag 100
  EXPECT_DOUBLE_EQ(wait(3, "a", 100), 2);    // tag 200
  EXPECT_DOUBLE_EQ(wait(4, "b", 250), 1);    // tag 0, behind a's first
  EXPECT_DOUBLE_EQ(wait(5, "a", 100), 5.5);  // tag 300
  // b's second is tagged 250: four requests ahead of it, only a's tag-300 one behind.
  EXPECT_DOUBLE_EQ(wait(6, "b", 10), 5.5);
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{1, 4, 2, 3, 6, 5}));
}

TEST(AdmissionQueueTest, ServiceRateForgetsCompletionsOutsideTheWindow) {
  AdmissionQueue q(100, 10);
  EXPECT_EQ(q.ServiceRate(0), std::nullopt);
  q.RecordCompletion(50, 0);
  EXPECT_DOUBLE_EQ(*q.ServiceRate(0.5), 50);  // at least a second's span
  q.RecordCompletion(50, 4);
  EXPECT_DOUBLE_EQ(*q.ServiceRate(5), 20);  // 100 tokens over 5 s
  EXPECT_DOUBLE_EQ(*q.ServiceRate(12), 5);  // the first left the window: 50 over 10 s
  EXPECT_EQ(q.ServiceRate(14), std::nullopt);
  q.RecordCompletion(30, 100);  // a new busy period: measured from its first completion
  EXPECT_DOUBLE_EQ(*q.ServiceRate(102), 15);
}

TEST(AdmissionQueueTest, RefusesPastCapacity) {
  AdmissionQueue q(2);
  EXPECT_EQ(q.Enter(Req(1, Priority::kSheddable, "a"), 0).verdict, AdmissionVerdict::kQueued);
  EXPECT_EQ(q.Enter(Req(2, Priority::kSheddable, "a"), 0).verdict, AdmissionVerdict::kQueued);
  EXPECT_EQ(q.Enter(Req(3, Priority::kCritical, "a"), 0).verdict, AdmissionVerdict::kFull);
  EXPECT_EQ(q.Size(), 2u);
}

TEST(AdmissionQueueTest, RemovingACancelledRequestKeepsTheRestInOrder) {
  AdmissionQueue q;
  for (uint64_t id = 1; id <= 3; ++id)
    ASSERT_EQ(q.Enter(Req(id, Priority::kStandard, "a"), 0).verdict, AdmissionVerdict::kQueued);
  ASSERT_EQ(q.Enter(Req(4, Priority::kCritical, "b"), 0).verdict, AdmissionVerdict::kQueued);
  EXPECT_TRUE(q.Remove(2));
  EXPECT_TRUE(q.Remove(4));
  EXPECT_FALSE(q.Remove(4));
  EXPECT_FALSE(q.Remove(99));
  EXPECT_EQ(q.Size(), 2u);
  EXPECT_EQ(q.Size(Priority::kCritical), 0u);
  ASSERT_NE(q.Peek(), nullptr);
  EXPECT_EQ(q.Peek()->id, 1u);
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{1, 3}));
}

TEST(AdmissionQueueTest, ACancelledLastRequestCostsItsTenantNothing) {
  AdmissionQueue q;
  ASSERT_EQ(q.Enter(Req(1, Priority::kStandard, "a"), 0).verdict, AdmissionVerdict::kQueued);
  ASSERT_EQ(q.Enter(Req(2, Priority::kStandard, "a"), 0).verdict, AdmissionVerdict::kQueued);
  ASSERT_TRUE(q.Remove(2));
  // a's next request takes the cancelled one's place, level with b's first.
  ASSERT_EQ(q.Enter(Req(3, Priority::kStandard, "b"), 0).verdict, AdmissionVerdict::kQueued);
  ASSERT_EQ(q.Enter(Req(4, Priority::kStandard, "a"), 0).verdict, AdmissionVerdict::kQueued);
  ASSERT_EQ(q.Enter(Req(5, Priority::kStandard, "b"), 0).verdict, AdmissionVerdict::kQueued);
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{1, 3, 4, 5}));
}

}  // namespace
}  // namespace gpuscale::route
