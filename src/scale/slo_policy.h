// The `slo` family: scales a service on its latency SLO directly, instead of on a proxy
// (queue length, utilization) with a hand-tuned threshold.
//
// Each tick:
//  1. Arrival rate. Requests finishing per second (sum(rate(vllm:request_success_total)))
//     plus the growth of the requests in the system (sum of waiting + running over the
//     replicas, differenced over the same 30 s): what arrives either finishes or piles up. Two
//     horizons: short (30 s) and long (2 min). In token mode (output_token_weight > 0) every
//     rate, the backlog and the capacity below are multiplied into work units: the finished
//     requests' prompt + weight x generated tokens per request, from vLLM's token counters
//     over 30 s (the last value is kept while nothing finishes).
//  2. Per-replica capacity at the SLO, mu (requests/s, or work units/s in token mode).
//     Starts at initial_capacity_rps / _tokens_per_second (a load-test figure) and is
//     learned from what the replicas show: when the SLO violation ratio (TTFT or TPOT over
//     target in the last minute) exceeds 3x the allowed share while the load per replica is
//     between 60 % of mu and mu (above mu the fleet was short, which says nothing new about
//     a replica), mu drops by 10 % (at most once per 2 min; never below
//     min_capacity_ratio x the initial capacity);
//     when the SLO holds (violations under a quarter of the allowed share) a mu below the
//     initial capacity regains half its gap to it every 5 minutes, a load per replica
//     above mu raises mu to it, and a load above probe_load_ratio x target_utilization x mu
//     (near the load the plan runs replicas at) probes mu up by 0.5 %
//     per tick.
//  3. Forecast over the cold-start horizon: the larger of both rates, plus the upward trend
//     times horizon (with follow_short_rate off: the long rate alone, no trend), plus burst
//     headroom (z standard deviations of a Poisson count over 30 s) and the backlog
//     (waiting requests) drained over 30 s, each replica's queue at most one replica's
//     capacity (only that replica serves it). The trend is the smaller of the
//     window difference (short minus long, per second) and the least-squares slope of the
//     short rate over the last trend_window: a rise must show in both before it buys
//     replicas a cold start ahead, so one noisy 30 s window does not (a 30 s window of a
//     bursty trace swings by tens of percent, and the horizon multiplies that).
//     With recurring_bursts, the forecast is at least the load a remembered burst asks to be
//     ready for (scale/burst_memory.h: ahead of a burst that recurs on a period, throughout
//     bursts that recur irregularly, briefly after a one-off).
//  A mixed fleet (issue 47, ScalingInput::current_capacity) is counted in reference replicas
//  throughout: mu is learned per unit of ready capacity, the need below is in units, and the
//  fleet it is compared with is the replicas' capacity (rounded down), not their count; the
//  reconciler and the allocator turn the units into replicas of the cheapest variants.
//  4. Need = ceil(forecast / (mu * target_utilization)) + spare_replicas; while replicas
//     are starting, the backlog term buys no more than the fleet already ordered. Scale up
//     at once (and by at least one replica while the SLO is violated and requests queue).
//     Scale down only to the largest need seen in the last scale_down_delay, by at most
//     max_scale_down_step per tick, and never while requests wait in a queue on at least
//     half the ready replicas. Missing metrics never scale down.
//
//  A violation ratio absent from the input means no observation in its window (no request
//  finished with two tokens or more, or non-streaming requests through the gateway: no
//  TPOT); the other ratio decides alone, and the reason shows the absent one as "n/a"
//  rather than as 0. An engine that does not export a histogram at all is the daemon's to
//  report (a metric error naming it, ServiceRuntime), not something a policy can tell.
//
//  Violations within ready_grace of a rise in ready replicas neither cut mu (step 2) nor add
//  a replica (step 4): they belong to the fleet before it grew, or to the new replica's
//  first flood behind a least-loaded router without slow start.
//
// It reads only ScalingInput metrics (scale/metric_names.h), so it runs live as in the
// simulator. Ownership: owns its config and history. Not thread-safe (see Policy).
#pragma once

#include <deque>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "scale/burst_memory.h"
#include "scale/policy.h"

