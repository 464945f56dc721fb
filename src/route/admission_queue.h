// route::AdmissionQueue: the order in which requests waiting at a saturated service's door
// get a replica (issue 46, "Priority and fair share at the door"). The gateway keeps one per
// service and pool (gateway_state.h); the simulator can drive the same queue. Pure: the time
// is a parameter, nothing here reads a clock or does I/O.
//
// Order:
//   - strict priority: a critical request always goes before a standard one, a standard one
//     before a sheddable one (the Gateway API Inference Extension's criticality levels);
//   - within a priority, fair share across tenants by start-time fair queueing (SFQ, Goyal,
//     Vin and Cheng, SIGCOMM 1996) weighted by each request's expected tokens: a request of
//     tenant t arriving at virtual time V gets the start tag S = max(V, F_t) and moves t's
//     finish tag to F_t = S + tokens; the queue serves the smallest start tag (ties: arrival
//     order) and V becomes that tag. A tenant sending 10x the others' traffic therefore gets
//     every other tenant's token share, not 10x it, while the others have requests waiting,
//     and the rest when they do not. SFQ rather than deficit round robin: it needs no quantum
//     to tune against request sizes that range from 10 to 100,000 tokens, serves a request
//     in O(log n), and an idle tenant banks no credit (max(V, F_t)), so one that returns
//     after an hour does not starve the others.
//
// Shedding: a request with a wait budget (the gateway gives sheddable requests one) whose
// expected wait exceeds it is refused at Enter. Expected wait = tokens queued ahead of it
// (every higher priority's, and its own priority's with a smaller start tag) / the service
// rate, in tokens per second, measured over the completions of the last `rate_window`
// seconds. Before any completion the rate is unknown and nothing is shed.
//
// Thread-safety: none; the caller serializes (the gateway holds its state's mutex).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscale::route {

enum class Priority : uint8_t { kCritical = 0, kStandard = 1, kSheddable = 2 };
inline constexpr int kPriorityCount = 3;

// "critical", "standard", "sheddable".
std::string_view PriorityName(Priority priority);
// The priority named `name` (exactly as PriorityName spells it); nullopt otherwise.
std::optional<Priority> ParsePriority(std::string_view name);

struct AdmissionRequest {
  uint64_t id = 0;  // unique among the waiting requests (the caller's waiter id)
  Priority priority = Priority::kStandard;
  std::string tenant;
  double tokens = 1;  // expected tokens (prompt and output): the request's cost; > 0
  // Longest expected wait the request accepts before it is refused; nullopt = no limit.
  std::optional<double> max_wait_seconds;
};

enum class AdmissionVerdict {
  kQueued,  // waits; Pop will return it
  kShed,    // refused: its expected wait exceeds max_wait_seconds
  kFull,    // refused: the queue holds `capacity` requests
};

struct Admission {
  AdmissionVerdict verdict = AdmissionVerdict::kQueued;
  // The wait Enter expected (0 while the service rate is unknown).
  double expected_wait_seconds = 0;
};

class AdmissionQueue {
 public:
  // `capacity`: requests that may wait (all priorities); `rate_window_seconds`: how far back
  // completions count for the service rate (> 0).
  explicit AdmissionQueue(size_t capacity = 1000, double rate_window_seconds = 30);

  // Queues `request`, or refuses it (see Admission). REQUIRES: its id is not waiting.
  Admission Enter(const AdmissionRequest& request, double now);
  // The next request to serve, removed from the queue; nullopt when none waits.
  std::optional<AdmissionRequest> Pop();
  // The next request to serve, left waiting.
  const AdmissionRequest* Peek() const;
  // Removes a waiting request (its client left or timed out); false when it is not waiting.
  bool Remove(uint64_t id);

  // A request finished `tokens` of work at `now`: the service rate's sample.
  void RecordCompletion(double tokens, double now);
  // Tokens per second over the window; nullopt before the first completion in it.
  std::optional<double> ServiceRate(double now);

  size_t Size() const { return entries_.size(); }
  size_t Size(Priority priority) const;
  bool Empty() const { return entries_.empty(); }

 private:
  struct Key {
    int priority;
    double start;
    uint64_t seq;  // arrival order
    auto operator<=>(const Key&) const = default;
  };
  struct Waiting {
    AdmissionRequest request;
    Key key;
    double finish;
  };
  struct Level {
    double virtual_time = 0;
    std::map<std::string, double, std::less<>> finish;  // by tenant
  };
  struct Completion {
    double time;
    double tokens;
  };

  struct Queued {
    uint64_t id;
    double tokens;
  };

  // Tokens that would be served before a request of `priority` with start tag `start`:
  // O(1) for the higher priorities (their totals), and for its own priority a walk from both
  // ends of the level toward the tag that stops at the nearer end, O(min(ahead, behind)).
  // A saturated door queues thousands, and the gateway asks this under its state's lock.
  double TokensAhead(int priority, double start) const;
  // Adds `tokens` (negative: removes) to a level's total; an emptied level's total is 0.
  void CountTokens(int priority, double tokens);
  void Forget(const Waiting& w);
  void ExpireCompletions(double now);
  // Drops tenants whose finish tag the virtual time has passed: max(V, F) = V for them.
  void PruneTenants(Level& level);

  size_t capacity_;
  double rate_window_;
  uint64_t next_seq_ = 0;
  Level levels_[kPriorityCount];
  std::map<Key, Queued> order_;          // next to serve first
  std::map<uint64_t, Waiting> entries_;  // by request id
  size_t per_priority_[kPriorityCount] = {};
  double tokens_[kPriorityCount] = {};  // waiting tokens per priority
  std::deque<Completion> completions_;
  double completed_tokens_ = 0;  // over completions_
  double first_completion_ = 0;  // of the completions in the window without a gap
};

}  // namespace gpuscale::route
