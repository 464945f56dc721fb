// Replica aggregation: one service value from many replicas' metric windows, the way a
// PromQL query over every scraped target computes it. The simulator's sim::MetricView and
// the daemon's daemon::ServiceMetricView both call these, so a policy reads the same service
// values simulated and live.
//
// A replica whose window cannot answer (fewer than two samples in range, no observations) is
// left out, as PromQL drops a series with too few samples in a range; with none left the
// result is nullopt ("no data"), never 0. Summation follows the given order, so a caller that
// passes its replicas in a fixed order gets bit-identical results run after run.
//
// Pure: no I/O, time is a parameter. The windows are borrowed for the call only.
#pragma once

#include <optional>
#include <span>

#include "core/clock.h"
#include "metrics/metric_window.h"

namespace gpuscale::metrics {

// sum(rate(counter[window])) over the replicas' counter windows.
std::optional<double> SumOfRates(std::span<const SeriesWindow* const> replicas, Seconds now,
                                 Seconds window);

// 1 - sum(rate(bucket{le=threshold}[window])) / sum(rate(count[window])): each replica's
// share of observations above `threshold` weighted by its observation rate. nullopt when no
// replica observed anything in the window.
std::optional<double> FractionAboveAcrossReplicas(std::span<const HistogramWindow* const> replicas,
                                                  Seconds now, Seconds window, double threshold);

}  // namespace gpuscale::metrics
