// A capacity profile: how much load one replica of a model sustains while a latency SLO
// holds, measured by `gpuscale profile` before deployment (the role of Dynamo's pre-deployment
// profiling) and read by the `slo` scaling policy instead of numbers taken from hindsight.
//
// The replica is offered Poisson arrivals of one request shape at a time (a mix: fixed prompt
// and output lengths) at rising rates. Per mix the profile keeps the highest rate at which
// the share of requests meeting both latency targets stayed at or above the target ratio
// (capacity_rps), and the measured curve (TTFT, TPOT and attainment against the rate).
// Across mixes it fits the policy's work model, work = prompt + w x output tokens: a replica
// sustains C work units per second whatever the mix, so 1 / capacity_rps = (prompt + w x
// output) / C (FitCapacity). docs/profiles.md documents the file and each number.
//
// A role profile measures one pool's replica of a prefill/decode disaggregated service
// instead (profile/role_profile.h): no fit, each mix's capacity in the role's own tokens.
//
// The file format (YAML, version 1) is read and written by config/profile_file.h; these are
// the plain values. Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sim/replica_model.h"
#include "sim/simulation.h"

namespace gpuscale::profile {

// The profile file format this build writes and reads (`version:` in the file).
inline constexpr int kProfileVersion = 1;

// Which replica a profile measures: a whole one (prefill and decode on the same replica), or
// the replica of one pool of a disaggregated service (`role:` in the file; absent: aggregated).
enum class ProfileRole { kAggregated, kPrefill, kDecode };
// "aggregated", "prefill" or "decode".
std::string_view ProfileRoleName(ProfileRole role);

// One request shape: every request of a measurement has exactly these lengths.
struct Mix {
  int32_t prompt_tokens = 0;  // >= 1
  int32_t output_tokens = 0;  // >= 1

  friend bool operator==(const Mix&, const Mix&) = default;
};

// The mixes `gpuscale profile` measures unless told otherwise (--mix): short and long prompts
// with short outputs (prefill-bound), a middle one, and a long output (decode-bound), so the
// fit sees both costs vary.
const std::vector<Mix>& DefaultMixes();

// One measured load level of one mix.
struct CurvePoint {
  double rate_rps = 0;    // offered Poisson arrival rate, requests/s
  int64_t requests = 0;   // requests scored at this rate
  double attainment = 0;  // share of them meeting both TTFT and TPOT targets (0..1)
  // Nearest-rank percentiles over the scored requests that completed; TPOT over those with
  // two output tokens or more. Seconds.
  double ttft_p50_seconds = 0;
  double ttft_p99_seconds = 0;
  double tpot_p50_seconds = 0;
  double tpot_p99_seconds = 0;

  friend bool operator==(const CurvePoint&, const CurvePoint&) = default;
};

struct MixProfile {
  Mix mix;
  // The highest offered rate whose attainment reached slo.target_ratio, requests/s (> 0).
  double capacity_rps = 0;
  // capacity_rps x (prompt + output_token_weight x output) with the profile's fitted weight:
  // this mix's capacity in the slo policy's work units (prompt-token equivalents/s). Equal
  // to the profile's capacity_tokens_per_second where the linear work model fits exactly.
  double capacity_tokens_per_second = 0;
  std::vector<CurvePoint> curve;  // by rising rate

  friend bool operator==(const MixProfile&, const MixProfile&) = default;
};

// How the points were measured, so that a profile can be reproduced and judged.
struct Measurement {
  // "bisection" (simulator), "steps" (endpoint) or "model" (a role profile computed from the
  // replica model by sim/role_capacity.h: point_seconds and warmup_seconds are 0)
  std::string method = "bisection";
  double point_seconds = 0;          // load per measured point (simulated or wall seconds)
  double warmup_seconds = 0;         // unscored load before each point (simulator)
  uint64_t seed = 1;                 // of the Poisson arrivals

  friend bool operator==(const Measurement&, const Measurement&) = default;
};

struct CapacityProfile {
  std::string model;   // the model served (the replica model's, or the endpoint's name)
  std::string source;  // "simulator", or the endpoint URL that was measured
  // A role profile (not kAggregated) has no fit (its fit fields stay 0) and counts each mix's
  // capacity_tokens_per_second in the role's tokens (profile/role_profile.h).
  ProfileRole role = ProfileRole::kAggregated;
  sim::SloSpec slo;    // the SLO every capacity holds at
  // The simulated replica (source "simulator"); absent for endpoints.
  std::optional<sim::ReplicaModelConfig> replica_model;
  Measurement measurement;
  std::vector<MixProfile> mixes;
  // The fit (FitCapacity): what the slo policy reads in token mode. A generated token costs
  // output_token_weight prompt tokens' worth (>= 0); one replica sustains
  // capacity_tokens_per_second prompt-token equivalents per second at the SLO (> 0).
  double output_token_weight = 0;
  double capacity_tokens_per_second = 0;
  // The largest |predicted / measured - 1| of capacity_rps over the mixes: how far the linear
  // work model is from this replica.
  double fit_max_error_ratio = 0;

  friend bool operator==(const CapacityProfile&, const CapacityProfile&) = default;
};

struct CapacityFit {
  double output_token_weight = 0;
  double capacity_tokens_per_second = 0;
  double max_error_ratio = 0;
  bool weight_clamped = false;  // the free fit gave w < 0; refitted with w = 0
};

// Least squares for 1 / capacity_rps = a x prompt + b x output over the mixes (a = 1 / C,
// b = w / C; no intercept), each mix's equation divided by its 1 / capacity_rps so that every
// mix weighs by its relative error (the absolute residuals of a 256-token mix would
// otherwise count for little beside a 4096-token one). w < 0 (output cheaper than nothing,
// which only noise can show) is clamped to 0 and a refitted.
// Errors: kInvalidArgument (field "mixes") with fewer than two mixes, mixes whose
// prompt:output ratios are all equal (w and C cannot be told apart: a single mix fits any
// w), a non-positive capacity_rps or length, or a fit whose prompt cost is not positive.
Result<CapacityFit> FitCapacity(const std::vector<MixProfile>& mixes);

// Runs FitCapacity and stores it: the profile's fit fields and every mix's
// capacity_tokens_per_second. Errors: FitCapacity's.
Status ApplyFit(CapacityProfile& profile);

// `profile` with every measured and fitted number rounded to `significant_digits`, so that
// a written profile reads as measurements (105.406 req/s, not 105.40625000000001) and still
// reads back to the same values. REQUIRES: 1 <= significant_digits <= 17.
CapacityProfile RoundedForOutput(const CapacityProfile& profile, int significant_digits = 6);

// Whether a set of mixes can be fitted: at least two distinct prompt:output ratios. Errors:
// kInvalidArgument naming `field` (a flag or file field) and saying why.
Status CheckFittable(const std::vector<Mix>& mixes, std::string_view field);

}  // namespace gpuscale::profile
