#include "gpumon/simulated_thermals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gpumon/simulated_backend.h"
#include "gpumon/simulated_load.h"

namespace gpuscale::gpu {
namespace {

// The default inventory's GPU 0: an H100 SXM (700 W) idling at 69.5 W and 32 C.
constexpr double kIdleW = 69.5;
constexpr double kIdleC = 32.0;

class SimulatedThermalsTest : public ::testing::Test {
 protected:
  // GPU 0's reading at `t` seconds.
  GpuInfo At(double t) {
    Result<GpuSnapshot> snapshot = backend_.Query(Seconds{t});
    EXPECT_TRUE(snapshot.has_value()) << snapshot.error().ToString();
    return snapshot->gpus.at(0);
  }
  void Load(double utilization_percent) {
    board_->Set("services", {{0, {utilization_percent, 20000}}});
  }

  std::shared_ptr<GpuLoadBoard> board_ = std::make_shared<GpuLoadBoard>();
  LoadedSimulatedBackend backend_{std::make_unique<SimulatedBackend>(), board_};
};

// A minute at 0 % reads the idle figures; then 88 % for ten minutes (13 time constants),
// sampled every 5 s as the monitor does: the power is the formula's from the first loaded
// sample, the temperature ends at the steady state.
TEST_F(SimulatedThermalsTest, IdleAtNoLoadThenSustainedLoadDrawsTheFormulasPowerAndSettlesWarm) {
  Load(0);
  for (double t = 0; t <= 60; t += 5) {
    const GpuInfo gpu = At(t);
    EXPECT_EQ(gpu.power_draw_w, kIdleW) << "t=" << t;
    EXPECT_EQ(gpu.temperature_c, kIdleC) << "t=" << t;
  }
  Load(88);
  const double power = kIdleW + (700 - kIdleW) * 0.88;                     // 624.3 W
  const double steady = kIdleC + (kFullLoadTemperatureC - kIdleC) * 0.88;  // 69.8 C
  GpuInfo gpu;
  for (double t = 60; t <= 660; t += 5) {
    gpu = At(t);
    ASSERT_TRUE(gpu.power_draw_w.has_value());
    EXPECT_NEAR(*gpu.power_draw_w, power, 1e-9) << "t=" << t;
  }
  EXPECT_EQ(gpu.utilization_percent, 88);
  ASSERT_TRUE(gpu.temperature_c.has_value());
  EXPECT_NEAR(*gpu.temperature_c, steady, 0.05);
  EXPECT_GT(*gpu.temperature_c, 65);
}

// The temperature climbs as a first-order lag (63 % of the way after one time constant),
// never jumping, and cools the same way once the load is gone, back to exactly idle.
TEST_F(SimulatedThermalsTest, TemperatureFollowsTheLoadWithLag) {
  Load(88);
  const double rise = (kFullLoadTemperatureC - kIdleC) * 0.88;
  const double tau = kThermalTimeConstant.count();
  EXPECT_EQ(At(0).temperature_c, kIdleC);  // load just seen: not warmer yet
  double previous = kIdleC;
  for (double t = 1; t <= tau; ++t) {
    const double now = *At(t).temperature_c;
    EXPECT_GT(now, previous) << "t=" << t;
    EXPECT_LT(now - previous, 0.05 * rise) << "a jump at t=" << t;
    previous = now;
  }
  EXPECT_NEAR(previous, kIdleC + rise * (1 - std::exp(-1.0)), 0.01);

  board_->Set("services", {});
  const GpuInfo unloaded = At(tau + 1);
  EXPECT_EQ(unloaded.power_draw_w, kIdleW);  // power follows the load at once
  EXPECT_LT(*unloaded.temperature_c, previous);
  EXPECT_GT(*unloaded.temperature_c, kIdleC + 0.5 * rise * (1 - std::exp(-1.0)));
  EXPECT_EQ(At(tau + 600).temperature_c, kIdleC);
}

// How often the GPU is read does not change the curve (the lag is exact per interval).
TEST_F(SimulatedThermalsTest, SamplingRateDoesNotChangeTheCurve) {
  Load(50);
  for (double t = 0; t <= 90; t += 1) At(t);
  auto board = std::make_shared<GpuLoadBoard>();
  LoadedSimulatedBackend sparse(std::make_unique<SimulatedBackend>(), board);
  board->Set("services", {{0, {50, 0}}});
  ASSERT_TRUE(sparse.Query(Seconds{0}).has_value());
  Result<GpuSnapshot> at90 = sparse.Query(Seconds{90});
  ASSERT_TRUE(at90.has_value());
  const double dense = *At(90).temperature_c;
  EXPECT_GT(dense, kIdleC + 10);  // two time constants at 50 %: 86 % of a 21.5 C rise
  EXPECT_NEAR(*at90->gpus[0].temperature_c, dense, 1e-9);
}

// A sensor the inventory marks unknown stays unknown; GPUs without load keep their readings.
TEST(SimulatedThermalsFunctionsTest, UnknownSensorsAndUnloadedGpusKeepTheirReadings) {
  GpuSnapshot snapshot;
  snapshot.gpus.resize(2);
  snapshot.gpus[0].index = 0;
  snapshot.gpus[1].index = 1;
  snapshot.gpus[1].temperature_c = 40;
  snapshot.gpus[1].power_draw_w = 100;
  SimulatedThermals thermals;
  thermals.Apply(snapshot, {{0, {100, 0}}}, Seconds{10});
  EXPECT_EQ(snapshot.gpus[0].temperature_c, std::nullopt);
  EXPECT_EQ(snapshot.gpus[0].power_draw_w, std::nullopt);
  EXPECT_EQ(snapshot.gpus[1].temperature_c, 40);
  EXPECT_EQ(snapshot.gpus[1].power_draw_w, 100);
}

TEST(SimulatedThermalsFunctionsTest, BoardPowerLimitByModelName) {
  const std::vector<std::pair<std::string, double>> cases = {
      {"NVIDIA H100 80GB HBM3", 700},
      {"NVIDIA H100 PCIe", 350},
      {"NVIDIA H100 NVL", 400},
      {"NVIDIA H200", 700},
      {"NVIDIA A100-SXM4-80GB", 400},
      {"NVIDIA A100-PCIE-40GB", 300},
      {"NVIDIA L40S", 350},
      {"NVIDIA L40", 300},
      {"NVIDIA L4", 72},
      {"Some Future GPU", 700},
  };
  for (const auto& [name, watts] : cases) EXPECT_EQ(BoardPowerLimitW(name), watts) << name;
  EXPECT_EQ(LoadedPowerW(70, 700, 1.5), 700);  // utilization capped at 100 %
  EXPECT_EQ(LoadedPowerW(80, 72, 1), 80);      // never below idle
  EXPECT_EQ(SteadyTemperatureC(32, 1), kFullLoadTemperatureC);
}

}  // namespace
}  // namespace gpuscale::gpu
