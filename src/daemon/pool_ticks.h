// The ticks of a disaggregated service's pools (one ServiceRuntime each) as one service tick:
// what its decision row, history, events and API view show, so that everything written per
// service stays one row per service and tick.
//
// Pure; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "daemon/service_runtime.h"

namespace gpuscale::daemon {

struct PoolTick {
  std::string role;  // "prefill", "decode"
  const ServiceTickResult* result = nullptr;
};

// Counts (current, ready, desired, started, stopped, scrape errors) are summed; the reason is
// each pool's, "<role>: ..." (a reason that already starts so, as the disagg family's do, is
// kept as it is), joined by "; "; details, metric errors and action errors get their pool's
// "<role>: " prefix and input names "<role>/"; actions are concatenated (their replica ids
// name the pool); desired_changed when any pool's did; the gateway's figures are the last
// pool's (the gateway measures the service's requests as a whole). REQUIRES: pools non-empty,
// every result non-null.
ServiceTickResult CombinePoolTicks(const std::vector<PoolTick>& pools);

}  // namespace gpuscale::daemon
