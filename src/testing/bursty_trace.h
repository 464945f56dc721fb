// Test trace: bursty and deterministic, the rate alternating between ~20 and ~60 req/s each
// minute (Poisson arrivals from a fixed-seed generator), prompts of 200-1700 tokens and
// outputs of 20-320. Shared by the oracle's and the static fleet's tests.
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/trace.h"

namespace gpuscale::testing {

inline sim::Trace BurstyTrace(double seconds) {
  sim::Trace trace;
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
  };
  double t = 0;
  while (t < seconds) {
    double rate = static_cast<int>(t / 60) % 2 == 0 ? 20 : 60;
    t += -std::log(1 - next()) / rate;
    trace.requests.push_back({t, 200 + static_cast<int32_t>(next() * 1500),
                              20 + static_cast<int32_t>(next() * 300)});
  }
  return trace;
}

}  // namespace gpuscale::testing
