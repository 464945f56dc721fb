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
  CountWaiting(id, +1);
  return true;
}

void SimDoor::ExpireWaits(double now) {
  while (!deadlines_.empty() && deadlines_.top().first <= now) {
    const uint32_t id = deadlines_.top().second;
    deadlines_.pop();
    // Served already: Remove finds nothing.
    if (queue_.Remove(id)) {
      CountWaiting(id, -1);
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

void SimDoor::Pop() {
  if (const std::optional<route::AdmissionRequest> head = queue_.Pop()) {
    CountWaiting(static_cast<uint32_t>(head->id), -1);
  }
}

void SimDoor::CountWaiting(uint32_t id, int delta) {
  const RequestRecord& r = requests_[id];
  auto it = waiting_.try_emplace({r.priority, r.tenant}, 0).first;
  if ((it->second += delta) == 0) waiting_.erase(it);
}

bool SimDoor::OthersWaiting(uint32_t id) const {
  const RequestRecord& r = requests_[id];
  const auto own = waiting_.find({r.priority, r.tenant});
  const size_t mine = own == waiting_.end() ? 0 : static_cast<size_t>(own->second);
  return queue_.Size(r.priority) > mine;
}

void SimDoor::RecordCompletions(int64_t prompt_tokens, int64_t count, double now) {
  if (count <= 0) return;
  queue_.RecordCompletion(
      static_cast<double>(prompt_tokens) + static_cast<double>(count) * route::kAssumedOutputTokens,
      now);
}

}  // namespace gpuscale::sim
