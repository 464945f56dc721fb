// DaemonMetrics: gpuscale's own /metrics, in the Prometheus text format with HELP/TYPE
// (metrics/exposition_writer.h). The daemon keeps the counters and the loop-duration
// histogram here and renders them with a GPU snapshot and per-service replica counts:
//   gpuscale_gpu_utilization_ratio, gpuscale_gpu_memory_used_bytes,
//   gpuscale_gpu_memory_total_bytes, gpuscale_gpu_temperature_celsius,
//   gpuscale_gpu_power_watts, gpuscale_gpu_availability_score  {gpu, uuid, name}
//   gpuscale_service_replicas{service, phase}, gpuscale_service_desired_replicas{service},
//   gpuscale_decisions_total{service}, gpuscale_scrape_errors_total{service},
//   gpuscale_control_loop_duration_seconds (histogram),
//   gpuscale_control_loop_phase_seconds_total{phase} (where the ticks' time went: probe,
//   collect, services, persist, trim, publish), gpuscale_scrapes_total (replica scrapes that
//   ended), gpuscale_scrapes_in_flight (scrapes the last tick's collect phase left running
//   past its cutoff), gpuscale_prom_queries_in_flight (PromQL queries it left running or
//   queued), gpuscale_leases,
//   gpuscale_store_errors_total, gpuscale_store_history_deleted_rows_total{reason} (decision
//   and event rows the `retention:` section deleted: reason "age" or "size").
// Absent GPU readings are left out (never written as 0).
//
// Ownership: plain values. Thread-safety: none; the daemon guards it with its view mutex.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu/availability_score.h"
#include "gpu/gpu_info.h"

namespace gpuscale::daemon {

// One service's gauges at render time.
struct ServiceGauges {
  std::string service;
  int pending = 0, starting = 0, ready = 0, draining = 0;
  int desired = 0;
};

class DaemonMetrics {
 public:
  // Buckets of the loop-duration histogram, seconds: finer around 1 s, where a fleet-scale
  // daemon on a 1 s loop lives (is its p99 under the interval or over it?).
  static constexpr std::array<double, 13> kLoopBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                         0.75,  0.9,  1,     1.5,  2.5, 5};

  void ObserveLoop(double seconds);
  // Adds one tick's wall time in `phase` (a fixed name: the label's values stay few).
  void AddLoopPhase(const std::string& phase, double seconds) { loop_phases_[phase] += seconds; }
  void AddDecision(const std::string& service) { ++decisions_[service]; }
  void AddScrapeErrors(const std::string& service, int n) { scrape_errors_[service] += n; }
  void set_scrapes(int64_t ended, size_t in_flight) {
    scrapes_total_ = ended;
    scrapes_in_flight_ = in_flight;
  }
  void set_prom_queries_in_flight(size_t in_flight) { prom_queries_in_flight_ = in_flight; }
  // Store write failures so far (StoreHealth counts them; copied here before Render).
  void set_store_errors(int64_t total) { store_errors_ = total; }
  void AddHistoryDeleted(int64_t by_age, int64_t by_size) {
    history_deleted_age_ += by_age;
    history_deleted_size_ += by_size;
  }
  void ForgetService(const std::string& service);
  int64_t store_errors() const { return store_errors_; }

  // `gpus` may be null (GPUs unreadable: no GPU families).
  std::string Render(const gpu::GpuSnapshot* gpus, const gpu::ScoreWeights& weights,
                     const std::vector<ServiceGauges>& services, size_t leases) const;

 private:
  std::array<int64_t, kLoopBounds.size()> loop_buckets_{};  // non-cumulative counts
  int64_t loop_count_ = 0;
  double loop_sum_ = 0;
  std::map<std::string, double> loop_phases_;
  std::map<std::string, int64_t> decisions_;
  std::map<std::string, int64_t> scrape_errors_;
  int64_t store_errors_ = 0;
  int64_t history_deleted_age_ = 0;
  int64_t history_deleted_size_ = 0;
  int64_t scrapes_total_ = 0;
  size_t scrapes_in_flight_ = 0;
  size_t prom_queries_in_flight_ = 0;
};

}  // namespace gpuscale::daemon
