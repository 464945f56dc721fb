#include "daemon/tick_collector.h"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "experiments/emulated_gpu_load.h"
#include "metrics/vllm_metric_names.h"

namespace gpuscale::daemon {

TickObservations TickCollector::Collect(ServiceSlots& services, Seconds now,
                                        const DaemonConfig& config,
                                        std::chrono::steady_clock::time_point cutoff) {
  TickObservations observed;
  for (auto& [name, slot] : services) {
    TickObservations::Range& range = observed.ranges[name];
    range.scrape_begin = observed.scrapes.size();
    // A service whose policy reads none of its replicas' metrics (a gateway-fronted one
    // scaling on what the door measured, say) has them scraped for the view only, every
    // view_only_interval; draining replicas every tick, since their drain waits on the count.
    const bool view_only = !slot->PolicyReadsReplicas();
    const bool view_due = !view_only || now >= slot->next_view_scrape;
    if (view_only && view_due) slot->next_view_scrape = now + config.scrape.view_only_interval;
    for (orch::ReplicaInfo& r : slot->orch->Replicas(now)) {
      const bool serving =
          r.phase == scale::ReplicaPhase::kReady || r.phase == scale::ReplicaPhase::kDraining;
      if (!serving || r.port <= 0 || r.state == orch::ReplicaState::kStopping) continue;
      metrics::ScrapeJob job;
      job.replica = r.id;
      job.url = fmt::format("http://{}:{}{}", r.host, r.port, slot->config.metrics_path);
      job.due = view_due || r.phase == scale::ReplicaPhase::kDraining;
      observed.scrapes.push_back(std::move(job));
      range.replicas.push_back(std::move(r));
    }
    range.scrape_end = observed.scrapes.size();
    range.query_begin = observed.queries.size();
    for (size_t i = 0; i < slot->runtimes.size(); ++i) {
      for (PromQuery& q : slot->runtimes[i]->PromQueries()) {
        observed.queries.push_back({q.promql});
        range.prom.push_back(std::move(q));
        range.prom_runtime.push_back(i);
      }
    }
    range.query_end = observed.queries.size();
  }
  // Only what some service's view or policy reads, and the emulated GPUs' load, is parsed.
  std::set<std::string, std::less<>> families = {
      std::string(metrics::emulated::kGpuUtilizationRatio),
      std::string(metrics::emulated::kGpuMemoryUsedBytes)};
  for (auto& [name, slot] : services) {
    for (const auto& runtime : slot->runtimes) runtime->AddScrapedFamilies(families);
  }
  metrics::CollectorOptions options;
  options.scrape.families = std::move(families);
  options.scrape.timeout = scrape_timeout_;
  // A straggler (scrape or query) does not hold the tick: what has not answered by the
  // cutoff is carried over.
  options.scrape.cutoff = cutoff;
  options.scrape.stale_after_ticks = config.scrape.stale_after_ticks;
  options.prometheus_url = config.prometheus.url;
  options.query_timeout = config.prometheus.timeout;
  metrics::Collect(observed.scrapes, observed.queries, std::move(options), *scrapes_,
                   *prom_queries_);
  return observed;
}

void TickCollector::PostGpuLoad(const TickObservations& observed, gpu::GpuLoadBoard* board) {
  if (board == nullptr) return;
  std::map<std::string, gpu::GpuLoads> by_replica;
  for (const auto& [name, range] : observed.ranges) {
    for (size_t i = range.scrape_begin; i < range.scrape_end; ++i) {
      const metrics::ScrapeJob& scrape = observed.scrapes[i];
      const orch::ReplicaInfo& replica = range.replicas[i - range.scrape_begin];
      if (scrape.kind == metrics::SampleKind::kKept) {
        auto last = replica_gpu_loads_.find(replica.id);
        if (last != replica_gpu_loads_.end()) by_replica[replica.id] = std::move(last->second);
        continue;
      }
      if (!scrape.result || replica.gpus.empty()) continue;
      // Replica ids already name their service ("demo-0").
      const gpu::GpuProcess process{replica.pid, std::nullopt, "replica " + replica.id};
      gpu::GpuLoads own;
      experiments::AddEmulatedGpuLoad(*scrape.result, replica.gpus, process, own);
      if (!own.empty()) by_replica.emplace(replica.id, std::move(own));
    }
  }
  board->Set("services", gpu::SumLoads(by_replica));
  replica_gpu_loads_ = std::move(by_replica);
}

}  // namespace gpuscale::daemon
