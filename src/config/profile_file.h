// Capacity profile files (`gpuscale profile --out FILE`; read by the slo policy's `profile:`
// key) <-> profile::CapacityProfile. YAML, `version: 1`; docs/profiles.md has the schema
// field by field. Abridged:
//
//   version: 1
//   model: "llama-3-8b"
//   source: "simulator"                      # or the endpoint URL
//   role: prefill                            # a pool's replica (no fit then); absent: aggregated
//   slo: {ttft_seconds: 1, tpot_seconds: 0.05, target_ratio: 0.99}
//   replica_model: {gpu: "h100", tensor_parallel: 1, max_batch_size: 256,
//                   max_batched_tokens: 8192, kv_cache_tokens: 0}   # simulator only
//   measurement: {method: "bisection", point_seconds: 300, warmup_seconds: 60, seed: 1}
//   fit: {output_token_weight: 4.1, capacity_tokens_per_second: 36000, max_error_ratio: 0.04}
//   mixes:
//     - prompt_tokens: 256
//       output_tokens: 64
//       capacity_rps: 40.2
//       capacity_tokens_per_second: 35100
//       curve:
//         - {rate_rps: 10.05, requests: 3020, attainment: 1, ttft_p50_seconds: 0.03,
//            ttft_p99_seconds: 0.06, tpot_p50_seconds: 0.011, tpot_p99_seconds: 0.012}
//
// YAML rather than JSON: every other file gpuscale reads is YAML, the written file carries
// comments saying what the numbers mean, and a JSON profile (yaml-cpp reads JSON too) loads
// just the same. Numbers are written in the shortest form that reads back to the same
// double, so writing and reading give back an equal profile.
//
// Errors name the field and line: `mixes[2].capacity_rps: expected a positive number, got 0
// (line 14)`. Thread-safety: free functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "core/result.h"
#include "profile/capacity_profile.h"

namespace gpuscale::config {

// The file's text; ParseProfileText(ProfileToYaml(p)) == p.
std::string ProfileToYaml(const profile::CapacityProfile& profile);

// Errors: kInvalidArgument naming the field and line: a missing required field (version,
// model, source, slo, mixes and each mix's lengths and capacities; fit unless the profile
// has a role), an unknown field, a version other than profile::kProfileVersion, a value out
// of range, a role other than prefill or decode, a fit beside a role, a prefill profile's
// mix with output_tokens other than 1.
Result<profile::CapacityProfile> ParseProfile(const YAML::Node& root);
// `source` names the text in YAML syntax errors (a path, "<stdin>").
Result<profile::CapacityProfile> ParseProfileText(std::string_view text, std::string_view source);
// Errors: kNotFound when the file cannot be opened, then ParseProfile's.
Result<profile::CapacityProfile> LoadProfileFile(const std::string& path);

}  // namespace gpuscale::config
