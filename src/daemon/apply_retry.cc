#include "daemon/apply_retry.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpuscale::daemon {

bool ApplyRetry::Failed(std::string message, Seconds now, Seconds initial, Seconds max) {
  ++failures_;
  // initial * 2^(failures-1); the exponent is bounded so that the factor stays finite.
  const double factor = std::pow(2.0, std::min(failures_ - 1, 30));
  next_try_ = now + std::min(initial * factor, max);
  const bool changed = message != message_;
  message_ = std::move(message);
  return changed;
}

}  // namespace gpuscale::daemon
