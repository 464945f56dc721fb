// The capacity searches behind `gpuscale profile`: the highest Poisson arrival rate of one
// request mix at which one replica keeps slo.target_ratio of requests within the SLO.
//
// Both take a LoadProbe, the port through which a load level is measured: the simulated
// replica (profile/sim_probe.h) or a live endpoint through the bench client
// (cli/endpoint_probe.h). The searches differ because the probes cost differently:
//  - BisectCapacity (simulator: a point costs milliseconds and is deterministic): doubles the
//    rate from start_rps until a point misses the target (or halves it until one holds),
//    then bisects the bracket; capacity = the highest rate that held. The curve is then
//    measured at fixed shares of that capacity, so that every mix's curve has the same shape
//    of rows whatever the search visited.
//  - StepCapacity (endpoint: a point costs wall-clock seconds of real load): raises the rate
//    by step_factor from start_rps until a point misses, then bisects between the last rate
//    that held and the first that missed refine_steps times; capacity = the highest rate
//    that held, and the curve is every point measured (by rate).
// Attainment is taken to fall as the rate rises (true of one replica fed the same arrival
// sequence compressed in time, which is how both probes generate it, up to noise).
//
// Pure: the probe does whatever I/O there is. Not thread-safe (the probe is used serially).
#pragma once

#include <functional>
#include <vector>

#include "core/result.h"
#include "profile/capacity_profile.h"

namespace gpuscale::profile {

// Measures one load level: offers `rate_rps` Poisson arrivals of `mix` to the replica and
// reports what it did. Implementations document their own errors (e.g. kUnavailable when an
// endpoint cannot be reached); a search returns them unchanged.
class LoadProbe {
 public:
  virtual ~LoadProbe() = default;
  virtual Result<CurvePoint> Measure(const Mix& mix, double rate_rps) = 0;
};

// Called after every measured point, with whether it met the target (for progress lines).
using SearchProgress = std::function<void(const Mix& mix, const CurvePoint& point, bool held)>;

struct BisectionOptions {
  double start_rps = 1;        // first rate tried, > 0
  double min_rps = 1.0 / 128;  // halving below this gives up (the mix never meets the SLO)
  double max_rps = 1e5;        // doubling above this gives up (the probe never saturates)
  int steps = 12;              // bisections of the bracket [c, 2c]: 2^-12 relative precision
  // The curve: points at these shares of the capacity found (1 is the capacity itself).
  std::vector<double> curve_shares = {0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5};
};

// Errors: kInvalidArgument (field "mix P:O") when no rate down to min_rps holds or the
// rate passes max_rps still holding, naming the last point; the probe's errors.
Result<MixProfile> BisectCapacity(LoadProbe& probe, const Mix& mix, double target_ratio,
                                  const BisectionOptions& options,
                                  const SearchProgress& progress = {});

struct StepOptions {
  double start_rps = 1;      // first step's rate, > 0
  double step_factor = 1.5;  // each step's rate over the previous one, > 1
  double max_rps = 1000;     // a step above this is not run
  int refine_steps = 2;      // bisections between the last rate that held and the first miss
};

// Errors: kInvalidArgument (field "mix P:O") when the first step already misses the target
// (lower start_rps) or the steps reach max_rps still holding; the probe's errors.
Result<MixProfile> StepCapacity(LoadProbe& probe, const Mix& mix, double target_ratio,
                                const StepOptions& options, const SearchProgress& progress = {});

}  // namespace gpuscale::profile
