#include "sim/metric_view.h"

#include "metrics/replica_aggregation.h"
#include "scale/metric_names.h"

namespace gpuscale::sim {

namespace names = scale::metric_names;

namespace {

// Longest window any query reads (the KEDA query's 5 minutes) plus slack.
constexpr Seconds kRetention{330};

std::vector<double> WithInf(const std::vector<double>& bounds) {
  std::vector<double> out = bounds;
  out.push_back(std::numeric_limits<double>::infinity());
  return out;
}

void AddHistogram(metrics::HistogramWindow& window, Seconds now,
                  const std::vector<double>& bounds_with_inf, const HistogramCounts& h) {
  std::vector<double> cumulative = h.Cumulative();
  if (cumulative.empty()) cumulative.assign(bounds_with_inf.size(), 0.0);
  window.Add(now, bounds_with_inf, cumulative, h.sum);
}

}  // namespace

MetricView::MetricView(const SloSpec& slo) : slo_(slo) {}

void MetricView::Scrape(Seconds now, int slot, const SimReplica& replica) {
  auto& s = series_[slot];
  if (!s) {
    s = std::make_unique<Series>(
        Series{metrics::SeriesWindow(kRetention), metrics::SeriesWindow(kRetention),
               metrics::SeriesWindow(kRetention), metrics::SeriesWindow(kRetention),
               metrics::SeriesWindow(kRetention), metrics::SeriesWindow(kRetention),
               metrics::SeriesWindow(kRetention), metrics::SeriesWindow(kRetention),
               metrics::HistogramWindow(kRetention), metrics::HistogramWindow(kRetention),
               metrics::HistogramWindow(kRetention)});
  }
  static const std::vector<double> kE2e = WithInf(E2eBuckets());
  static const std::vector<double> kTtft = WithInf(TtftBuckets());
  static const std::vector<double> kTpot = WithInf(TpotBuckets());
  s->waiting.Add(now, replica.Waiting());
  s->running.Add(now, replica.Running());
  s->kv_usage.Add(now, replica.KvUsageRatio());
  s->success.Add(now, static_cast<double>(replica.completed()));
  s->prompt_tokens.Add(now, static_cast<double>(replica.prompt_tokens()));
  s->generation_tokens.Add(now, static_cast<double>(replica.generation_tokens()));
  // vllm:prefix_cache_queries_total / _hits_total (tokens), exported as vLLM does.
  s->prefix_queries.Add(now, static_cast<double>(replica.prefix_cache_queries()));
  s->prefix_hits.Add(now, static_cast<double>(replica.prefix_cache_hits()));
  AddHistogram(s->e2e, now, kE2e, replica.e2e());
  AddHistogram(s->ttft, now, kTtft, replica.ttft());
  AddHistogram(s->tpot, now, kTpot, replica.tpot());
}

void MetricView::Forget(int slot) { series_.erase(slot); }

std::optional<double> MetricView::SumRate(Seconds now, Seconds window,
                                          metrics::SeriesWindow Series::*counter) const {
  std::vector<const metrics::SeriesWindow*> windows;
  windows.reserve(series_.size());
  for (const auto& [slot, s] : series_) windows.push_back(&((*s).*counter));
  return metrics::SumOfRates(windows, now, window);
}

std::optional<double> MetricView::FractionAbove(
    Seconds now, Seconds window, double threshold,
    metrics::HistogramWindow Series::*histogram) const {
  std::vector<const metrics::HistogramWindow*> windows;
  windows.reserve(series_.size());
  for (const auto& [slot, s] : series_) windows.push_back(&((*s).*histogram));
  return metrics::FractionAboveAcrossReplicas(windows, now, window, threshold);
}

void MetricView::Fill(Seconds now, const std::vector<int>& ready_slots,
                      scale::ScalingInput& input) const {
  scale::MetricValue waiting, running, kv;
  int queued = 0, busy = 0;
  for (int slot : ready_slots) {
    auto it = series_.find(slot);
    if (it == series_.end() || it->second->waiting.empty()) continue;
    const Series& s = *it->second;
    waiting.per_replica.push_back(*s.waiting.Latest());
    running.per_replica.push_back(*s.running.Latest());
    kv.per_replica.push_back(*s.kv_usage.Latest());
    queued += static_cast<int>(*s.waiting.Latest());
    busy += static_cast<int>(*s.running.Latest());
  }
  input.metrics[std::string(names::kWaiting)] = std::move(waiting);
  input.metrics[std::string(names::kRunning)] = std::move(running);
  input.metrics[std::string(names::kKvUsage)] = std::move(kv);
  auto service = [&](std::string_view name, std::optional<double> value) {
    if (!value) return;
    scale::MetricValue v;
    v.source = scale::MetricSource::kPrometheus;
    v.service_value = *value;
    input.metrics[std::string(name)] = std::move(v);
  };
  service(names::kSuccessRate30s, SumRate(now, Seconds{30}, &Series::success));
  service(names::kSuccessRate2m, SumRate(now, Seconds{120}, &Series::success));
  service(names::kPromptTokensRate30s, SumRate(now, Seconds{30}, &Series::prompt_tokens));
  service(names::kGenerationTokensRate30s,
          SumRate(now, Seconds{30}, &Series::generation_tokens));
  service(names::kPrefixCacheQueriesRate30s, SumRate(now, Seconds{30}, &Series::prefix_queries));
  service(names::kPrefixCacheHitsRate30s, SumRate(now, Seconds{30}, &Series::prefix_hits));
  service(names::kTtftViolationRatio,
          FractionAbove(now, Seconds{60}, slo_.ttft_seconds, &Series::ttft));
  service(names::kTpotViolationRatio,
          FractionAbove(now, Seconds{60}, slo_.tpot_seconds, &Series::tpot));
  service(names::kE2eOver5sRatio, FractionAbove(now, Seconds{300}, 5.0, &Series::e2e));
  input.tasks = {scale::TaskDemand{{}, queued, busy}};
}

}  // namespace gpuscale::sim
