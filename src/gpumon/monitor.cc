#include "gpumon/monitor.h"

#include <utility>

namespace gpuscale::gpu {

void GpuStats::Add(const GpuInfo& gpu) {
  name = gpu.name;
  utilization_percent.Add(gpu.utilization_percent);
  if (gpu.memory_used_mb) memory_used_mb.Add(static_cast<double>(*gpu.memory_used_mb));
  if (gpu.memory_used_mb && gpu.memory_total_mb && *gpu.memory_total_mb > 0) {
    memory_usage_percent.Add(100.0 * static_cast<double>(*gpu.memory_used_mb) /
                             static_cast<double>(*gpu.memory_total_mb));
  }
  temperature_c.Add(gpu.temperature_c);
  power_draw_w.Add(gpu.power_draw_w);
}

Monitor::Monitor(GpuBackend& backend, Clock& clock, MonitorOptions options)
    : backend_(backend), clock_(clock), options_(options) {}

Monitor::~Monitor() { Stop(); }

Result<GpuSnapshot> Monitor::Snapshot(bool bypass_cache) {
  MutexLock lock(backend_mu_);
  const Seconds now = clock_.Now();
  if (!bypass_cache && cache_ && now - cache_->taken_at < options_.cache_ttl &&
      now >= cache_->taken_at) {
    return *cache_;
  }
  GS_ASSIGN_OR_RETURN(GpuSnapshot snapshot, backend_.Query(now));
  cache_ = snapshot;
  return snapshot;
}

Status Monitor::SampleOnce() {
  Result<GpuSnapshot> snapshot = Snapshot(/*bypass_cache=*/true);
  if (!snapshot) {
    MutexLock lock(stats_mu_);
    ++failed_sample_count_;
    last_error_ = snapshot.error();
    return Unexpected<Error>(snapshot.error());
  }
  Record(*snapshot);
  return OkStatus();
}

void Monitor::Record(const GpuSnapshot& snapshot) {
  HistoryPoint point{snapshot.taken_at, snapshot.gpus};
  for (GpuInfo& gpu : point.gpus) gpu.processes.clear();
  MutexLock lock(stats_mu_);
  for (const GpuInfo& gpu : snapshot.gpus) stats_[gpu.index].Add(gpu);
  history_.push_back(std::move(point));
  while (history_.size() > options_.history_capacity) history_.pop_front();
  ++sample_count_;
}

void Monitor::Start() {
  MutexLock lock(lifecycle_mu_);
  if (thread_.joinable()) return;
  {
    MutexLock wake_lock(wake_mu_);
    stop_requested_ = false;
  }
  thread_ = std::thread([this] { SamplerLoop(); });
}

void Monitor::Stop() {
  MutexLock lock(lifecycle_mu_);
  if (!thread_.joinable()) return;
  {
    MutexLock wake_lock(wake_mu_);
    stop_requested_ = true;
  }
  wake_.NotifyAll();
  thread_.join();
}

bool Monitor::running() const {
  MutexLock lock(lifecycle_mu_);
  return thread_.joinable();
}

void Monitor::SamplerLoop() {
  while (true) {
    {
      MutexLock lock(wake_mu_);
      if (stop_requested_) return;
    }
    // Failures are counted and kept in last_error_; the loop keeps sampling, since a
    // driver hiccup or a half-written inventory file is usually transient.
    (void)SampleOnce();
    MutexLock lock(wake_mu_);
    if (wake_.WaitFor(wake_mu_, options_.sample_interval,
                      [this]() GS_REQUIRES(wake_mu_) { return stop_requested_; })) {
      return;
    }
  }
}

GpuStatsMap Monitor::Stats() const {
  MutexLock lock(stats_mu_);
  return stats_;
}

std::vector<HistoryPoint> Monitor::History() const {
  MutexLock lock(stats_mu_);
  return {history_.begin(), history_.end()};
}

int64_t Monitor::sample_count() const {
  MutexLock lock(stats_mu_);
  return sample_count_;
}

int64_t Monitor::failed_sample_count() const {
  MutexLock lock(stats_mu_);
  return failed_sample_count_;
}

std::optional<Error> Monitor::last_error() const {
  MutexLock lock(stats_mu_);
  return last_error_;
}

void Monitor::ResetStats() {
  MutexLock lock(stats_mu_);
  stats_.clear();
  history_.clear();
  sample_count_ = 0;
  failed_sample_count_ = 0;
  last_error_.reset();
}

}  // namespace gpuscale::gpu
