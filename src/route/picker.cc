#include "route/picker.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpuscale::route {

double RouterLoad(int outstanding, double ready_since, double now, double slow_start_s,
                  double capacity_weight) {
  // + 1: the request being placed, so that idle replicas of different weights still differ.
  // Without slow start, - 1 keeps weight 1 the plain count (the same order for every weight).
  if (!(slow_start_s > 0)) return (outstanding + 1) / capacity_weight - 1;
  const double ramp = std::clamp((now - ready_since) / slow_start_s, kSlowStartMinWeight, 1.0);
  return (outstanding + 1) / (ramp * capacity_weight);
}

uint64_t HashText(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t MixHash(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {

// Rendezvous score of (key, replica).
uint64_t Score(uint64_t key, uint64_t identity) { return MixHash(key, identity); }

}  // namespace

size_t Picker::LeastLoaded(std::span<const Candidate> candidates, double now) const {
  size_t best = 0;
  auto load_of = [&](const Candidate& c) {
    return RouterLoad(c.outstanding, c.ready_since, now, spec_.slow_start_seconds,
                      c.capacity_weight);
  };
  double best_load = load_of(candidates[0]);
  for (size_t i = 1; i < candidates.size(); ++i) {
    const double load = load_of(candidates[i]);
    if (load < best_load) {
      best = i;
      best_load = load;
    }
  }
  return best;
}

// The highest-scoring replica for `key` whose load is within the bound; nullopt when every
// replica is over it (cannot happen: the least loaded is always under the mean bound).
// The most requests a replica may hold after taking this one (Mirrokni et al.'s bound).
double Picker::LoadBound(std::span<const Candidate> candidates) const {
  double total = 1;  // counting the request being placed
  for (const Candidate& c : candidates) total += c.outstanding;
  return std::ceil(spec_.affinity_load_factor * total / static_cast<double>(candidates.size()));
}

std::optional<size_t> Picker::ByAffinity(std::span<const Candidate> candidates,
                                         uint64_t key) const {
  const double bound = LoadBound(candidates);
  std::optional<size_t> best;
  uint64_t best_score = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].outstanding + 1 > bound) continue;
    const uint64_t s = Score(key, candidates[i].identity);
    if (!best || s > best_score) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

// The cheapest replica within the load bound (header comment); nullopt when none is, which
// cannot happen: the least loaded is always under it.
std::optional<size_t> Picker::ByPrefixCache(std::span<const Candidate> candidates,
                                            int64_t prompt_tokens) const {
  const double bound = LoadBound(candidates);
  std::optional<size_t> best;
  int64_t best_cost = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (c.outstanding + 1 > bound) continue;
    const int64_t uncached = std::max<int64_t>(prompt_tokens - c.cached_tokens, 0);
    const int64_t cost = uncached + std::max<int64_t>(c.pending_prefill_tokens, 0);
    if (!best || cost < best_cost ||
        (cost == best_cost && c.outstanding < candidates[*best].outstanding)) {
      best = i;
      best_cost = cost;
    }
  }
  return best;
}

std::optional<size_t> Picker::Pick(std::span<const Candidate> candidates, double now,
                                   std::optional<uint64_t> prefix_key, int64_t prompt_tokens) {
  auto takes = [prompt_tokens](const Candidate& c) {
    return c.max_prompt_tokens <= 0 || prompt_tokens <= c.max_prompt_tokens;
  };
  const auto fit = std::count_if(candidates.begin(), candidates.end(), takes);
  if (fit == 0 || fit == static_cast<std::ptrdiff_t>(candidates.size())) {
    return PickFrom(candidates, now, prefix_key, prompt_tokens);
  }
  std::vector<Candidate> subset;
  std::vector<size_t> index;  // subset position -> candidates position
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!takes(candidates[i])) continue;
    subset.push_back(candidates[i]);
    index.push_back(i);
  }
  const auto chosen = PickFrom(subset, now, prefix_key, prompt_tokens);
  return chosen ? std::optional<size_t>(index[*chosen]) : std::nullopt;
}

std::optional<size_t> Picker::PickFrom(std::span<const Candidate> candidates, double now,
                                       std::optional<uint64_t> prefix_key, int64_t prompt_tokens) {
  if (candidates.empty()) return std::nullopt;
  if (spec_.kind == PickerKind::kRoundRobin) return rr_cursor_++ % candidates.size();
  if (spec_.kind == PickerKind::kPrefixCache) {
    if (auto chosen = ByPrefixCache(candidates, prompt_tokens)) return chosen;
  }
  if (spec_.prefix_affinity && prefix_key) {
    if (auto chosen = ByAffinity(candidates, *prefix_key)) return chosen;
  }
  return LeastLoaded(candidates, now);
}

}  // namespace gpuscale::route
