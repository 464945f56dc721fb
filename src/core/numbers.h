// Floating-point constants shared across modules. One definition here rather than one per
// file: unity builds compile several files of a target in one translation unit, where two
// file-local definitions of the same name collide.
#pragma once

#include <limits>

namespace gpuscale {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace gpuscale
