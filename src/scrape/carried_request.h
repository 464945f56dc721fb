// The bookkeeping that lets a tick's request outlast its tick, shared by replica scrapes
// (replica_scrapes.h) and PromQL queries (prom_queries.h): an entry per request key, the tick
// that started its request, the answer that ended after the tick's cutoff until a later tick
// takes it, and forgetting keys no tick asks for any more.
//
// Thread-safety: plain values and free functions; the caller's lock, if any, covers them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace gpuscale::metrics {

template <typename R>
struct CarriedRequest {
  bool wanted = true;       // asked for by the current tick
  bool in_flight = false;   // started and not ended
  uint64_t tick = 0;        // the tick that started it
  std::optional<R> landed;  // ended, not handed over yet
};

// Records that `key`'s request ended with `result`: an answer for a later tick to hand over,
// or, for a key no tick wants any more, the end of its entry. `tick` is the current tick
// and `waiting` its count of requests started in it that have not ended.
// REQUIRES: Entry derives from CarriedRequest<R>.
template <typename Entry, typename R>
void LandCarried(std::unordered_map<std::string, Entry>& entries, const std::string& key, R result,
                 uint64_t tick, size_t& waiting) {
  auto it = entries.find(key);
  if (it == entries.end()) return;  // not reachable: entries in flight are kept
  Entry& entry = it->second;
  entry.in_flight = false;
  if (entry.tick == tick) --waiting;
  if (!entry.wanted) {
    entries.erase(it);
    return;
  }
  entry.landed = std::move(result);
}

// Drops the entries no tick wants that have no request in flight (one in flight goes when it
// ends: LandCarried).
template <typename Entry>
void ForgetUnwanted(std::unordered_map<std::string, Entry>& entries) {
  std::erase_if(entries, [](const auto& e) { return !e.second.wanted && !e.second.in_flight; });
}

}  // namespace gpuscale::metrics
