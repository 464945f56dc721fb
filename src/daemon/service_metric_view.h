// ServiceMetricView: the live counterpart of sim::MetricView. Every control tick the daemon
// scrapes each ready replica's /metrics and Records the exposition here; Fill turns the
// windows into the ScalingInput metrics policies read (names in scale/metric_names.h), with
// the same aggregation as the simulator (over replicas: metrics/replica_aggregation.h) so
// policies behave alike live and simulated:
//  - per replica (source kInferenceFramework, latest scrape): every gauge, counter and
//    untyped family seen in the exposition, keyed by family name, value = sum over its label
//    sets (so `vllm:num_requests_waiting` with a model_name label is one number per replica).
//    Histograms and summaries are not (no single value; see the service values below).
//    Only ready replicas that have been scraped contribute, in the order given; a replica
//    that lacks a family adds nothing to it. kWaiting, kRunning and kKvUsage are always set
//    (empty per_replica when no replica reports), as in the simulator. A gauge vLLM renamed
//    (vllm:gpu_cache_usage_perc -> vllm:kv_cache_usage_perc) is set under both names from
//    whichever the replica exports.
//  - service values (source kPrometheus, computed locally from the windows exactly as the
//    PromQL in metric_names.h would): kSuccessRate30s/2m (sum of per-replica rates of
//    vllm:request_success_total, summed over label sets; a replica whose exposition lacks
//    the counter, as vLLM before its first finished request, counts 0),
//    kPromptTokensRate30s / kGenerationTokensRate30s (the same over vLLM's token counters;
//    the slo policy's token mode),
//    kTtftViolationRatio / kTpotViolationRatio (histogram bucket increases over 1 min vs
//    the SLO thresholds; TPOT per replica from the first of
//    vllm:request_time_per_output_token_seconds, vllm:inter_token_latency_seconds and
//    vllm:time_per_output_token_seconds it exports), kE2eOver5sRatio (5 min). These read
//    every replica with windows (as Prometheus reads every scraped target); Forget/Retain
//    decide which. A value with no data (fewer than two scrapes, no observations) is absent.
//    Only the service values the policy reads are kept (SetReadMetrics; all by default): a
//    window per replica per scrape is most of a tick's CPU and of the daemon's memory at
//    fleet scale, and a policy on a gauge needs none.
//  - gateway values (source kGateway, names kGateway* in metric_names.h), from the cumulative
//    measurements the daemon samples from its gateway every tick (RecordGateway; from the
//    service's first request, queued or sent, on: before it there are none): request
//    rate (30 s), error ratio, TTFT/TPOT/e2e quantiles and SLO violation ratios (1 min), and
//    the in-flight and queued counts now. With slo.source gateway (or auto while the gateway
//    saw requests in the last minute) kTtftViolationRatio / kTpotViolationRatio are the
//    gateway's, so the `slo` policy scales on what clients saw.
//  - tasks: one TaskDemand {queued = sum waiting, running = sum running}.
//  - kernel metrics (source kKernel) per ready replica from its GPUs in the snapshot, mean
//    over the replica's GPUs: "gpu_utilization" (percent), "gpu_memory_used_mb",
//    "gpu_memory_usage_percent", "gpu_power_w", "gpu_temperature_c". Replicas without GPUs
//    or readings are skipped.
//
// Pure: no I/O, time is a parameter. Ownership: owns the windows, keyed by replica id.
// Thread-safety: none (the control loop thread owns it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "daemon/family_values.h"
#include "daemon_api/gateway_figures.h"
#include "gateway/gateway_stats.h"
#include "gpu/gpu_info.h"
#include "metrics/prometheus_text_parser.h"
#include "scale/policy.h"
#include "serve_config/slo_thresholds.h"

namespace gpuscale::daemon {

// A ready replica, as views of the caller's id and GPUs (which must outlive the call taking it).
struct ReadyReplicaRef {
  std::string_view id;
  std::span<const int> gpus;  // device indices, for kernel metrics
};

class ServiceMetricView {
 public:
  explicit ServiceMetricView(SloThresholds slo = {}, Seconds retention = Seconds{600});
  ~ServiceMetricView();
  ServiceMetricView(ServiceMetricView&&) noexcept;
  ServiceMetricView& operator=(ServiceMetricView&&) noexcept;

