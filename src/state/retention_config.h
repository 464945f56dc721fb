// RetentionConfig: how much history (decision and event rows) the state database keeps, by
// age and by size (state/history_retention.h says how each is applied). The `retention:`
// section of `gpuscale serve`'s config file (serve_config/daemon_config.h) is read into it.
#pragma once

#include <cstdint>

#include "core/clock.h"

namespace gpuscale::state {

struct RetentionConfig {
  Seconds max_age{7 * 24 * 3600};           // `max_age_days`, in (0, 3650]
  int64_t max_bytes = int64_t{1024} << 20;  // `max_megabytes` x 2^20; 0 = no size cap
  friend bool operator==(const RetentionConfig&, const RetentionConfig&) = default;
};

}  // namespace gpuscale::state
