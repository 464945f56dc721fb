// PlanDescriptors: how `gpuscale serve` and `gpuscale gateway` share the process's descriptor
// limit (RLIMIT_NOFILE) between the control plane and the data plane, so that a flood of
// gateway clients can never take the descriptors the daemon's health probes, scrapes,
// replica starts and state need. Each proxied request holds two descriptors (client and
// replica), which a gateway max_connections of 20,000 under a 20,000 limit forgot: at 10,500
// clients the daemon's probes failed with EMFILE and every healthy replica was marked not
// serving. A share is kept for the control plane (kept whole, whatever the gateway does),
// the API gets at most an eighth of the rest, and the gateway what remains: its idle replica
// connections first (at most an eighth), then half of the rest as client connections. Pure.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace gpuscale::cli {

struct DescriptorNeeds {
  int limit = 0;                    // RLIMIT_NOFILE's soft limit, after raising it to the hard one
  int in_use = 0;                   // descriptors open now
  int api_max_connections = 0;      // 0 = no API in this process
  int gateway_max_connections = 0;  // 0 = no gateway
  int gateway_max_idle_upstream = 0;
};

struct DescriptorPlan {
  int control_reserve = 0;  // kept for everything else
  int api_max_connections = 0;
  int gateway_max_connections = 0;
  int gateway_max_idle_upstream = 0;
  std::vector<std::string> notes;  // each limit lowered, and why, for the terminal
};

// kUnavailable when the limit leaves no room to serve (the message says how to raise it).
Result<DescriptorPlan> PlanDescriptors(const DescriptorNeeds& needs);

// The soft descriptor limit and the number open now (/proc/self/fd); {0, 0} when unknown.
std::pair<int, int> DescriptorUsage();

}  // namespace gpuscale::cli
