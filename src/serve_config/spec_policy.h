// A service's policy as its spec alone defines it: the `policy:` block (config/policy_config.h
// envelope) with the service's min/max replicas merged in. What `gpuscale render` builds a
// KEDA trigger from; the daemon adds the rules stored for a service without a policy block
// (daemon/service_policy.h).
//
// Pure: no I/O. Thread-safety: a free function on values.
#pragma once

#include <memory>

#include "core/result.h"
#include "scale/policy.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {

// The policy of `service`'s policy_yaml, bounded by the service's min/max replicas; with no
// policy block, a `rules` policy without rules (within the same bounds).
// Errors: kInvalidArgument from config::ParsePolicy, the field path prefixed with "policy.".
Result<std::unique_ptr<scale::Policy>> SpecPolicy(const ServiceConfig& service);

}  // namespace gpuscale::daemon
