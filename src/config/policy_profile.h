// The `profile:` key of a policy's `slo:` block, as config files use it: the capacity
// profile (config/profile_file.h) that gives the slo policy its token-mode weight and
// initial capacity instead of figures typed in by hand; and the same key of a `disagg:`
// block, whose role profile (profile/role_profile.h) gives a pool's capacities.
//
//  - Paths. A relative path names a file beside the config that holds it. The loaders that
//    read a file (LoadSimConfigFile, LoadPolicyFile, the daemon's LoadDaemonConfig) rewrite it
//    to an absolute path once, in the YAML tree, before anything parses the policy: the
//    policy text is parsed again later (MakeSimPolicy for every simulation, the daemon from
//    the spec it stores), by when the file it came from is no longer known. Policies given
//    as text (a REST body, ParseSimConfig on a tree) resolve against the working directory.
//  - The SLO. A capacity holds at one SLO only, so the service's TTFT and TPOT targets (the
//    sim config's or the daemon service's `slo:` block) must be those the profile was
//    measured at (CheckProfileSlo); the policy's target_attainment must be the profile's
//    target_ratio, or is taken from it when not set (ParseSloPolicy).
//
// Thread-safety: free functions; the profile file is read on every call.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "profile/capacity_profile.h"

namespace gpuscale::config {

// The profile `block["profile"]` names (block: a policy's slo block, `path` its field path).
// Errors: kInvalidArgument naming `<path>.profile` and the key's line: not a string, or a
// file that cannot be read or parsed (`capacity profile 'p.yaml' (named in line 7):
// mixes[2].capacity_rps: expected a positive number, got 0 (line 14)`).
Result<profile::CapacityProfile> LoadNamedProfile(const YAML::Node& block, const std::string& path);

// In a policy envelope ({family, slo|disagg: {profile: PATH, ...}}), a relative PATH becomes
// base_dir / PATH, made absolute. Anything else (no such key, not a string, an absolute
// path) is left as it is, for the parser to accept or report.
void ResolveProfilePath(const YAML::Node& envelope, const std::string& base_dir);

// `target_attainment` for a policy block that names profile `p`: the profile's target ratio.
// A given block[target_attainment] must equal it (a capacity holds at one target). Errors:
// kInvalidArgument naming `<path>.target_attainment` and the profile's line when it differs.
Status ReadProfileTarget(const YAML::Node& block, const std::string& path,
                         const profile::CapacityProfile& p, double& target_attainment);

// The service's SLO against the profile a policy envelope names, if any. `policy_path`
// prefixes the policy's fields ("policy", "services[0].policy"); `slo_node`/`slo_path` are
// the service's slo block (possibly undefined: the defaults) for the message. Envelopes of
// family slo (an aggregated profile: TTFT and TPOT compared) and disagg (a role profile: a
// prefill profile's TTFT, a decode profile's TPOT, the targets their capacities answer to)
// are checked. `target_ratio` is compared too when given (the simulator's slo has one; the
// daemon's does not).
// Errors: LoadNamedProfile's; kInvalidArgument naming `<policy_path>.<family>.profile` and
// both SLOs when they differ.
Status CheckProfileSlo(const YAML::Node& envelope, const std::string& policy_path,
                       double ttft_seconds, double tpot_seconds, std::optional<double> target_ratio,
                       const YAML::Node& slo_node, std::string_view slo_path);

}  // namespace gpuscale::config
