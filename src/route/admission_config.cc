#include "route/admission_config.h"

#include <algorithm>

namespace gpuscale::route {

int SlotLimit(const AdmissionConfig& config, Priority priority) {
  const int limit = config.max_in_flight_per_replica;
  if (limit <= 0 || priority == Priority::kCritical) return limit;
  // The parser keeps the reserve below the limit; a hand-built config that does not still
  // leaves the others one slot rather than none (0 would read as no limit at all).
  return std::max(limit - config.critical_reserved_per_replica, 1);
}

}  // namespace gpuscale::route
