// Role profiles: the capacity of the replica of one pool of a prefill/decode disaggregated
// service (issue 24; scale/disagg_policy.h), which the `disagg` policy's `profile:` key reads
// as the aggregated profile is read by the `slo` policy's. What differs from an aggregated
// profile (profile/capacity_profile.h):
//  - each mix's capacity counts the role's own tokens: prefill, prompt tokens/s within the
//    TTFT target (the requests are 1-token completions: a prefill replica makes the first
//    token only); decode, generated tokens/s within the TPOT target;
//  - there is no fit: the disagg policy reads each mix's capacity (scale::MixCapacity), and a
//    linear work model would mean nothing for one role's work alone.
// Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "profile/capacity_profile.h"

namespace gpuscale::profile {

// The tokens one request brings a replica of `role`: prefill, its prompt; decode, its output;
// aggregated, prompt + output. Requests/s x this = the role's tokens/s.
double RoleTokensPerRequest(ProfileRole role, const Mix& mix);

// The mix of a capacity given in the role's tokens/s (sim/role_capacity.h's figures), with its
// capacity_rps derived from it. REQUIRES: role is not kAggregated.
MixProfile RoleMix(ProfileRole role, const Mix& mix, double capacity_tokens_per_second);

// For mixes measured in requests/s (an endpoint's steps): every mix's
// capacity_tokens_per_second = capacity_rps x RoleTokensPerRequest. REQUIRES: a role profile.
void ApplyRoleCapacities(CapacityProfile& profile);

// Whether mixes suit a role's measurement: a prefill mix has 1 output token (a prefill
// replica makes the first token only). Errors: kInvalidArgument naming `field` and the mix.
Status CheckRoleMixes(ProfileRole role, const std::vector<Mix>& mixes, std::string_view field);

// The mixes `gpuscale profile --role prefill --url` measures unless told otherwise (--mix):
// prompts from short to long, one output token each.
const std::vector<Mix>& DefaultPrefillMixes();

}  // namespace gpuscale::profile
