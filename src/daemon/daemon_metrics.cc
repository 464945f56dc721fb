// gpuscale's own /metrics (daemon_metrics.h). Units follow Prometheus conventions: bytes,
// ratios in 0..1, seconds.
#include "daemon/daemon_metrics.h"

#include <functional>
#include <limits>
#include <optional>

#include "metrics/exposition_writer.h"

namespace gpuscale::daemon {
namespace {

using metrics::Label;
using metrics::MetricType;

constexpr double kBytesPerMib = 1024.0 * 1024.0;

using GpuReading = std::function<std::optional<double>(const gpu::GpuInfo&)>;

void WriteGpuFamily(metrics::ExpositionWriter& w, const gpu::GpuSnapshot& gpus,
                    std::string_view name, std::string_view help, const GpuReading& read) {
  w.BeginFamily(name, MetricType::kGauge, help);
  for (const gpu::GpuInfo& g : gpus.gpus) {
    const std::optional<double> value = read(g);
    if (!value) continue;
    const std::vector<Label> labels = {
        {"gpu", std::to_string(g.index)}, {"uuid", g.uuid}, {"name", g.name}};
    w.AddValue(labels, *value);
  }
}

// The price carries the type (and whether the GPU is spot) as labels, so that a query can
// sum the fleet's cost by type: sum by (type) (gpuscale_gpu_price_per_hour). A GPU whose
// price is unknown has no series (absent, not 0).
void WritePrices(metrics::ExpositionWriter& w, const gpu::GpuSnapshot& gpus) {
  w.BeginFamily("gpuscale_gpu_price_per_hour", MetricType::kGauge,
                "Price of one GPU-hour, in the currency of the configured prices.");
  for (const gpu::GpuInfo& g : gpus.gpus) {
    if (!g.price_per_hour) continue;
    const std::vector<Label> labels = {{"gpu", std::to_string(g.index)},
                                       {"uuid", g.uuid},
                                       {"name", g.name},
                                       {"type", g.type},
                                       {"spot", g.spot ? "true" : "false"}};
    w.AddValue(labels, *g.price_per_hour);
  }
}

void WriteGpus(metrics::ExpositionWriter& w, const gpu::GpuSnapshot& gpus,
               const gpu::ScoreWeights& weights) {
  auto mib = [](const std::optional<int64_t>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return static_cast<double>(*v) * kBytesPerMib;
  };
  WriteGpuFamily(w, gpus, "gpuscale_gpu_utilization_ratio", "GPU busy share (0..1).",
                 [](const gpu::GpuInfo& g) -> std::optional<double> {
                   if (!g.utilization_percent) return std::nullopt;
                   return *g.utilization_percent / 100.0;
                 });
  WriteGpuFamily(w, gpus, "gpuscale_gpu_memory_used_bytes", "GPU memory in use.",
                 [&](const gpu::GpuInfo& g) { return mib(g.memory_used_mb); });
  WriteGpuFamily(w, gpus, "gpuscale_gpu_memory_total_bytes", "GPU memory size.",
                 [&](const gpu::GpuInfo& g) { return mib(g.memory_total_mb); });
  WriteGpuFamily(w, gpus, "gpuscale_gpu_temperature_celsius", "GPU temperature.",
                 [](const gpu::GpuInfo& g) { return g.temperature_c; });
  WriteGpuFamily(w, gpus, "gpuscale_gpu_power_watts", "GPU power draw.",
                 [](const gpu::GpuInfo& g) { return g.power_draw_w; });
  WriteGpuFamily(w, gpus, "gpuscale_gpu_availability_score",
                 "Availability score (0..1, higher = more attractive for new work).",
                 [&](const gpu::GpuInfo& g) -> std::optional<double> {
                   return gpu::AvailabilityScore(g, weights);
                 });
  WritePrices(w, gpus);
}

void WriteServices(metrics::ExpositionWriter& w, const std::vector<ServiceGauges>& services) {
  w.BeginFamily("gpuscale_service_replicas", MetricType::kGauge, "Replicas of a service by phase.");
  for (const ServiceGauges& s : services) {
    const std::pair<const char*, int> phases[] = {{"pending", s.pending},
                                                  {"starting", s.starting},
                                                  {"ready", s.ready},
                                                  {"draining", s.draining}};
    for (const auto& [phase, count] : phases) {
      const std::vector<Label> labels = {{"service", s.service}, {"phase", phase}};
      w.AddValue(labels, count);
    }
  }
  w.BeginFamily("gpuscale_service_desired_replicas", MetricType::kGauge,
                "Replicas the last control tick aimed at (after override and bounds).");
  for (const ServiceGauges& s : services) {
    const std::vector<Label> labels = {{"service", s.service}};
    w.AddValue(labels, s.desired);
  }
}

// In the text format 0.0.4 a counter's HELP and TYPE lines name the sample itself, `_total`
// included (only OpenMetrics names the family without it): a `# TYPE x counter` over samples
// x_total declares an empty family x and leaves x_total untyped and without help.
void WriteCounter(metrics::ExpositionWriter& w, std::string_view name, std::string_view help,
                  const std::map<std::string, int64_t>& by_service) {
  w.BeginFamily(name, MetricType::kCounter, help);
  for (const auto& [service, count] : by_service) {
    const std::vector<Label> labels = {{"service", service}};
    w.AddValue(labels, static_cast<double>(count));
  }
}

}  // namespace

void DaemonMetrics::ObserveLoop(double seconds) {
  for (size_t i = 0; i < kLoopBounds.size(); ++i) {
    if (seconds <= kLoopBounds[i]) {
      ++loop_buckets_[i];
      break;
    }
  }
  ++loop_count_;
  loop_sum_ += seconds;
}

void DaemonMetrics::ForgetService(const std::string& service) {
  decisions_.erase(service);
  scrape_errors_.erase(service);
}

std::string DaemonMetrics::Render(const gpu::GpuSnapshot* gpus, const gpu::ScoreWeights& weights,
                                  const std::vector<ServiceGauges>& services, size_t leases) const {
  metrics::ExpositionWriter w;
  if (gpus != nullptr) WriteGpus(w, *gpus, weights);
  WriteServices(w, services);
  WriteCounter(w, "gpuscale_decisions_total", "Policy decisions taken (one per service and tick).",
               decisions_);
  WriteCounter(w, "gpuscale_scrape_errors_total", "Failed scrapes of replicas' /metrics.",
               scrape_errors_);
  w.BeginFamily("gpuscale_control_loop_duration_seconds", MetricType::kHistogram,
                "Wall time of one control tick (poll, scrape, decide, reconcile, persist).");
  std::vector<double> cumulative;
  int64_t running = 0;
  for (int64_t c : loop_buckets_) cumulative.push_back(static_cast<double>(running += c));
  std::vector<double> bounds(kLoopBounds.begin(), kLoopBounds.end());
  bounds.push_back(std::numeric_limits<double>::infinity());
  cumulative.push_back(static_cast<double>(loop_count_));
  w.AddHistogram({}, bounds, cumulative, loop_sum_);
  w.BeginFamily("gpuscale_control_loop_phase_seconds_total", MetricType::kCounter,
                "Wall time of the control ticks by phase: probe (commands, probes, polls), "
                "collect (scrapes and queries), services (decide and reconcile), persist "
                "(leases, events, retention), trim (freed memory returned, once a minute), "
                "publish (API views and gateway routes).");
  for (const auto& [phase, seconds] : loop_phases_) {
    const std::vector<metrics::Label> labels = {{"phase", phase}};
    w.AddValue(labels, seconds);
  }
  w.BeginFamily("gpuscale_scrapes_total", MetricType::kCounter,
                "Replica scrapes that ended: answered, failed or timed out.");
  w.AddValue({}, static_cast<double>(scrapes_total_));
  w.BeginFamily("gpuscale_scrapes_in_flight", MetricType::kGauge,
                "Replica scrapes still in flight when the last tick's collect phase reached its "
                "cutoff (carried to the next tick).");
  w.AddValue({}, static_cast<double>(scrapes_in_flight_));
  w.BeginFamily("gpuscale_prom_queries_in_flight", MetricType::kGauge,
                "PromQL queries still running or queued when the last tick's collect phase "
                "reached its cutoff (answering a later tick).");
  w.AddValue({}, static_cast<double>(prom_queries_in_flight_));
  w.BeginFamily("gpuscale_leases", MetricType::kGauge, "GPU leases held by replicas.");
  w.AddValue({}, static_cast<double>(leases));
  w.BeginFamily("gpuscale_store_errors_total", MetricType::kCounter,
                "Failed writes to the state database (the loop continues).");
  w.AddValue({}, static_cast<double>(store_errors_));
  w.BeginFamily("gpuscale_store_history_deleted_rows_total", MetricType::kCounter,
                "Decision and event rows deleted by the retention section, by reason (age, size).");
  const std::pair<const char*, int64_t> deleted[] = {{"age", history_deleted_age_},
                                                     {"size", history_deleted_size_}};
  for (const auto& [reason, rows] : deleted) {
    const std::vector<metrics::Label> labels = {{"reason", reason}};
    w.AddValue(labels, static_cast<double>(rows));
  }
  return w.Take();
}

}  // namespace gpuscale::daemon
