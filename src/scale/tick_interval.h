// The spacing of control ticks, one rule for the daemon's loop (Daemon::LoopInterval) and the
// simulator's engine (sim::NextTickSeconds), so that a simulated run decides at the instants
// the daemon would (issue 45: the simulator once ticked only every control interval and
// scaled out seconds later than the daemon did).
#pragma once

#include <algorithm>

#include "core/clock.h"

namespace gpuscale::scale {

// While requests wait for a replica (the gateway's activator queue), the loop ticks at least
// this often: the replica the activator asked for is routed to as soon as it is ready, not a
// whole loop interval later.
inline constexpr Seconds kWaitingTickInterval{1};

// How often the daemon probes a starting replica by default (DaemonOptions::probe_interval,
// and the engines' own options: local processes, Slurm); the simulator, which has no probes,
// spaces its settling ticks by it.
inline constexpr Seconds kDefaultProbeInterval{1};

// Time from one tick to the next: `loop_interval`, but at most kWaitingTickInterval while
// requests wait for a replica, and at most `probe_interval` while a replica starts, restarts,
// drains or stops (`settling`): one ready in 1 s serves 1 s later. The policy runs on every
// tick; it keeps its own windows and cooldowns.
inline Seconds TickInterval(Seconds loop_interval, bool requests_waiting, bool settling,
                            Seconds probe_interval) {
  Seconds interval = loop_interval;
  if (requests_waiting) interval = std::min(interval, kWaitingTickInterval);
  if (settling) interval = std::min(interval, probe_interval);
  return interval;
}

}  // namespace gpuscale::scale