namespace gpuscale::scale {

// A profile's capacity at one request mix (docs/profiles.md), in prompt-token equivalents/s
// counted with the config's output_token_weight.
struct MixCapacity {
  double prompt_tokens = 0;
  double output_tokens = 0;
  double capacity_tokens_per_second = 0;
};

struct SloPolicyConfig {
  int min_replicas = 1;
  int max_replicas = 1;
  double target_attainment = 0.99;   // share of requests that must meet the SLO
  double initial_capacity_rps = 10;  // per-replica requests/s at the SLO, before learning
  // Token mode (> 0): demand and capacity are counted in prompt-token equivalents per second,
  // a generated token weighing this many prompt tokens (its decode cost over a prompt
  // token's prefill cost, e.g. from a load test or the simulator's replica model), so a
  // shift to longer prompts or outputs is seen as more load. 0: count requests.
  double output_token_weight = 0;
  // Token mode: what a prompt token weighs (default 1). 0 counts generated tokens alone: the
  // `disagg` family's decode pool, whose replicas never prefill (scale/disagg_policy.h).
  double prompt_token_weight = 1;
  // Token mode: per-replica prompt-token equivalents/s at the SLO, before learning (> 0).
  double initial_capacity_tokens_per_second = 0;
  // Token mode: a profile's capacity per mix (> 0 each). One weight does not make every mix
  // cost the same per work unit (a replica at a 50 ms TPOT target sustains ~25k units/s of
  // 4k-prompt or 1k-output requests and ~44k of short ones), so the load is scaled by the
  // capacity at the mix being served (its mean prompt and output lengths, interpolated
  // between the profile's mixes) over initial_capacity_tokens_per_second: what is learned
  // of the capacity then carries over from one mix to the next. Empty: one capacity for all.
  std::vector<MixCapacity> mix_capacities;
  double target_utilization = 0.85;  // of mu; the rest absorbs noise between ticks
  Seconds forecast_horizon{75};      // ~ cold start + one control interval
  // History over which the upward trend is confirmed by a least-squares slope of the
  // short-window rate (0: the window difference alone).
  Seconds trend_window{120};
  double burst_z = 2.0;              // burst headroom in Poisson standard deviations
  Seconds scale_down_delay{300};     // hysteresis window for scale-in
  int max_scale_down_step = 1;       // replicas removed per tick at most
  int spare_replicas = 0;            // warm replicas kept beyond the forecast need
  // false: the forecast starts from the 2-minute rate alone and adds no trend, leaving
  // swings shorter than that to spare_replicas, the backlog term and the violation reaction.
  // For traffic whose bursts last less than a cold start: a replica ordered when one shows
  // arrives after it and is then held through scale_down_delay, so following the 30 s rate
  // buys replicas that serve nothing (examples/sim/code/slo.yaml).
  bool follow_short_rate = true;
  bool learn_capacity = true;
  // Cuts never take mu below this share of the initial capacity. 1 makes the load-test
  // figure a floor that learning only adds to: a figure measured on one replica fed smooth
  // load is a lower bound for a replica in a pool under the same smooth load, and a
  // violation window that lags a minute (or a cold-start backlog) then cannot teach a
  // capacity below it. Keep it below 1 when the figure may be too high, e.g. for traffic
  // burstier than the load test (bursts lower what a replica sustains at the SLO).
  double min_capacity_ratio = 0.25;
  // mu is probed up (0.5 % per tick) only while the SLO holds at a load per replica above
  // this share of the planned load (target_utilization x mu); 1 with target_utilization 1
  // turns probing off (mu then rises only to loads seen to hold).
  double probe_load_ratio = 0.9;
  // For this long after the number of ready replicas rises, SLO violations are not read as
  // overload (no capacity cut, no extra replica for them): the one-minute violation window
  // still holds the misses from before the new replica served, which it is there to end,
  // and a gateway routing to the least-loaded replica without a slow start floods the new
  // one with a burst of prompts that miss TTFT at any fleet size (docs/simulation.md,
  // "Router slow start"). 45 s rather than the window's full minute: on conv x20 with every
  // burst multiplied, 60 s left five seeds at 99.00-99.10 % where 45 s keeps all >= 99.2 %.
  // 0: react to every violation.
  Seconds ready_grace{45};
  // Remember short bursts (scale/burst_memory.h) and keep the fleet ready for one that has
  // come back before: ahead of the next onset when they recur on a period, throughout when
  // they recur irregularly, briefly after a one-off. false: only the forecast above.
  bool recurring_bursts = true;
  // How long before an expected burst the fleet is ready for it: a cold start plus a tick
  // and a margin for the period's jitter.
  Seconds burst_lead{90};
};

// The capacity (work units/s) at a mix of these mean lengths, interpolated between the
// profile's mixes (inverse squared distance in log prompt x log output length).
// REQUIRES: mixes not empty.
double CapacityAtMix(const std::vector<MixCapacity>& mixes, double prompt_tokens,
                     double output_tokens);

class SloPolicy final : public Policy {
 public:
  explicit SloPolicy(SloPolicyConfig config);

