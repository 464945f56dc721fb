// Power and temperature of simulated GPUs under the load the emulated replicas put on them
// (simulated_load.h). Without it a simulated GPU at 88 % utilization read its inventory's idle
// 70 W and 32 C; real GPUs draw and heat with load:
//   - power: idle + (TDP - idle) x utilization, TDP the model's board power limit (H100 SXM
//     700 W). Roughly linear in SM utilization, as nvidia-smi shows for steady inference.
//   - temperature: the steady rise over the idle reading is proportional to the extra power
//     (a heat sink's thermal resistance), so idle + (full-load - idle) x utilization; the
//     reading moves toward it as a first-order lag (Newton's law of cooling) with a time
//     constant of kThermalTimeConstant, so it climbs over a minute or two, not in a jump.
// The inventory's readings are the idle figures: a GPU without load reads exactly them (so
// edits of an inventory file still show at once), and a sensor the inventory marks unknown
// (null) stays unknown.
//
// Time is a parameter (`now` of each Query); nothing reads a clock. Thread-safety: one caller
// at a time, like the backend that owns it.
#pragma once

#include <map>
#include <string_view>

#include "core/clock.h"
#include "gpu/gpu_info.h"
#include "gpumon/simulated_load.h"

namespace gpuscale::gpu {

// Temperature a GPU settles at under sustained full load (H100 SXM under inference: the
// 70s C), and how fast it gets there: e^-1 of the gap is left after this long.
inline constexpr double kFullLoadTemperatureC = 75.0;
inline constexpr Seconds kThermalTimeConstant{45.0};

// Board power limit (TDP) in W of a GPU by its name as NVML reports it ("NVIDIA H100 80GB
// HBM3" -> 700). Names the table does not know get the H100 SXM's 700 W, the model of the
// default inventory and of an inventory entry without a name.
double BoardPowerLimitW(std::string_view gpu_name);

// idle_w + (tdp_w - idle_w) x utilization_ratio (in [0, 1]); never below idle_w.
double LoadedPowerW(double idle_w, double tdp_w, double utilization_ratio);

// Where the temperature settles at `utilization_ratio`: idle_c + (kFullLoadTemperatureC -
// idle_c) x ratio, never below idle_c.
double SteadyTemperatureC(double idle_c, double utilization_ratio);

class SimulatedThermals {
 public:
  // Sets the power and temperature of each GPU of `snapshot` (whose readings are still the
  // inventory's, the idle figures) from its utilization in `loads` (none: 0 %). The
  // temperature's rise over idle follows the steady rise with lag since the previous call.
  void Apply(GpuSnapshot& snapshot, const GpuLoads& loads, Seconds now);

 private:
  struct Heat {
    double rise_c = 0;  // over the GPU's idle reading
    Seconds at{0};      // when rise_c was computed
  };
  std::map<int, Heat> heat_;  // by GPU index; absent = at its idle reading
};

}  // namespace gpuscale::gpu
