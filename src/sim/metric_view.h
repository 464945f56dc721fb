// MetricView: the controller's view of one service's replica metrics in the simulator,
// built the way the daemon builds it live: every scrape adds each replica's vLLM gauges,
// counters and histograms to metrics::SeriesWindow / HistogramWindow, and each control tick
// reads the windows into ScalingInput metrics (names in scale/metric_names.h). The engine
// scrapes at every control tick before it reads, as the daemon's TickCollector does, and
// every scrape_interval_seconds between ticks.
//
// Aggregation across replicas follows PromQL: per-replica rates/fractions, then weighted sums
// (sum(rate(x)) and 1 - sum(rate(bucket{le})) / sum(rate(count))), computed by
// metrics/replica_aggregation.h, as the daemon's ServiceMetricView does.
//
// Ownership: owns the windows, keyed by replica slot. Thread-safety: none (one simulation).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "metrics/metric_window.h"
#include "scale/policy.h"
#include "sim/sim_replica.h"
#include "sim/simulation.h"

namespace gpuscale::sim {

class MetricView {
 public:
  explicit MetricView(const SloSpec& slo);

  // Records one scrape of the replica in `slot` at `now`.
  void Scrape(Seconds now, int slot, const SimReplica& replica);
  // Drops a stopped replica's series (its targets vanish from Prometheus too).
  void Forget(int slot);

  // Metrics at `now`, from the latest scrape. `ready_slots` lists the ready replicas in
  // order; per-replica values come only from those with at least one scrape. Also fills
  // `tasks` (queued = waiting, running) for the task-ratio policies.
  void Fill(Seconds now, const std::vector<int>& ready_slots, scale::ScalingInput& input) const;

 private:
  struct Series {
    metrics::SeriesWindow waiting, running, kv_usage, success, prompt_tokens, generation_tokens,
        prefix_queries, prefix_hits;
    metrics::HistogramWindow e2e, ttft, tpot;
  };
  // Weighted fraction above `threshold` over all replicas (PromQL sum-of-rates ratio).
  std::optional<double> FractionAbove(Seconds now, Seconds window, double threshold,
                                      metrics::HistogramWindow Series::*histogram) const;
  // sum(rate(counter[window])) over the replicas.
  std::optional<double> SumRate(Seconds now, Seconds window,
                                metrics::SeriesWindow Series::*counter) const;

  SloSpec slo_;
  std::map<int, std::unique_ptr<Series>> series_;  // by slot; ordered for determinism
};

}  // namespace gpuscale::sim