  std::string_view Family() const override { return "slo"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  Decision Evaluate(const ScalingInput& input) override;
  // Waiting, running, the success rates, the violation ratios and, in token mode, the token
  // rates (scale/metric_names.h).
  std::vector<std::string> MetricNames() const override;

  // mu: requests/s per replica, or prompt-token equivalents/s in token mode.
  double capacity() const { return capacity_; }
  const SloPolicyConfig& config() const { return config_; }

 private:
  struct Observation {
    std::optional<double> rate_short, rate_long;  // arrival estimates, requests/s
    double in_system = 0;
    double waiting = 0;               // requests (work units in token mode)
    std::vector<double> waiting_per_replica;  // requests, per ready replica (when exported)
    double unit = 1;                  // work units per request (1 counting requests)
    double mix_factor = 1;            // initial capacity / the capacity at this mix
    double mean_replica_capacity = 1;  // of the ready replicas, in reference replicas
    std::optional<double> violation;  // max of the TTFT/TPOT violation ratios present
    std::optional<double> ttft_violation, tpot_violation;  // as read, for the reason
  };
  std::optional<Observation> Observe(const ScalingInput& input);
  // Token mode: converts obs's rates and backlog to work units; false while the work per
  // request is still unknown (nothing has finished yet).
  bool ToWorkUnits(const ScalingInput& input, Observation& obs);
  // ready: the ready replicas' capacity in reference replicas (their count in a
  // single-shape fleet). in_grace: within ready_grace of a rise in ready replicas,
  // violations teach nothing.
  void LearnCapacity(const Observation& obs, double ready, Seconds now, bool in_grace);
  double Trend(const Observation& obs, Seconds now);
  // expected: the load a remembered burst asks to be ready for (BurstMemory), or 0.
  // ordered: the fleet while replicas are starting (0 when all are ready); the backlog does
  // not buy beyond it.
  int Need(const Observation& obs, double trend, double expected, int ordered,
           double* forecast) const;
  Decision ScaleDown(const ScalingInput& input, int need, std::string why);
  // True when at least half the ready replicas hold a queue (or only a total is known).
  static bool QueueIsSpread(const Observation& obs);
  // Evaluate without its inputs, which it records in inputs_ as it reads them.
  Decision Decide(const ScalingInput& input);

  SloPolicyConfig config_;
  const double initial_capacity_;  // requests/s or work units/s (token mode)
  double capacity_;
  std::optional<double> work_per_request_;  // token mode: last measured, work units
  double mix_factor_ = 1;                   // token mode with mix_capacities: last measured
  // (time, waiting + running) back to the newest sample at least 30 s old.
  std::deque<std::pair<Seconds, double>> in_system_history_;
  struct PastNeed {
    Seconds at{0};
    int replicas = 0;
    bool in_burst = false;  // recorded in a burst, or while one was expected (BurstMemory)
  };
  std::deque<PastNeed> recent_needs_;  // for scale-down hysteresis
  std::deque<std::pair<Seconds, double>> recent_rates_;       // short rate, for the trend
  std::optional<Seconds> last_cut_;                           // last capacity decrease
  std::optional<Seconds> last_tick_;                          // last tick with metrics
  int last_ready_ = -1;                                       // ready replicas, last tick
  std::optional<Seconds> ready_rise_;                         // when they last rose
  std::vector<DecisionInput> inputs_;                         // of the tick being decided
  BurstMemory burst_memory_;
};

}  // namespace gpuscale::scale
