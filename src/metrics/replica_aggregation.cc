#include "metrics/replica_aggregation.h"

namespace gpuscale::metrics {

std::optional<double> SumOfRates(std::span<const SeriesWindow* const> replicas, Seconds now,
                                 Seconds window) {
  std::optional<double> total;
  for (const SeriesWindow* s : replicas) {
    if (auto r = s->Rate(now, window)) total = total.value_or(0) + *r;
  }
  return total;
}

std::optional<double> FractionAboveAcrossReplicas(std::span<const HistogramWindow* const> replicas,
                                                  Seconds now, Seconds window, double threshold) {
  double above = 0, all = 0;
  for (const HistogramWindow* h : replicas) {
    auto rate = h->ObservationRate(now, window);
    auto fraction = h->FractionAbove(now, window, threshold);
    if (!rate || !fraction) continue;
    above += *fraction * *rate;
    all += *rate;
  }
  if (all <= 0) return std::nullopt;
  return above / all;
}

}  // namespace gpuscale::metrics
