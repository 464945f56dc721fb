#include "route/prefix_index.h"

#include <algorithm>

namespace gpuscale::route {

PrefixIndex::PrefixIndex(int64_t capacity_blocks, double ttl_seconds)
    : capacity_(std::max<int64_t>(capacity_blocks, 1)), ttl_(ttl_seconds) {}

int64_t PrefixIndex::MatchWithin(uint64_t replica, std::span<const uint64_t> keys, double now,
                                 double max_age_seconds) const {
  auto r = replicas_.find(replica);
  if (r == replicas_.end()) return 0;
  const double max_age = std::min(max_age_seconds, ttl_);
  int64_t n = 0;
  for (uint64_t key : keys) {
    auto it = r->second.where.find(key);
    if (it == r->second.where.end() || now - it->second->second > max_age) break;
    ++n;
  }
  return n;
}

void PrefixIndex::Record(uint64_t replica, std::span<const uint64_t> keys, double now) {
  if (keys.empty()) return;
  Replica& r = replicas_[replica];
  // Last key first, so that the prompt's head ends up most recent: evicting from the back
  // then drops a prefix's tail before its head, as the engines' caches do.
  for (auto key = keys.rbegin(); key != keys.rend(); ++key) {
    auto it = r.where.find(*key);
    if (it != r.where.end()) r.lru.erase(it->second);
    r.lru.emplace_front(*key, now);
    r.where[*key] = r.lru.begin();
  }
  while (static_cast<int64_t>(r.lru.size()) > capacity_) {
    r.where.erase(r.lru.back().first);
    r.lru.pop_back();
  }
}

void PrefixIndex::Erase(uint64_t replica, std::span<const uint64_t> keys) {
  auto r = replicas_.find(replica);
  if (r == replicas_.end()) return;
  for (uint64_t key : keys) {
    auto it = r->second.where.find(key);
    if (it == r->second.where.end()) continue;
    r->second.lru.erase(it->second);
    r->second.where.erase(it);
  }
}

int64_t PrefixIndex::BlocksOf(uint64_t replica) const {
  auto r = replicas_.find(replica);
  return r == replicas_.end() ? 0 : static_cast<int64_t>(r->second.lru.size());
}

}  // namespace gpuscale::route
