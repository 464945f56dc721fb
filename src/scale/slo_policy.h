// The `slo` family: scales a service on its latency SLO directly, instead of on a proxy
// (queue length, utilization) with a hand-tuned threshold.
//
// Each tick:
//  1. Arrival rate. Requests finishing per second (sum(rate(vllm:request_success_total)))
//     plus the growth of the requests in the system (sum of waiting + running over the
//     replicas, differenced between ticks): what arrives either finishes or piles up. Two
//     horizons: short (30 s) and long (2 min).
//  2. Per-replica capacity at the SLO, mu (requests/s). Starts at initial_capacity_rps (a
//     load-test figure) and is learned from what the replicas show: when the SLO violation
//     ratio (TTFT or TPOT over target in the last minute) exceeds 3x the allowed share while
//     the load per replica is above 60 % of mu, mu drops by 10 % (at most once per 2 min);
//     when the SLO holds (violations under a quarter of the allowed share) a load per replica
//     above mu raises mu to it, and a load above 70 % of mu probes mu up by 0.5 % per tick.
//  3. Forecast over the cold-start horizon: the larger of both rates, plus the upward trend
//     (short minus long, per second) times horizon, plus burst headroom (z standard
//     deviations of a Poisson count over 30 s) and the backlog (waiting requests) drained
//     over 30 s.
//  4. Need = ceil(forecast / (mu * target_utilization)). Scale up at once (and by at least
//     one replica while the SLO is violated and requests queue). Scale down only to the
//     largest need seen in the last scale_down_delay, by at most max_scale_down_step per tick.
//     Missing metrics never scale down.
//
// It reads only ScalingInput metrics (scale/metric_names.h), so it runs live as in the
// simulator. Ownership: owns its config and history. Not thread-safe (see Policy).
#pragma once

#include <deque>
#include <optional>
#include <string_view>
#include <utility>

#include "scale/policy.h"

namespace gpuscale::scale {

struct SloPolicyConfig {
  int min_replicas = 1;
  int max_replicas = 1;
  double target_attainment = 0.99;   // share of requests that must meet the SLO
  double initial_capacity_rps = 10;  // per-replica requests/s at the SLO, before learning
  double target_utilization = 0.85;  // of mu; the rest absorbs noise between ticks
  Seconds forecast_horizon{75};      // ~ cold start + one control interval
  double burst_z = 2.0;              // burst headroom in Poisson standard deviations
  Seconds scale_down_delay{300};     // hysteresis window for scale-in
  int max_scale_down_step = 1;       // replicas removed per tick at most
  bool learn_capacity = true;
};

class SloPolicy final : public Policy {
 public:
  explicit SloPolicy(SloPolicyConfig config);

  std::string_view Family() const override { return "slo"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  Decision Evaluate(const ScalingInput& input) override;

  double capacity_rps() const { return capacity_rps_; }
  const SloPolicyConfig& config() const { return config_; }

 private:
  struct Observation {
    std::optional<double> rate_short, rate_long;  // arrival estimates, requests/s
    double in_system = 0;
    double waiting = 0;
    std::optional<double> violation;  // max of TTFT/TPOT violation ratios
  };
  std::optional<Observation> Observe(const ScalingInput& input);
  void LearnCapacity(const Observation& obs, int ready, Seconds now);
  int Need(const Observation& obs, double* forecast) const;
  Decision ScaleDown(const ScalingInput& input, int need, std::string why);

  SloPolicyConfig config_;
  double capacity_rps_;
  std::optional<std::pair<Seconds, double>> last_in_system_;  // (time, requests)
  double growth_rps_ = 0;                                     // d(in_system)/dt, smoothed
  std::deque<std::pair<Seconds, int>> recent_needs_;          // for scale-down hysteresis
  std::optional<Seconds> last_cut_;                           // last capacity decrease
};

}  // namespace gpuscale::scale
