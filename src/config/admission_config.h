// The `admission:` block of a config file -> route::AdmissionConfig (route/admission_config.h):
// the one reader that the daemon config (`gateway.admission`) and the simulation config
// (`admission`) share, as config/router_config.h is for `router:`.
//
//   admission: {max_in_flight_per_replica: 8, critical_reserved_per_replica: 1,
//               default_priority: standard,
//               model_priority: {llama-70b: critical}, sheddable_max_wait_seconds: 2,
//               priority_header: x-gpuscale-priority, tenant_header: x-tenant,  # gateway
//               tenant_tokens_per_minute: 0}                                      # gateway
#pragma once

#include <yaml-cpp/yaml.h>

#include <string_view>

#include "core/result.h"
#include "route/admission_config.h"

namespace gpuscale::config {

// Which door reads the block: the simulator has no headers (a trace row names its priority
// and tenant) and no token limits, so those keys are errors there rather than ignored.
enum class AdmissionDoor { kGateway, kSimulator };

// Parses `node` (absent: `config` unchanged) over the values already in `config`. Errors:
// invalid_argument with field "<path>.<key>" and the line: an unknown key (the header and
// token-limit keys too, for kSimulator), a negative max_in_flight_per_replica, a
// critical_reserved_per_replica that is negative, set without max_in_flight_per_replica or
// not below it, a header name
// with spaces or colons, a priority not critical, standard or sheddable, a wait <= 0, a
// negative or non-finite token limit.
Status ParseAdmissionConfig(const YAML::Node& node, std::string_view path, AdmissionDoor door,
                            route::AdmissionConfig& config);

}  // namespace gpuscale::config
