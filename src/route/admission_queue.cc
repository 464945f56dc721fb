#include "route/admission_queue.h"

#include <algorithm>
#include <array>
#include <limits>

namespace gpuscale::route {
namespace {

constexpr std::array<std::string_view, kPriorityCount> kPriorityNames = {"critical", "standard",
                                                                         "sheddable"};

}  // namespace

std::string_view PriorityName(Priority priority) {
  return kPriorityNames[static_cast<size_t>(priority)];
}

std::optional<Priority> ParsePriority(std::string_view name) {
  for (size_t i = 0; i < kPriorityNames.size(); ++i) {
    if (kPriorityNames[i] == name) return static_cast<Priority>(i);
  }
  return std::nullopt;
}

AdmissionQueue::AdmissionQueue(size_t capacity, double rate_window_seconds)
    : capacity_(capacity), rate_window_(rate_window_seconds) {}

Admission AdmissionQueue::Enter(const AdmissionRequest& request, double now) {
  if (entries_.size() >= capacity_) return {AdmissionVerdict::kFull, 0};
  const int p = static_cast<int>(request.priority);
  Level& level = levels_[p];
  auto tenant = level.finish.find(request.tenant);
  const double start =
      std::max(level.virtual_time, tenant == level.finish.end() ? 0.0 : tenant->second);
  Admission admission;
  if (const std::optional<double> rate = ServiceRate(now); rate && *rate > 0) {
    admission.expected_wait_seconds = TokensAhead(p, start) / *rate;
  }
  if (request.max_wait_seconds && admission.expected_wait_seconds > *request.max_wait_seconds) {
    admission.verdict = AdmissionVerdict::kShed;
    return admission;
  }
  const double finish = start + std::max(request.tokens, 1e-9);
  if (tenant == level.finish.end()) {
    level.finish.emplace(request.tenant, finish);
  } else {
    tenant->second = finish;
  }
  const Key key{p, start, next_seq_++};
  entries_.emplace(request.id, Waiting{request, key, finish});
  order_.emplace(key, Queued{request.id, request.tokens});
  ++per_priority_[p];
  CountTokens(p, request.tokens);
  return admission;
}

double AdmissionQueue::TokensAhead(int priority, double start) const {
  double ahead = 0;
  for (int q = 0; q < priority; ++q) ahead += tokens_[q];
  // Keys order by priority first: the level is [front, back) as they start, and what is
  // ahead of `start` is [front, boundary).
  constexpr double kLowest = -std::numeric_limits<double>::infinity();
  auto front = order_.lower_bound(Key{priority, kLowest, 0});
  auto back = order_.lower_bound(Key{priority + 1, kLowest, 0});
  const auto boundary = order_.lower_bound(Key{priority, start, UINT64_MAX});
  double from_front = 0, from_back = 0;
  while (true) {
    if (front == boundary) return ahead + from_front;
    if (back == boundary) return ahead + std::max(tokens_[priority] - from_back, 0.0);
    from_front += front->second.tokens;
    ++front;
    --back;
    from_back += back->second.tokens;
  }
}

void AdmissionQueue::CountTokens(int priority, double tokens) {
  tokens_[priority] = per_priority_[priority] == 0 ? 0 : tokens_[priority] + tokens;
}

const AdmissionRequest* AdmissionQueue::Peek() const {
  if (order_.empty()) return nullptr;
  return &entries_.at(order_.begin()->second.id).request;
}

std::optional<AdmissionRequest> AdmissionQueue::Pop() {
  if (order_.empty()) return std::nullopt;
  const auto [key, queued] = *order_.begin();
  order_.erase(order_.begin());
  auto it = entries_.find(queued.id);
  AdmissionRequest request = std::move(it->second.request);
  entries_.erase(it);
  --per_priority_[key.priority];
  CountTokens(key.priority, -request.tokens);
  Level& level = levels_[key.priority];
  level.virtual_time = key.start;
  PruneTenants(level);
  return request;
}

bool AdmissionQueue::Remove(uint64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  Forget(it->second);
  order_.erase(it->second.key);
  --per_priority_[it->second.key.priority];
  CountTokens(it->second.key.priority, -it->second.request.tokens);
  entries_.erase(it);
  return true;
}

void AdmissionQueue::Forget(const Waiting& w) {
  // A tenant's last request leaving takes its tag back, so that a cancelled request costs
  // the tenant nothing; one from the middle keeps the later ones' tags (they stay in order).
  Level& level = levels_[w.key.priority];
  auto tenant = level.finish.find(w.request.tenant);
  if (tenant != level.finish.end() && tenant->second == w.finish) tenant->second = w.key.start;
}

void AdmissionQueue::PruneTenants(Level& level) {
  if (level.finish.size() <= 2 * entries_.size() + 64) return;
  std::erase_if(level.finish,
                [&](const auto& entry) { return entry.second <= level.virtual_time; });
}

void AdmissionQueue::RecordCompletion(double tokens, double now) {
  ExpireCompletions(now);
  if (completions_.empty()) first_completion_ = now;
  completions_.push_back({now, tokens});
  completed_tokens_ += tokens;
}

void AdmissionQueue::ExpireCompletions(double now) {
  while (!completions_.empty() && completions_.front().time <= now - rate_window_) {
    completed_tokens_ -= completions_.front().tokens;
    completions_.pop_front();
  }
}

std::optional<double> AdmissionQueue::ServiceRate(double now) {
  ExpireCompletions(now);
  if (completions_.empty()) return std::nullopt;
  // Until a whole window has passed since the first completion of this busy period, over the
  // time since then (at least a second, so that one early completion does not read as a
  // huge rate).
  const double span = std::clamp(now - first_completion_, 1.0, rate_window_);
  return std::max(completed_tokens_, 0.0) / span;
}

size_t AdmissionQueue::Size(Priority priority) const {
  return per_priority_[static_cast<size_t>(priority)];
}

}  // namespace gpuscale::route
