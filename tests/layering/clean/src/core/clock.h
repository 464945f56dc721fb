// Fixture (not compiled): <chrono> for durations is allowed; reading a clock is not.
#pragma once

#include <atomic>
#include <chrono>

using Seconds = std::chrono::duration<double>;
