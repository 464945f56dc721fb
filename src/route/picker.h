// route::Picker: which ready replica receives a request. The live gateway (gateway/) and the
// simulator's engine (sim/engine.cc) both ask it, so a simulated run routes as the daemon
// does. Pure: candidates, the time and the request's prefix key are parameters.
//
// Policies:
//   - least outstanding (default): the replica with the fewest requests in flight, ties to the
//     earliest candidate (callers list replicas oldest first);
//   - slow start (slow_start_seconds > 0): a replica that became ready `age` seconds ago
//     counts (outstanding + 1) / weight, the weight growing linearly from a tenth to one over
//     the window (Envoy's slow-start shape), so a fresh replica is not flooded with every
//     arrival until it holds as many requests as its warm peers;
//   - capacity weights (any least-outstanding mode): a candidate with capacity_weight w
//     counts (outstanding + 1) / w - 1 (without slow start; (outstanding + 1) / (w x ramp)
//     with it), so that a replica twice as
//     fast holds about twice the requests in flight and so takes about twice the arrivals
//     (a mixed fleet of GPU types, issue 47; Envoy's weighted least request with active
//     request bias 1). All weights 1 route exactly as without them;
//   - long prompts (any mode): when the request's prompt is longer than some candidates'
//     max_prompt_tokens and at least one candidate takes it, only those that take it compete
//     (a slower GPU type's prefill of a long prompt alone would use up the TTFT target);
//     when none takes it, all compete as before;
//   - round robin;
//   - prefix affinity (option on top of least outstanding): requests whose prompts start
//     alike (same prefix key) go to the same replica, so its prefix cache hits, as long as
//     that replica holds at most `affinity_load_factor` times the mean load (consistent
//     hashing with bounded loads, Mirrokni et al. 2018, over rendezvous hashing so that a
//     replica joining or leaving moves only its own share of keys); past the bound the next
//     replica in the key's rendezvous order takes it;
//   - prefix cache: among the replicas within the same load bound as prefix affinity, the one
//     whose first token the request would see soonest, estimated in prefill tokens (NVIDIA
//     Dynamo's KV router and llm-d's precise prefix-cache scorer weigh the same two terms):
//         cost = (prompt_tokens - cached_tokens) + pending_prefill_tokens
//     the prompt tokens the replica would still compute (its cached prefix skipped), plus the
//     prompt tokens already queued there ahead of it. Ties go to fewer outstanding, then to the
//     earliest candidate. The bound (outstanding + 1 <= factor x mean + 1) is the guard that a
//     hot prefix cannot pile onto one replica: the cost alone would send every request of a
//     shared system prompt to its one holder until that replica's queue outweighs the prompt.
//     The caller fills cached_tokens from a prefix index (route/prefix_index.h, or the
//     replicas' own caches) and pending_prefill_tokens from what it knows of each queue.
//
// Thread-safety: a Picker holds only the round-robin cursor; callers serialize Pick.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "route/picker_spec.h"

namespace gpuscale::route {

// One replica that may receive the request.
struct Candidate {
  int outstanding = 0;
  double ready_since = 0;  // seconds (the caller's clock); -inf: warm before time 0
  uint64_t identity = 0;   // stable hash of the replica's id (prefix affinity)
  // prefix_cache only: prompt tokens of this request the replica holds in its prefix cache,
  // and prompt tokens queued there and not yet prefilled.
  int64_t cached_tokens = 0;
  int64_t pending_prefill_tokens = 0;
  // Relative capacity (a replica of a faster variant > 1); > 0. 1 for every candidate of a
  // single-shape fleet.
  double capacity_weight = 1;
  // The longest prompt (tokens) this replica prefills within its share of the TTFT target;
  // 0: any. A mixed fleet sets it on its slower types (sim::LongPromptLimit), so that a long
  // prompt goes to a replica that prefills it in time while one can take it.
  int64_t max_prompt_tokens = 0;
};

// Envoy's default minimum weight during slow start: a fresh replica takes a tenth of a warm
// one's share from its first second.
inline constexpr double kSlowStartMinWeight = 0.1;

// What least-outstanding routing minimizes for one replica (see the header comment). Without
// slow start and with capacity_weight 1, the plain outstanding count.
double RouterLoad(int outstanding, double ready_since, double now, double slow_start_s,
                  double capacity_weight = 1);

// 64-bit FNV-1a of `text`: replica identities and prefix keys.
uint64_t HashText(std::string_view text);

// A well-mixed 64-bit combination of two values (splitmix64's finalizer over a boost-style
// combine): rendezvous scores of (key, replica), and prefix blocks' chain keys of (parent,
// block) in sim/prefix_cache.h.
uint64_t MixHash(uint64_t a, uint64_t b);

class Picker {
 public:
  explicit Picker(PickerSpec spec = {}) : spec_(spec) {}

  // Index into `candidates` of the chosen replica; nullopt when there is none.
  // `prefix_key` is used only with prefix_affinity, `prompt_tokens` (the request's) with
  // prefix_cache and against the candidates' max_prompt_tokens.
  std::optional<size_t> Pick(std::span<const Candidate> candidates, double now,
                             std::optional<uint64_t> prefix_key = std::nullopt,
                             int64_t prompt_tokens = 0);

  const PickerSpec& spec() const { return spec_; }

 private:
  // Pick among candidates that all take the prompt.
  std::optional<size_t> PickFrom(std::span<const Candidate> candidates, double now,
                                 std::optional<uint64_t> prefix_key, int64_t prompt_tokens);
  size_t LeastLoaded(std::span<const Candidate> candidates, double now) const;
  std::optional<size_t> ByAffinity(std::span<const Candidate> candidates, uint64_t key) const;
  std::optional<size_t> ByPrefixCache(std::span<const Candidate> candidates,
                                      int64_t prompt_tokens) const;
  double LoadBound(std::span<const Candidate> candidates) const;

  PickerSpec spec_;
  uint64_t rr_cursor_ = 0;
};

}  // namespace gpuscale::route
