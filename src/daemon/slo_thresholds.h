// A service's latency SLO as the daemon measures it: the TTFT and time-per-output-token
// targets its replicas' histograms are read against (the share of requests over each, the
// `slo:*_violation_ratio:1m` metrics the `slo` policy scales on). A service's `slo:` block
// (daemon_config.h); the defaults are the simulator's (config/sim_config.h).
#pragma once

namespace gpuscale::daemon {

struct SloThresholds {
  double ttft_seconds = 1.0;   // time to first token
  double tpot_seconds = 0.05;  // time per output token after the first

  friend bool operator==(const SloThresholds&, const SloThresholds&) = default;
};

}  // namespace gpuscale::daemon
