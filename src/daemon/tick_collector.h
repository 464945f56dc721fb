// TickCollector: one control tick's metric collection for every service -- which replicas
// are scraped (ready and draining ones; a service whose policy reads none of its replicas'
// metrics every scrape.view_only_interval only, draining replicas every tick) and which
// PromQL queries run, collected together under the `scrape:` cutoff (metric_collector.h), and
// on simulated GPUs what the emulated replicas say they load on their GPUs.
//
// Ownership: owns the replica scrapes (connections kept from one tick to the next) and the
// PromQL worker pool; its destruction waits for the queries running then (each bounded by
// prometheus.timeout_seconds). Thread-safety: one caller at a time (the daemon's loop thread,
// under loop_mu_), its counts included.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "daemon/service_slot.h"
#include "gpumon/simulated_load.h"
#include "orch/service_orchestrator.h"
#include "scrape/metric_collector.h"
#include "scrape/prom_queries.h"
#include "scrape/replica_scrapes.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {

// Jobs of one tick, with the slices that belong to each service.
struct TickObservations {
  std::vector<metrics::ScrapeJob> scrapes;
  std::vector<metrics::QueryJob> queries;
  struct Range {
    size_t scrape_begin = 0, scrape_end = 0, query_begin = 0, query_end = 0;
    std::vector<orch::ReplicaInfo> replicas;  // scraped ones, same order as the scrapes
    std::vector<PromQuery> prom;              // same order as the queries
    std::vector<size_t> prom_runtime;         // which of the slot's runtimes asked each
  };
  std::map<std::string, Range> ranges;  // by service
};

class TickCollector {
 public:
  // `threads`: concurrent queries; `scrape_timeout`: per replica scrape (DaemonOptions').
  TickCollector(size_t threads, Seconds scrape_timeout)
      : scrape_timeout_(scrape_timeout),
        prom_queries_(std::make_unique<metrics::PromQueries>(threads)) {}

  // Scrapes and queries for `services` at `now` (sets each slot's next_view_scrape), by the
  // config's `scrape:` and `prometheus:` sections; what has not answered by
  // `cutoff` is carried over to a later tick.
  TickObservations Collect(ServiceSlots& services, Seconds now, const DaemonConfig& config,
                           std::chrono::steady_clock::time_point cutoff);
  // Simulated GPUs only (`board` non-null): what each scraped emulated replica reports on its
  // GPUs, read by the monitor's next sample. A replica whose scrape is in flight keeps its
  // last report.
  void PostGpuLoad(const TickObservations& observed, gpu::GpuLoadBoard* board);

  const metrics::ReplicaScrapes& scrapes() const { return *scrapes_; }
  size_t queries_in_flight() const { return prom_queries_->in_flight(); }

 private:
  const Seconds scrape_timeout_;
  std::unique_ptr<metrics::ReplicaScrapes> scrapes_ = std::make_unique<metrics::ReplicaScrapes>();
  std::unique_ptr<metrics::PromQueries> prom_queries_;
  // Each replica's last posted load, kept while its next scrape is in flight.
  std::map<std::string, gpu::GpuLoads> replica_gpu_loads_;
};

}  // namespace gpuscale::daemon
