#include "gpumon/simulated_thermals.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>

namespace gpuscale::gpu {
namespace {

constexpr double kDefaultPowerLimitW = 700;  // H100 SXM

// Board power limits from NVIDIA's data sheets; the first entry whose every part is in the
// upper-cased name wins (NVML writes both "H100 PCIe" and "A100-PCIE-40GB"), so the specific
// forms come before the general ones ("H100"+"PCIE" before "H100", "L40" before "L4").
struct PowerLimit {
  std::array<std::string_view, 2> parts;  // "" matches anything
  double watts;
};
constexpr std::array<PowerLimit, 10> kPowerLimits{{
    {{"B200", ""}, 1000},
    {{"H200", ""}, 700},
    {{"H100", "PCIE"}, 350},
    {{"H100", "NVL"}, 400},
    {{"H100", ""}, 700},
    {{"A100", "PCIE"}, 300},
    {{"A100", ""}, 400},
    {{"L40S", ""}, 350},
    {{"L40", ""}, 300},
    {{"L4", ""}, 72},
}};

// The remaining rise over idle after `elapsed` of a first-order lag toward `steady_rise`.
double Lag(double previous_rise, double steady_rise, Seconds elapsed) {
  const double decay = std::exp(-std::max(elapsed.count(), 0.0) / kThermalTimeConstant.count());
  return steady_rise + (previous_rise - steady_rise) * decay;
}

double UtilizationRatio(const GpuLoads& loads, int index) {
  auto it = loads.find(index);
  if (it == loads.end()) return 0;
  return std::clamp(it->second.utilization_percent, 0.0, 100.0) / 100.0;
}

}  // namespace

double BoardPowerLimitW(std::string_view gpu_name) {
  std::string name(gpu_name);
  std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const PowerLimit& limit : kPowerLimits) {
    if (std::ranges::all_of(limit.parts, [&](std::string_view part) {
          return name.find(part) != std::string::npos;
        })) {
      return limit.watts;
    }
  }
  return kDefaultPowerLimitW;
}

double LoadedPowerW(double idle_w, double tdp_w, double utilization_ratio) {
  return idle_w + std::max(tdp_w - idle_w, 0.0) * std::clamp(utilization_ratio, 0.0, 1.0);
}

double SteadyTemperatureC(double idle_c, double utilization_ratio) {
  return idle_c +
         std::max(kFullLoadTemperatureC - idle_c, 0.0) * std::clamp(utilization_ratio, 0.0, 1.0);
}

void SimulatedThermals::Apply(GpuSnapshot& snapshot, const GpuLoads& loads, Seconds now) {
  // Below this a GPU without load counts as back at its idle reading.
  constexpr double kSettledC = 0.05;
  for (GpuInfo& gpu : snapshot.gpus) {
    const double ratio = UtilizationRatio(loads, gpu.index);
    if (gpu.power_draw_w) {
      gpu.power_draw_w = LoadedPowerW(*gpu.power_draw_w, BoardPowerLimitW(gpu.name), ratio);
    }
    if (!gpu.temperature_c) {
      heat_.erase(gpu.index);
      continue;
    }
    const double idle_c = *gpu.temperature_c;
    const double steady_rise = SteadyTemperatureC(idle_c, ratio) - idle_c;
    auto it = heat_.find(gpu.index);
    if (it == heat_.end()) {
      if (steady_rise <= 0) continue;
      it = heat_.emplace(gpu.index, Heat{0, now}).first;  // starts from idle, now
    }
    const double rise = Lag(it->second.rise_c, steady_rise, now - it->second.at);
    if (ratio == 0 && rise < kSettledC) {
      heat_.erase(it);
      continue;
    }
    it->second = Heat{rise, std::max(now, it->second.at)};
    gpu.temperature_c = idle_c + rise;
  }
}

}  // namespace gpuscale::gpu
