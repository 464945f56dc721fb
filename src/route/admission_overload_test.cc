// Issue 46's "overload at 2x capacity" at the level of the admission queue alone: a service
// of 10 slots, each serving a 100-token request in 1 s (1,000 tokens/s), offered 20 requests
// a second for 300 s. Critical 3/s; standard 12/s, of which one hot tenant sends 10/s and two
// others 1/s each; sheddable 5/s. The door is the gateway's: a sheddable request expected to
// wait past 2 s is refused at once, one that waits 2 s is shed then (both 429); a standard
// request waiting 30 s times out (503). Deterministic (fixed seed), no sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "route/admission_queue.h"

namespace gpuscale::route {
namespace {

constexpr int kSlots = 10;
constexpr double kServiceSeconds = 1, kTokens = 100;
constexpr double kSheddableWait = 2, kStandardTimeout = 30, kCriticalSlo = 1;

struct Source {
  Priority priority;
  std::string tenant;
  double per_second;
};

struct Arrival {
  double time;
  Priority priority;
  std::string tenant;
};

std::vector<Arrival> Arrivals(double duration) {
  const std::vector<Source> sources = {
      {Priority::kCritical, "c1", 1.5}, {Priority::kCritical, "c2", 1.5},
      {Priority::kStandard, "hot", 10}, {Priority::kStandard, "b", 1},
      {Priority::kStandard, "c", 1},    {Priority::kSheddable, "s", 5},
  };
  std::mt19937_64 rng(46);
  std::vector<Arrival> all;
  for (const Source& s : sources) {
    std::exponential_distribution<double> gap(s.per_second);
    for (double t = gap(rng); t < duration; t += gap(rng)) all.push_back({t, s.priority, s.tenant});
  }
  std::sort(all.begin(), all.end(),
            [](const Arrival& a, const Arrival& b) { return a.time < b.time; });
  return all;
}

struct Outcome {
  int arrived = 0, served = 0, within_slo = 0, shed = 0, timed_out = 0;
  double max_wait = 0;
};

TEST(AdmissionOverloadTest, AtTwiceCapacityCriticalIsServedSheddableShedAndTheHotTenantCapped) {
  const double duration = 300;
  const std::vector<Arrival> arrivals = Arrivals(duration);
  ASSERT_GT(arrivals.size(), 5500u);  // ~20/s
  AdmissionQueue queue(100000);
  std::map<uint64_t, Arrival> waiting;
  std::map<std::string, Outcome> by_tenant;
  std::map<Priority, Outcome> by_priority;
  std::priority_queue<double, std::vector<double>, std::greater<>> busy_until;
  auto serve = [&](const Arrival& a, double now) {
    busy_until.push(now + kServiceSeconds);
    const double wait = now - a.time;
    for (Outcome* o : {&by_tenant[a.tenant], &by_priority[a.priority]}) {
      ++o->served;
      o->max_wait = std::max(o->max_wait, wait);
      const double slo = a.priority == Priority::kCritical ? kCriticalSlo : kSheddableWait;
      if (wait <= slo) ++o->within_slo;
    }
  };
  auto drop = [&](uint64_t id, bool shed) {
    const Arrival& a = waiting.at(id);
    for (Outcome* o : {&by_tenant[a.tenant], &by_priority[a.priority]})
      ++(shed ? o->shed : o->timed_out);
    queue.Remove(id);
    waiting.erase(id);
  };
  // What the gateway's waiters do on their deadlines: a sheddable request is shed when its
  // budget runs out, a standard one times out.
  auto expire = [&](double now) {
    std::vector<std::pair<uint64_t, bool>> gone;
    for (const auto& [id, a] : waiting) {
      if (a.priority == Priority::kSheddable && now - a.time > kSheddableWait)
        gone.push_back({id, true});
      if (a.priority == Priority::kStandard && now - a.time > kStandardTimeout)
        gone.push_back({id, false});
    }
    for (auto [id, shed] : gone) drop(id, shed);
  };
  // Completions free slots; each goes to the queue's next request.
  auto complete_until = [&](double now) {
    while (!busy_until.empty() && busy_until.top() <= now) {
      const double t = busy_until.top();
      busy_until.pop();
      queue.RecordCompletion(kTokens, t);
      expire(t);
      if (std::optional<AdmissionRequest> next = queue.Pop()) {
        serve(waiting.at(next->id), t);
        waiting.erase(next->id);
      }
    }
  };
  uint64_t id = 0;
  for (const Arrival& a : arrivals) {
    complete_until(a.time);
    expire(a.time);
    ++by_tenant[a.tenant].arrived;
    ++by_priority[a.priority].arrived;
    if (static_cast<int>(busy_until.size()) < kSlots && queue.Empty()) {
      serve(a, a.time);
      continue;
    }
    AdmissionRequest r{.id = ++id,
                       .priority = a.priority,
                       .tenant = a.tenant,
                       .tokens = kTokens,
                       .max_wait_seconds = std::nullopt};
    if (a.priority == Priority::kSheddable) r.max_wait_seconds = kSheddableWait;
    if (queue.Enter(r, a.time).verdict == AdmissionVerdict::kShed) {
      ++by_tenant[a.tenant].shed;
      ++by_priority[a.priority].shed;
      continue;
    }
    waiting.emplace(id, a);
  }
  const Outcome& critical = by_priority[Priority::kCritical];
  const Outcome& sheddable = by_priority[Priority::kSheddable];
  const Outcome &hot = by_tenant["hot"], &b = by_tenant["b"], &c = by_tenant["c"];
  std::printf(
      "critical: %d arrived, %.2f %% within %.0f s, max wait %.2f s; sheddable: %d arrived, %d "
      "served (max wait %.2f s), %d shed; standard hot: %d arrived, %.2f/s served, %d timed "
      "out; b, c: %.2f %%, %.2f %% served, max wait %.2f s\n",
      critical.arrived, 100.0 * critical.within_slo / critical.arrived, kCriticalSlo,
      critical.max_wait, sheddable.arrived, sheddable.served, sheddable.max_wait, sheddable.shed,
      hot.arrived, hot.served / duration, hot.timed_out, 100.0 * b.served / b.arrived,
      100.0 * c.served / c.arrived, std::max(b.max_wait, c.max_wait));
  // Critical: every one served (none dropped), >= 99 % within its SLO.
  EXPECT_EQ(critical.served + static_cast<int>(std::count_if(waiting.begin(), waiting.end(),
                                                             [](const auto& w) {
                                                               return w.second.priority ==
                                                                      Priority::kCritical;
                                                             })),
            critical.arrived);
  EXPECT_EQ(critical.shed + critical.timed_out, 0);
  EXPECT_GE(critical.within_slo, 0.99 * critical.arrived);
  // Sheddable: shed with 429 (at entry or at its budget), never served late nor timed out.
  EXPECT_GT(sheddable.shed, sheddable.arrived / 2);
  EXPECT_EQ(sheddable.timed_out, 0);
  EXPECT_LE(sheddable.max_wait, kSheddableWait);
  // The hot tenant gets what the others leave of standard's share (10 - 3 critical - 2),
  // not its 10x: the other two are served in full, promptly.
  EXPECT_LE(hot.served / duration, 5.1);
  EXPECT_GE(b.served, b.arrived - 2);
  EXPECT_GE(c.served, c.arrived - 2);
  EXPECT_LE(std::max(b.max_wait, c.max_wait), 3.0);
  EXPECT_GT(hot.timed_out, 0);
}

}  // namespace
}  // namespace gpuscale::route
