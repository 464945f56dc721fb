// The router's choice among ready replicas (sim::RouterSpec). Pure; the engine calls it per
// arrival, so it takes plain numbers and allocates nothing.
#pragma once

#include <algorithm>

#include "sim/simulation.h"

namespace gpuscale::sim {

// Envoy's default minimum weight during slow start: a fresh replica takes a tenth of a
// warm one's share from its first second.
inline constexpr double kSlowStartMinWeight = 0.1;

// What least-outstanding routing minimizes for one replica: its outstanding requests, and
// during the slow start after its cold start ended at `warm_since`, (outstanding + 1) over
// a weight growing linearly from kSlowStartMinWeight to 1 across the window (a replica with
// no requests is then still worth avoiding while its peers hold few). Without slow start
// the plain count, as before it existed.
inline double RouterLoad(int outstanding, double warm_since, double now, double slow_start_s) {
  if (!(slow_start_s > 0)) return outstanding;
  const double weight = std::clamp((now - warm_since) / slow_start_s, kSlowStartMinWeight, 1.0);
  return (outstanding + 1) / weight;
}

}  // namespace gpuscale::sim
