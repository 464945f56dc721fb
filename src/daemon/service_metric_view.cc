#include "daemon/service_metric_view.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <utility>

#include "metrics/metric_lookup.h"
#include "metrics/metric_window.h"
#include "metrics/replica_aggregation.h"
#include "metrics/vllm_metric_names.h"
#include "scale/metric_names.h"

namespace gpuscale::daemon {

namespace names = scale::metric_names;

namespace {

namespace vllm = metrics::vllm;

// vLLM's histogram families and finished-request counter (metrics/vllm_metric_names.h).
constexpr std::string_view kTtftHistogram = vllm::kTimeToFirstTokenSeconds;
constexpr std::string_view kE2eHistogram = vllm::kE2eRequestLatencySeconds;
constexpr std::string_view kSuccessCounter = vllm::kRequestSuccessTotal;
// TPOT, per replica the first of these it exports: the per-request histogram matches the
// SLO's "share of requests" (and the simulator's and the gateway's per-request TPOT); the
// per-gap inter-token histogram, under its current and its former name, serves engines
// without it (vLLM before 0.11).
constexpr std::array<std::string_view, 3> kTpotHistograms = {
    vllm::kRequestTimePerOutputTokenSeconds, vllm::kInterTokenLatencySeconds,
    vllm::kTimePerOutputTokenSecondsFormer};
// vLLM's token counters (prompt tokens as they are prefilled, generated tokens as they are
// produced), for the slo policy's token mode.
constexpr std::string_view kPromptTokensCounter = vllm::kPromptTokensTotal;
constexpr std::string_view kGenerationTokensCounter = vllm::kGenerationTokensTotal;
// Gauges vLLM renamed: {current, former}. Each name is filled from the other when a replica
// exports only one, so a policy written with either name reads old and new engines alike.
constexpr std::array<std::pair<std::string_view, std::string_view>, 1> kRenamedGauges = {{
    {names::kKvUsage, names::kKvUsageFormer},
}};
// The windows kept per replica, one bit each: a service value is computed from one of them.
enum Series : unsigned {
  kSuccessSeries = 1u << 0,
  kPromptTokensSeries = 1u << 1,
  kGenerationTokensSeries = 1u << 2,
  kTtftSeries = 1u << 3,
  kTpotSeries = 1u << 4,
  kE2eSeries = 1u << 5,
  kAllSeries = (1u << 6) - 1,
};

// How each policy metric is read from scrapes: the families any one of which provides it,
// and the window it is computed from (0: the latest value, no window). Names not listed are
// read from the family of the same name; kernel and gateway metrics do not come from scrapes
// at all (KernelMetrics, FillGateway).
struct ScrapeSource {
  std::vector<std::string_view> families;
  unsigned series = 0;
};
const std::map<std::string_view, ScrapeSource>& ScrapeSources() {
  static const auto* kSources = new std::map<std::string_view, ScrapeSource>{
      {names::kKvUsage, {{names::kKvUsage, names::kKvUsageFormer}}},
      {names::kKvUsageFormer, {{names::kKvUsage, names::kKvUsageFormer}}},
      {names::kSuccessRate30s, {{kSuccessCounter}, kSuccessSeries}},
      {names::kSuccessRate2m, {{kSuccessCounter}, kSuccessSeries}},
      {names::kPromptTokensRate30s, {{kPromptTokensCounter}, kPromptTokensSeries}},
      {names::kGenerationTokensRate30s, {{kGenerationTokensCounter}, kGenerationTokensSeries}},
      {names::kTtftViolationRatio, {{kTtftHistogram}, kTtftSeries}},
      {names::kTpotViolationRatio, {{kTpotHistograms.begin(), kTpotHistograms.end()}, kTpotSeries}},
      {names::kE2eOver5sRatio, {{kE2eHistogram}, kE2eSeries}},
  };
  return *kSources;
}

// The policies' names for vLLM's gauges (scale/, which is pure, cannot include metrics/)
// are vLLM's own.
static_assert(names::kWaiting == vllm::kNumRequestsWaiting);
static_assert(names::kRunning == vllm::kNumRequestsRunning);
static_assert(names::kKvUsage == vllm::kKvCacheUsagePerc);
static_assert(names::kKvUsageFormer == vllm::kGpuCacheUsagePercFormer);

// The KEDA query of the Corrino (OCI AI Blueprints) autoscaling recipes: share of requests
// slower than 5 s end to end.
constexpr double kE2eThresholdSeconds = 5.0;

// Adds the histogram `name` (label sets summed) to `window`; absent histograms add nothing,
// so a replica that does not expose one simply does not count towards its ratio.
void AddHistogram(metrics::HistogramWindow& window, Seconds now,
                  const metrics::Exposition& exposition, std::string_view name) {
  auto h = metrics::FindHistogram(exposition, name);
  if (!h) return;
  window.Add(now, h->upper_bounds, h->cumulative_counts, h->sum);
}

// Adds the first of `names` that the exposition has (see kTpotHistograms).
template <size_t N>
void AddFirstHistogram(metrics::HistogramWindow& window, Seconds now,
                       const metrics::Exposition& exposition,
                       const std::array<std::string_view, N>& names) {
  for (std::string_view name : names) {
    if (exposition.FindFamily(name) == nullptr) continue;
    AddHistogram(window, now, exposition, name);
    return;
  }
}

// A GPU's reading for one kernel metric; nullopt when the backend does not know it.
using GpuReading = std::function<std::optional<double>(const gpu::GpuInfo&)>;

const std::vector<std::pair<std::string_view, GpuReading>>& KernelMetrics() {
  static const auto* kMetrics = new std::vector<std::pair<std::string_view, GpuReading>>{
      {"gpu_utilization", [](const gpu::GpuInfo& g) { return g.utilization_percent; }},
      {"gpu_memory_used_mb",
       [](const gpu::GpuInfo& g) -> std::optional<double> {
         if (!g.memory_used_mb) return std::nullopt;
         return static_cast<double>(*g.memory_used_mb);
       }},
      {"gpu_memory_usage_percent",
       [](const gpu::GpuInfo& g) -> std::optional<double> {
         if (!g.memory_used_mb || !g.memory_total_mb || *g.memory_total_mb <= 0) {
           return std::nullopt;
         }
         return 100.0 * static_cast<double>(*g.memory_used_mb) /
                static_cast<double>(*g.memory_total_mb);
       }},
      {"gpu_power_w", [](const gpu::GpuInfo& g) { return g.power_draw_w; }},
      {"gpu_temperature_c", [](const gpu::GpuInfo& g) { return g.temperature_c; }},
  };
  return *kMetrics;
}

// Mean of `reading` over the replica's GPUs that report it; nullopt when none does.
std::optional<double> MeanOverGpus(const gpu::GpuSnapshot& snapshot, std::span<const int> gpus,
                                   const GpuReading& reading) {
  double sum = 0;
  int n = 0;
  for (int index : gpus) {
    for (const gpu::GpuInfo& info : snapshot.gpus) {
      if (info.index != index) continue;
      if (auto v = reading(info)) {
        sum += *v;
        ++n;
      }
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

void FillKernel(const std::vector<ReadyReplicaRef>& ready, const gpu::GpuSnapshot& snapshot,
                scale::ScalingInput& input) {
  for (const auto& [name, reading] : KernelMetrics()) {
    scale::MetricValue value;
    value.source = scale::MetricSource::kKernel;
    for (const ReadyReplicaRef& replica : ready) {
      if (auto mean = MeanOverGpus(snapshot, replica.gpus, reading)) {
        value.per_replica.push_back(*mean);
      }
    }
    if (!value.per_replica.empty()) input.metrics[std::string(name)] = std::move(value);
  }
}

// What the histograms read over one minute keep: the minute and a baseline before it (the
// window keeps one sample older than its retention). A histogram snapshot per replica per
// tick is the daemon's largest memory at fleet scale; only e2e is read over 5 minutes.
Seconds MinuteRetention(Seconds retention) { return std::min(retention, Seconds{120}); }

}  // namespace

// The windows of the service values a policy reads, per replica (none for a policy on gauges).
struct ServiceMetricView::ReplicaWindows {
  // Creates the windows `series` asks for that are missing and drops the others.
  void Keep(unsigned series, Seconds retention) {
    auto keep = [&](auto& window, unsigned bit, Seconds kept_for) {
      if (!(series & bit)) {
        window.reset();
      } else if (!window) {
        window.emplace(kept_for);
      }
    };
    keep(success, kSuccessSeries, retention);
    keep(prompt_tokens, kPromptTokensSeries, retention);
    keep(generation_tokens, kGenerationTokensSeries, retention);
    keep(ttft, kTtftSeries, MinuteRetention(retention));
    keep(tpot, kTpotSeries, MinuteRetention(retention));
    keep(e2e, kE2eSeries, retention);
  }

  void Record(Seconds now, const metrics::Exposition& exposition) {
    // A replica that has not finished a request may not expose a counter yet: that is 0.
    for (auto [window, family] :
         {std::pair{&success, kSuccessCounter}, std::pair{&prompt_tokens, kPromptTokensCounter},
          std::pair{&generation_tokens, kGenerationTokensCounter}}) {
      if (!*window) continue;
      auto value = metrics::FindValue(exposition, family, {}, metrics::Combine::kSum);
      (*window)->Add(now, value ? *value : 0.0);
    }
    if (ttft) AddHistogram(*ttft, now, exposition, kTtftHistogram);
    if (tpot) AddFirstHistogram(*tpot, now, exposition, kTpotHistograms);
    if (e2e) AddHistogram(*e2e, now, exposition, kE2eHistogram);
  }

  std::optional<metrics::SeriesWindow> success, prompt_tokens, generation_tokens;
  std::optional<metrics::HistogramWindow> ttft, tpot, e2e;
};

// One replica, kept by id in a vector (replicas_): what every scrape updates lies in it, not
// behind a pointer of its own (10,000 replicas per tick at fleet scale), the windows apart.
struct ServiceMetricView::Replica {
  std::string id;
  Seconds last_scrape{-std::numeric_limits<double>::infinity()};
  ReplicaFamilyValues latest = {};               // the latest scrape's families and values
  std::unique_ptr<ReplicaWindows> windows = {};  // null while the policy reads no windowed value
};

struct ServiceMetricView::GatewayWindows {
  explicit GatewayWindows(Seconds retention)
      : requests(retention),
        errors(retention),
        ttft(MinuteRetention(retention)),
        tpot(MinuteRetention(retention)),
        e2e(MinuteRetention(retention)),
        added(MinuteRetention(retention)) {}

  Seconds last{-std::numeric_limits<double>::infinity()};
  int64_t requests_total = 0, errors_total = 0;
  int in_flight = 0, queued = 0;
  metrics::SeriesWindow requests, errors;
  metrics::HistogramWindow ttft, tpot, e2e, added;
};

ServiceMetricView::ServiceMetricView(SloThresholds slo, Seconds retention)
    : slo_(slo), retention_(retention), series_(kAllSeries) {}
ServiceMetricView::~ServiceMetricView() = default;
ServiceMetricView::ServiceMetricView(ServiceMetricView&&) noexcept = default;
ServiceMetricView& ServiceMetricView::operator=(ServiceMetricView&&) noexcept = default;

void ServiceMetricView::SetReadMetrics(const std::vector<std::string>& policy_metrics) {
  unsigned series = 0;
  for (const std::string& metric : policy_metrics) {
    if (auto it = ScrapeSources().find(metric); it != ScrapeSources().end()) {
      series |= it->second.series;
    }
  }
  if (series == series_) return;
  series_ = series;
  for (Replica& r : replicas_) KeepWindows(r);
}

void ServiceMetricView::KeepWindows(Replica& replica) const {
  if (series_ == 0) {
    replica.windows.reset();
    return;
  }
  if (!replica.windows) replica.windows = std::make_unique<ReplicaWindows>();
  replica.windows->Keep(series_, retention_);
}

// Each pass over a service's replicas (Record, Fill, FindUnexported: three a tick, 10,000
// replicas each at fleet scale) asks for them in the observation's order, which is mostly the
// order of their ids: the entry after the one found last is tried first, one comparison
// instead of a binary search's.
const ServiceMetricView::Replica* ServiceMetricView::FindReplica(std::string_view id) const {
  size_t i = next_guess_;
  if (i >= replicas_.size() || replicas_[i].id != id) {
    auto it = std::lower_bound(replicas_.begin(), replicas_.end(), id,
                               [](const Replica& r, std::string_view key) { return r.id < key; });
    if (it == replicas_.end() || it->id != id) return nullptr;
    i = static_cast<size_t>(it - replicas_.begin());
  }
  next_guess_ = i + 1;
  return &replicas_[i];
}

ServiceMetricView::Replica* ServiceMetricView::FindReplica(std::string_view id) {
  return const_cast<Replica*>(std::as_const(*this).FindReplica(id));
}

void ServiceMetricView::Record(Seconds now, const std::string& replica,
                               const metrics::Exposition& exposition) {
  Replica* r = FindReplica(replica);
  if (r == nullptr) {
    auto it = std::lower_bound(replicas_.begin(), replicas_.end(), replica,
                               [](const Replica& e, const std::string& key) { return e.id < key; });
    r = &*replicas_.insert(it, Replica{.id = replica});
    KeepWindows(*r);
  }
  if (now < r->last_scrape) return;  // out of order: the windows would drop it too
  r->last_scrape = now;
  r->latest.Update(exposition, slots_, kRenamedGauges);
  if (r->windows) r->windows->Record(now, exposition);
}

void ServiceMetricView::RecordGateway(Seconds now, const gateway::ServiceStatsView& stats) {
  // Windows only from the first request on: a fleet of services nobody calls through the
  // gateway would otherwise keep 10 minutes of all-zero histograms each (600 MB at 1,000
  // services on a 1 s loop).
  const bool idle = stats.requests == 0 && stats.in_flight == 0 && stats.queued == 0;
  if (!gateway_ && idle) {
    gateway_idle_at_ = now;
    return;
  }
  if (!gateway_) {
    gateway_ = std::make_unique<GatewayWindows>(retention_);
    // Everything the first figures count happened after the last idle tick: that tick is
    // their zero baseline, so the first requests count in the rates and ratios.
    if (gateway_idle_at_ && *gateway_idle_at_ < now) {
      GatewayWindows& g = *gateway_;
      g.requests.Add(*gateway_idle_at_, 0);
      g.errors.Add(*gateway_idle_at_, 0);
      for (auto [window, sample] : {std::pair{&g.ttft, &stats.ttft},
                                    std::pair{&g.tpot, &stats.tpot}, std::pair{&g.e2e, &stats.e2e}}) {
        const std::vector<double> zeros(sample->upper_bounds.size(), 0.0);
        window->Add(*gateway_idle_at_, sample->upper_bounds, zeros, 0);
      }
    }
  }
  GatewayWindows& g = *gateway_;
  if (now < g.last) return;
  g.last = now;
  g.requests_total = stats.requests;
  g.errors_total = stats.errors;
  g.in_flight = stats.in_flight;
  g.queued = stats.queued;
  g.requests.Add(now, static_cast<double>(stats.requests));
  g.errors.Add(now, static_cast<double>(stats.errors));
  for (auto [window, sample] : {std::pair{&g.ttft, &stats.ttft}, std::pair{&g.tpot, &stats.tpot},
                                std::pair{&g.e2e, &stats.e2e}, std::pair{&g.added, &stats.added}}) {
    window->Add(now, sample->upper_bounds, sample->cumulative_counts, sample->sum);
  }
}

std::optional<GatewayFigures> ServiceMetricView::Gateway(Seconds now) const {
  if (!gateway_) return std::nullopt;
  const GatewayWindows& g = *gateway_;
  constexpr Seconds kMinute{60};
  GatewayFigures f;
  f.requests_total = g.requests_total;
  f.errors_total = g.errors_total;
  f.in_flight = g.in_flight;
  f.queued = g.queued;
  f.request_rate = g.requests.Rate(now, Seconds{30});
  auto requests = g.requests.Increase(now, kMinute);
  auto errors = g.errors.Increase(now, kMinute);
  if (requests && errors && *requests > 0) f.error_ratio = *errors / *requests;
  f.ttft_p50 = g.ttft.Quantile(now, kMinute, 0.5);
  f.ttft_p90 = g.ttft.Quantile(now, kMinute, 0.9);
  f.tpot_p50 = g.tpot.Quantile(now, kMinute, 0.5);
  f.e2e_p90 = g.e2e.Quantile(now, kMinute, 0.9);
  f.added_p99 = g.added.Quantile(now, kMinute, 0.99);
  f.ttft_violation_ratio = g.ttft.FractionAbove(now, kMinute, slo_.ttft_seconds);
  f.tpot_violation_ratio = g.tpot.FractionAbove(now, kMinute, slo_.tpot_seconds);
  return f;
}

void ServiceMetricView::Forget(const std::string& replica) {
  std::erase_if(replicas_, [&](const Replica& r) { return r.id == replica; });
}

void ServiceMetricView::Retain(const std::vector<std::string_view>& replicas) {
  // Every service calls this every tick, and usually drops nothing: the replicas are looked up
  // (in the order FindReplica guesses well) rather than the list sorted.
  std::vector<bool> kept(replicas_.size(), false);
  size_t kept_count = 0;
  for (std::string_view id : replicas) {
    const Replica* r = FindReplica(id);
    if (r == nullptr || kept[r - replicas_.data()]) continue;
    kept[r - replicas_.data()] = true;
    ++kept_count;
  }
  if (kept_count < replicas_.size()) {
    size_t out = 0;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (!kept[i]) continue;
      if (out != i) replicas_[out] = std::move(replicas_[i]);
      ++out;
    }
    replicas_.erase(replicas_.begin() + static_cast<ptrdiff_t>(out), replicas_.end());
  }
  CompactSlotsIfDue();
}

// Names no replica exports any more (an engine upgraded, a family dropped) leave the service's
// table, once it has doubled since the last time: the table stays small however the replicas'
// families change, at an amortized cost.
void ServiceMetricView::CompactSlotsIfDue() {
  if (slots_.size() <= compact_slots_above_) return;
  std::vector<bool> used(slots_.size(), false);
  for (const Replica& r : replicas_) r.latest.MarkUsed(used);
  const std::vector<uint32_t> remap = slots_.Compact(used);
  for (Replica& r : replicas_) r.latest.Remap(remap);
  compact_slots_above_ = 2 * slots_.size() + kMinCompactSlots;
}

namespace {

void SetServiceValue(scale::ScalingInput& input, std::string_view name,
                     std::optional<double> value,
                     scale::MetricSource source = scale::MetricSource::kPrometheus) {
  if (!value) return;
  scale::MetricValue v;
  v.source = source;
  v.service_value = *value;
  input.metrics[std::string(name)] = std::move(v);
}

// The entry of `name` in `input.metrics`, emptied (Fill overwrites existing keys) and sized
// for one value per scraped replica. FillPerReplica reaches a name before its first value only.
scale::MetricValue& EmptiedEntry(scale::ScalingInput& input, const std::string& name,
                                 size_t replicas) {
  scale::MetricValue& entry = input.metrics[name];
  entry = scale::MetricValue{};
  entry.per_replica.reserve(replicas);
  return entry;
}

// Per ready, scraped replica (in order): every family's latest value, and the task demand.
// The vLLM gauges always appear (possibly empty), as in the simulator, so a policy sees "no
// replica reported" rather than "metric unknown". Written straight into `input`, a family
// (slot) at a time: one lookup per name a service's replicas export, not per replica.
void FillPerReplica(const FamilySlots& slots,
                    const std::vector<const ReplicaFamilyValues*>& scraped,
                    scale::ScalingInput& input) {
  static const auto* kAlwaysSet = new std::array<std::string, 3>{
      std::string(names::kWaiting), std::string(names::kRunning), std::string(names::kKvUsage)};
  for (const std::string& name : *kAlwaysSet) EmptiedEntry(input, name, scraped.size());
  const uint32_t waiting = slots.Find(names::kWaiting), running = slots.Find(names::kRunning);
  std::vector<scale::MetricValue*> by_slot(slots.size(), nullptr);
  int queued = 0, busy = 0;
  for (const ReplicaFamilyValues* latest : scraped) {
    for (const ReplicaFamilyValues::Entry& e : latest->entries()) {
      if (!e.valued) continue;
      scale::MetricValue*& entry = by_slot[e.slot];
      if (entry == nullptr) entry = &EmptiedEntry(input, slots.name(e.slot), scraped.size());
      entry->per_replica.push_back(e.value);
      if (!std::isfinite(e.value)) continue;
      if (e.slot == waiting) queued += static_cast<int>(e.value);
      if (e.slot == running) busy += static_cast<int>(e.value);
    }
  }
  input.tasks = {scale::TaskDemand{{}, queued, busy}};
}

}  // namespace

void ServiceMetricView::FillGateway(Seconds now, scale::ScalingInput& input) const {
  const std::optional<GatewayFigures> f = Gateway(now);
  if (!f) {
    // slo.source gateway: the ratios are what clients saw, and none saw anything yet.
    if (slo_.source == SloSource::kGateway) {
      input.metrics.erase(std::string(names::kTtftViolationRatio));
      input.metrics.erase(std::string(names::kTpotViolationRatio));
    }
    return;
  }
  auto set = [&input](std::string_view name, std::optional<double> value) {
    SetServiceValue(input, name, value, scale::MetricSource::kGateway);
  };
  set(names::kGatewayRequestRate30s, f->request_rate);
  set(names::kGatewayErrorRatio1m, f->error_ratio);
  set(names::kGatewayTtftP50, f->ttft_p50);
  set(names::kGatewayTtftP90, f->ttft_p90);
  set(names::kGatewayTpotP50, f->tpot_p50);
  set(names::kGatewayE2eP90, f->e2e_p90);
  set(names::kGatewayTtftViolationRatio, f->ttft_violation_ratio);
  set(names::kGatewayTpotViolationRatio, f->tpot_violation_ratio);
  set(names::kGatewayInFlight, f->in_flight);
  set(names::kGatewayQueued, f->queued);
  // The slo policy's ratios: from the gateway when asked, or (auto) when it saw requests.
  const bool use_gateway =
      slo_.source == SloSource::kGateway ||
      (slo_.source == SloSource::kAuto && f->ttft_violation_ratio.has_value());
  if (!use_gateway) return;
  input.metrics.erase(std::string(names::kTtftViolationRatio));
  input.metrics.erase(std::string(names::kTpotViolationRatio));
  set(names::kTtftViolationRatio, f->ttft_violation_ratio);
  set(names::kTpotViolationRatio, f->tpot_violation_ratio);
}

void ServiceMetricView::FillServiceValues(Seconds now, scale::ScalingInput& input) const {
  std::vector<const metrics::SeriesWindow*> success, prompt_tokens, generation_tokens;
  std::vector<const metrics::HistogramWindow*> ttft, tpot, e2e;
  auto add = [](auto& list, const auto& window) {
    if (window) list.push_back(&*window);
  };
  for (const Replica& r : replicas_) {
    if (!r.windows) continue;
    const ReplicaWindows* w = r.windows.get();
    add(success, w->success);
    add(prompt_tokens, w->prompt_tokens);
    add(generation_tokens, w->generation_tokens);
    add(ttft, w->ttft);
    add(tpot, w->tpot);
    add(e2e, w->e2e);
  }
  SetServiceValue(input, names::kSuccessRate30s, metrics::SumOfRates(success, now, Seconds{30}));
  SetServiceValue(input, names::kSuccessRate2m, metrics::SumOfRates(success, now, Seconds{120}));
  SetServiceValue(input, names::kPromptTokensRate30s,
                  metrics::SumOfRates(prompt_tokens, now, Seconds{30}));
  SetServiceValue(input, names::kGenerationTokensRate30s,
                  metrics::SumOfRates(generation_tokens, now, Seconds{30}));
  SetServiceValue(input, names::kTtftViolationRatio,
                  metrics::FractionAboveAcrossReplicas(ttft, now, Seconds{60}, slo_.ttft_seconds));
  SetServiceValue(input, names::kTpotViolationRatio,
                  metrics::FractionAboveAcrossReplicas(tpot, now, Seconds{60}, slo_.tpot_seconds));
  SetServiceValue(
      input, names::kE2eOver5sRatio,
      metrics::FractionAboveAcrossReplicas(e2e, now, Seconds{300}, kE2eThresholdSeconds));
}

void ServiceMetricView::Fill(Seconds now, const std::vector<ReadyReplicaRef>& ready,
                             const gpu::GpuSnapshot* gpus, scale::ScalingInput& input) const {
  std::vector<const ReplicaFamilyValues*> scraped;
  for (const ReadyReplicaRef& ref : ready) {
    if (const Replica* r = FindReplica(ref.id)) scraped.push_back(&r->latest);
  }
  FillPerReplica(slots_, scraped, input);
  if (series_ != 0) FillServiceValues(now, input);
  if (gpus != nullptr) FillKernel(ready, *gpus, input);
  FillGateway(now, input);
}

bool ServiceMetricView::NeedsScrapes(std::string_view metric) const {
  if (metric.starts_with(names::kGatewayPrefix)) return false;
  const bool slo_ratio =
      metric == names::kTtftViolationRatio || metric == names::kTpotViolationRatio;
  return !(slo_ratio && slo_.source == SloSource::kGateway);
}

bool ServiceMetricView::FromScrapes(std::string_view metric,
                                    const scale::ScalingInput& input) const {
  if (!NeedsScrapes(metric)) return false;  // the gateway's, or an SLO ratio read from it only
  for (const auto& [name, reading] : KernelMetrics()) {
    if (name == metric) return false;
  }
  if (metric == names::kTtftViolationRatio || metric == names::kTpotViolationRatio) {
    // Read from the gateway this tick (slo.source auto while it has traffic)?
    const auto it = input.metrics.find(std::string(metric));
    return it == input.metrics.end() || it->second.source != scale::MetricSource::kGateway;
  }
  return true;
}

std::vector<ServiceMetricView::Unexported> ServiceMetricView::FindUnexported(
    const std::vector<ReadyReplicaRef>& ready, const std::vector<std::string>& metrics,
    const scale::ScalingInput& input) const {
  // Replicas are looked up as the search goes (every service, every tick): the first one
  // usually exports what is looked for.
  auto is_scraped = [&](const ReadyReplicaRef& ref) { return FindReplica(ref.id) != nullptr; };
  std::vector<Unexported> missing;
  if (std::none_of(ready.begin(), ready.end(), is_scraped)) return missing;
  for (const std::string& metric : metrics) {
    if (!FromScrapes(metric, input)) continue;
    const auto source = ScrapeSources().find(metric);
    const std::string_view own[] = {metric};
    const std::span<const std::string_view> families =
        source != ScrapeSources().end() ? std::span(source->second.families) : std::span(own);
    const bool exported = std::any_of(ready.begin(), ready.end(), [&](const ReadyReplicaRef& ref) {
      const Replica* r = FindReplica(ref.id);
      return r != nullptr && std::any_of(families.begin(), families.end(), [&](std::string_view f) {
               return r->latest.declared(slots_.Find(f));
             });
    });
    if (exported) continue;
    missing.push_back({metric,
                       {families.begin(), families.end()},
                       static_cast<int>(std::count_if(ready.begin(), ready.end(), is_scraped))});
  }
  return missing;
}

void ServiceMetricView::AddReadFamilies(const std::vector<std::string>& policy_metrics,
                                        std::set<std::string, std::less<>>& families) {
  for (std::string_view name :
       {names::kWaiting, names::kRunning, names::kKvUsage, names::kKvUsageFormer}) {
    families.emplace(name);
  }
  for (const std::string& metric : policy_metrics) {
    const auto source = ScrapeSources().find(metric);
    if (source == ScrapeSources().end()) {
      families.insert(metric);
    } else {
      families.insert(source->second.families.begin(), source->second.families.end());
    }
  }
}

}  // namespace gpuscale::daemon
