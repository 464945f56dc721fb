// A service's latency SLO as the daemon measures it: the TTFT and time-per-output-token
// targets its replicas' histograms are read against (the share of requests over each, the
// `slo:*_violation_ratio:1m` metrics the `slo` policy scales on). A service's `slo:` block
// (daemon_config.h); the defaults are the simulator's (config/sim_config.h).
#pragma once

namespace gpuscale::daemon {

// Where the `slo` policy's violation ratios come from: the gateway's measurements (what
// clients saw: queueing at the door and the network included) or the replicas' vLLM
// histograms. kAuto: the gateway's while it routed requests of the service in the last
// minute, else the replicas' (an engine the gateway does not front).
enum class SloSource { kAuto, kGateway, kReplicas };

struct SloThresholds {
  double ttft_seconds = 1.0;            // time to first token
  double tpot_seconds = 0.05;           // time per output token after the first
  SloSource source = SloSource::kAuto;  // `slo: {source: auto | gateway | replicas}`

  friend bool operator==(const SloThresholds&, const SloThresholds&) = default;
};

}  // namespace gpuscale::daemon
