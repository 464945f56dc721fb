// route::PickerSpec: how the router picks a replica (route/picker.h), and the one place
// that names its kinds and checks its values. The daemon's `gateway.router`, the
// simulator's `router` (both read by config/router_config.h) and the `gpuscale gateway`
// flags all build a PickerSpec and pass it through CheckPickerSpec, so a value one of them
// rejects is rejected by the others, in the same words.
//
// Pure: no I/O. Thread-safety: plain values and stateless functions.
#pragma once

#include <string_view>

#include "core/result.h"

namespace gpuscale::route {

enum class PickerKind { kLeastOutstanding, kRoundRobin, kPrefixCache };

// Where prefix_cache routing learns what each replica has cached (route/prefix_index.h):
// approximate: what this router itself sent where (with expiry and a capacity per replica);
// precise: the replicas' own caches (the simulator reads them; the gateway applies their KV
// events, route/prefix_cache_lookup.h).
enum class PrefixIndexMode { kApproximate, kPrecise };

struct PickerSpec {
  PickerKind kind = PickerKind::kLeastOutstanding;
  // Least outstanding only. 0: off; else seconds, finite.
  double slow_start_seconds = 0;
  // Least outstanding only.
  bool prefix_affinity = false;
  // A replica keeps its keys while its outstanding count is at most this factor times the
  // mean over candidates (plus one request). In (1, 100]; 1.25 is the paper's sweet spot.
  // With prefix_cache, the same bound keeps a hot prefix from piling onto one replica.
  double affinity_load_factor = 1.25;
  // prefix_cache only: which index supplies each candidate's cached prefix.
  PrefixIndexMode prefix_index = PrefixIndexMode::kApproximate;

  friend bool operator==(const PickerSpec&, const PickerSpec&) = default;
};

// The names of PickerSpec's fields as a config file spells them; CheckPickerSpec's errors
// carry one of them in Error::field, so that a caller can point at its own key or flag.
inline constexpr std::string_view kKindField = "kind";
inline constexpr std::string_view kSlowStartField = "slow_start_seconds";
inline constexpr std::string_view kPrefixAffinityField = "prefix_affinity";
inline constexpr std::string_view kAffinityLoadFactorField = "affinity_load_factor";
inline constexpr std::string_view kPrefixIndexField = "prefix_index";

// "least_outstanding, round_robin, prefix_cache": the accepted kind names, for messages and
// help text.
std::string_view PickerKindNames();
std::string_view PickerKindName(PickerKind kind);
// "approximate" / "precise"; the inverse errors with invalid_argument, field "prefix_index".
std::string_view PrefixIndexModeName(PrefixIndexMode mode);
Result<PrefixIndexMode> ParsePrefixIndexMode(std::string_view name);

// Errors: invalid_argument "expected one of least_outstanding, round_robin, prefix_cache, got
// '<name>'",
// field "kind".
Result<PickerKind> ParsePickerKind(std::string_view name);

// Errors (invalid_argument, field = the field at fault, checked in this order):
//   slow_start_seconds not finite or < 0; slow_start_seconds > 0 or prefix_affinity with
//   round_robin ("applies to least_outstanding only": round robin ignores both, and a
//   setting that does nothing is a mistake worth saying); affinity_load_factor outside
//   (1, 100] (at 1 or below every replica is over its bound); prefix_index precise with a
//   kind other than prefix_cache ("applies to prefix_cache only").
Status CheckPickerSpec(const PickerSpec& spec);

}  // namespace gpuscale::route
