#include "sim/door.h"

#include <limits>

namespace gpuscale::sim {

SimDoor::SimDoor(const route::AdmissionConfig& config, std::vector<RequestRecord>& requests)
    // No queue_size: a request waits until served (the report counts the unfinished).
    : config_(config), requests_(requests), queue_(std::numeric_limits<size_t>::max()) {}

double SimDoor::ExpectedTokens(uint32_t id) const {
  return requests_[id].input_tokens + route::kAssumedOutputTokens;
}

bool SimDoor::Enter(uint32_t id, double now) {
  ExpireWaits(now);
  RequestRecord& r = requests_[id];
  const bool sheddable = r.priority == route::Priority::kSheddable;
  const double budget = config_.sheddable_max_wait.count();
  const route::Admission admission =
      queue_.Enter({.id = id,
                    .priority = r.priority,
                    .tenant = std::to_string(r.tenant),
                    .tokens = ExpectedTokens(id),
                    .max_wait_seconds = sheddable ? std::optional(budget) : std::nullopt},
                   now);
  if (admission.verdict != route::AdmissionVerdict::kQueued) {
    r.shed = true;
    ++shed_;
    return false;
  }
  if (sheddable) deadlines_.emplace(now + budget, id);
  return true;
}

void SimDoor::ExpireWaits(double now) {
  while (!deadlines_.empty() && deadlines_.top().first <= now) {
    const uint32_t id = deadlines_.top().second;
    deadlines_.pop();
    // Served already: Remove finds nothing.
    if (queue_.Remove(id)) {
      requests_[id].shed = true;
      ++shed_;
    }
  }
}

std::optional<uint32_t> SimDoor::Peek() const {
  const route::AdmissionRequest* head = queue_.Peek();
  if (head == nullptr) return std::nullopt;
  return static_cast<uint32_t>(head->id);
}

void SimDoor::Pop() { queue_.Pop(); }

void SimDoor::RecordCompletions(int64_t prompt_tokens, int64_t count, double now) {
  if (count <= 0) return;
  queue_.RecordCompletion(
      static_cast<double>(prompt_tokens) + static_cast<double>(count) * route::kAssumedOutputTokens,
      now);
}

}  // namespace gpuscale::sim