  // Which service values to keep windows for: those among `policy_metrics` (names a policy
  // reads). A value dropped here loses its windows; one added starts with empty windows
  // (absent until two scrapes, as for a new replica). Cheap when nothing changed.
  void SetReadMetrics(const std::vector<std::string>& policy_metrics);

  // One scrape of `replica` at `now`.
  void Record(Seconds now, const std::string& replica, const metrics::Exposition& exposition);
  // The gateway's cumulative measurements of this service at `now`.
  void RecordGateway(Seconds now, const gateway::ServiceStatsView& stats);
  // The gateway's figures at `now`; nullopt before the first RecordGateway.
  std::optional<GatewayFigures> Gateway(Seconds now) const;

  // Drops a stopped replica's windows.
  void Forget(const std::string& replica);
  // Keeps only these replicas' windows (drops every other one).
  void Retain(const std::vector<std::string_view>& replicas);

  // Adds the metrics described above to `input.metrics` (existing keys are overwritten) and
  // sets input.tasks. `gpus` may be null (no kernel metrics).
  void Fill(Seconds now, const std::vector<ReadyReplicaRef>& ready, const gpu::GpuSnapshot* gpus,
            scale::ScalingInput& input) const;

  // A metric a policy reads that should come from the replicas' scrapes, but that none of
  // the ready replicas' latest scrapes exports under any of the families it is read from.
  struct Unexported {
    std::string metric;
    std::vector<std::string> families;  // what was looked for, the current vLLM name first
    int ready = 0;                      // ready replicas with a scrape
  };
  // Of `metrics` (names a policy reads: scale::Policy::MetricNames), those that no ready,
  // scraped replica exports (a family declared without samples counts as exported). Never
  // lists kernel and gateway metrics, nor the SLO violation ratios while `input` (as Fill
  // left it) has them from the gateway or slo.source is gateway. Empty when no ready replica
  // has been scraped. A name without a known source is looked for as a family of its own.
  std::vector<Unexported> FindUnexported(const std::vector<ReadyReplicaRef>& ready,
                                         const std::vector<std::string>& metrics,
                                         const scale::ScalingInput& input) const;

  // Adds the families this view reads from a scrape when the policy reads `policy_metrics`:
  // vLLM's waiting, running and KV gauges (both names of a renamed one), and each policy
  // metric's source families (or the family of its own name): the counters and histograms
  // above only when a policy metric is computed from them. A scrape parsed with only these
  // (metrics::ParseOptions::only_families) gives the same inputs and errors.
  // Whether `metric` may ever be read from the replicas' scrapes (false: the gateway's, or
  // an SLO ratio the service reads from the gateway only). Kernel metrics count as scraped:
  // simulated GPUs report what emulated replicas expose.
  bool NeedsScrapes(std::string_view metric) const;
  static void AddReadFamilies(const std::vector<std::string>& policy_metrics,
                              std::set<std::string, std::less<>>& families);

 private:
  struct ReplicaWindows;
  struct Replica;
  struct GatewayWindows;
  Replica* FindReplica(std::string_view id);
  const Replica* FindReplica(std::string_view id) const;
  // Creates or drops the replica's windows as series_ asks.
  void KeepWindows(Replica& replica) const;
  void FillGateway(Seconds now, scale::ScalingInput& input) const;
  // The service values computed from the replicas' windows.
  void FillServiceValues(Seconds now, scale::ScalingInput& input) const;
  // False for metrics that do not come from replicas' scrapes (see FindUnexported).
  bool FromScrapes(std::string_view metric, const scale::ScalingInput& input) const;
  // Drops the names no replica's latest scrape holds from slots_, when due (see the .cc).
  void CompactSlotsIfDue();
  static constexpr uint32_t kMinCompactSlots = 64;

  SloThresholds slo_;
  std::unique_ptr<GatewayWindows> gateway_;  // from the first request on
  std::optional<Seconds> gateway_idle_at_;    // the last RecordGateway before it
  Seconds retention_;
  unsigned series_;  // which replica windows to keep (bits of the .cc's Series)
  std::vector<Replica> replicas_;  // sorted by id
  FamilySlots slots_;              // the names of the families in replicas_' latest scrapes
  uint32_t compact_slots_above_ = kMinCompactSlots;
  mutable size_t next_guess_ = 0;  // where FindReplica looks first (a guess it checks)
};

}  // namespace gpuscale::daemon
