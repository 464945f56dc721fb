#include "emulator/step_timer.h"

#include <fmt/format.h>

namespace gpuscale::emulator {

Result<StepTiming> ParseStepTiming(const std::string& name) {
  if (name == "linear") return StepTiming::kLinear;
  if (name == "calibrated") return StepTiming::kCalibrated;
  return InvalidArgument(fmt::format("unknown timing '{}'; expected linear or calibrated", name),
                         "--timing");
}

}  // namespace gpuscale::emulator
