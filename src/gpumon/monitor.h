// Monitor: the live view of a GpuBackend. It caches the latest snapshot for a TTL (so many
// readers cost one backend call), runs an optional sampler thread that aggregates
// min / max / mean / count per GPU and metric, and keeps a bounded history ring for charts.
//
// Ownership: borrows the backend and the clock (both must outlive the Monitor); owns the
// sampler thread, which the destructor stops.
// Time: cache age and sample stamps come from the Clock (a ManualClock in tests); the gap
// between samples is real time (a condition-variable wait), because a thread cannot sleep on
// a manual clock. Tests drive SampleOnce() directly for deterministic statistics.
// Thread-safety: every public method may be called from any thread. backend_mu_ serializes
// backend calls (GpuBackend is single-caller) and guards the cache; stats_mu_ guards stats
// and history so readers never wait on a slow nvidia-smi; lifecycle_mu_ orders Start/Stop.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/result.h"
#include "gpu/gpu_info.h"
#include "gpu/gpu_stats.h"

namespace gpuscale::gpu {

struct MonitorOptions {
  Seconds cache_ttl{5};            // a snapshot younger than this is served from cache
  Seconds sample_interval{1};      // real time between sampler-thread samples
  size_t history_capacity = 3600;  // samples kept for charts (1 h at the default interval)
};

class Monitor {
 public:
  // REQUIRES: options.sample_interval > 0, options.history_capacity > 0.
  Monitor(GpuBackend& backend, Clock& clock, MonitorOptions options = {});
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // The cached snapshot when younger than cache_ttl, else a fresh one (which is cached).
  // `bypass_cache` forces a backend call. Errors: the backend's; a failed call leaves the
  // previous cache in place (still served to later calls while it is fresh).
  Result<GpuSnapshot> Snapshot(bool bypass_cache = false);

  // Takes one fresh snapshot and folds it into stats and history. The sampler thread calls
  // this every sample_interval; tests call it directly. Errors: the backend's (also kept as
  // last_error()).
  Status SampleOnce();

  // Starts the sampler thread (first sample immediately). No-op when already running.
  void Start();
  // Stops and joins the sampler thread. No-op when not running. REQUIRES: not called from
  // the sampler thread itself (it never calls back into user code, so this cannot happen).
  void Stop();
  bool running() const;

  GpuStatsMap Stats() const;
  std::vector<HistoryPoint> History() const;  // oldest first
  int64_t sample_count() const;               // successful samples since start/reset
  int64_t failed_sample_count() const;
  std::optional<Error> last_error() const;
  // Clears stats, history and counters (e.g. at the start of a monitoring window).
  void ResetStats();

 private:
  void SamplerLoop();
  void Record(const GpuSnapshot& snapshot);

  GpuBackend& backend_;
  Clock& clock_;
  const MonitorOptions options_;

  Mutex backend_mu_;  // held across backend_ calls, so one query runs at a time
  std::optional<GpuSnapshot> cache_ GS_GUARDED_BY(backend_mu_);

  mutable Mutex stats_mu_;
  GpuStatsMap stats_ GS_GUARDED_BY(stats_mu_);
  std::deque<HistoryPoint> history_ GS_GUARDED_BY(stats_mu_);
  int64_t sample_count_ GS_GUARDED_BY(stats_mu_) = 0;
  int64_t failed_sample_count_ GS_GUARDED_BY(stats_mu_) = 0;
  std::optional<Error> last_error_ GS_GUARDED_BY(stats_mu_);

  mutable Mutex lifecycle_mu_;  // orders Start and Stop
  std::thread thread_ GS_GUARDED_BY(lifecycle_mu_);
  Mutex wake_mu_;  // for the sampler's timed wait
  CondVar wake_;
  bool stop_requested_ GS_GUARDED_BY(wake_mu_) = false;
};

}  // namespace gpuscale::gpu
