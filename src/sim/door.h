// SimDoor: a simulated service's door when its config has an admission block
// (SimulationConfig::admission): the gateway's route::AdmissionQueue, fed and drained as
// gateway::GatewayState does live (docs/gateway.md, "Priority and fair share"): a request
// that no replica may take waits by priority, then its tenant's fair share; a sheddable one
// gets admission.sheddable_max_wait as its wait budget and is shed (429) when its expected
// wait breaks it at arrival, or when its wait reaches it; the service rate is each finished
// request's expected tokens (prompt + route::kAssumedOutputTokens, what the gateway
// estimates from a body) over the queue's window.
//
// The door has no queue_size: every request that is not shed waits until a replica takes it
// or the run ends (unfinished; the report counts them apart from shed ones).
//
// Ownership: borrows the request table, which must outlive it. Thread-safety: none; one
// simulation thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "route/admission_config.h"
#include "route/admission_queue.h"
#include "sim/sim_replica.h"

namespace gpuscale::sim {

class SimDoor {
 public:
  SimDoor(const route::AdmissionConfig& config, std::vector<RequestRecord>& requests);

  // The replica limit to pick a request of `priority` under (PickReady's max_in_flight;
  // 0 = none): route::SlotLimit, as the gateway's.
  int max_in_flight(route::Priority priority) const { return route::SlotLimit(config_, priority); }
  // Queues request `id`, arriving at `now`, or sheds it (its record's `shed`). Sheds the
  // waits that ran out by `now` first. Returns whether it waits.
  bool Enter(uint32_t id, double now);
  // Sheds the sheddable requests whose wait budget ran out by `now`.
  void ExpireWaits(double now);
  // The next request to serve (nullopt: none waits); Pop removes it.
  std::optional<uint32_t> Peek() const;
  void Pop();
  // Whether a request of another tenant than request `id`'s, of its priority, waits.
  bool OthersWaiting(uint32_t id) const;
  // A replica finished requests whose prompts held `prompt_tokens` tokens, `count` requests.
  void RecordCompletions(int64_t prompt_tokens, int64_t count, double now);

  size_t Waiting() const { return queue_.Size(); }
  int64_t shed() const { return shed_; }

 private:
  double ExpectedTokens(uint32_t id) const;
  // Counts request `id` in (+1) or out of (-1) waiting_.
  void CountWaiting(uint32_t id, int delta);

  route::AdmissionConfig config_;
  std::vector<RequestRecord>& requests_;
  route::AdmissionQueue queue_;
  // Waiting sheddable requests by the end of their wait budget, soonest first.
  using Deadline = std::pair<double, uint32_t>;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  int64_t shed_ = 0;
  // Waiting requests by (priority, tenant): OthersWaiting without a walk of the queue.
  std::map<std::pair<route::Priority, uint32_t>, int64_t> waiting_;
};

}  // namespace gpuscale::sim
