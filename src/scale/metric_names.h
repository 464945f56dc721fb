// Names of the service metrics the controller's metric view provides to policies, shared by
// the simulator's view (sim/metric_view.h), the daemon's collector and the policies that
// read them (slo). Names that are PromQL expressions mean exactly that query, so the daemon
// can send them verbatim to a Prometheus server (MetricSource::kPrometheus).
#pragma once

#include <string_view>

namespace gpuscale::scale::metric_names {

// Per ready replica (MetricValue::per_replica), the latest scrape (vLLM gauges).
inline constexpr std::string_view kWaiting = "vllm:num_requests_waiting";
inline constexpr std::string_view kRunning = "vllm:num_requests_running";
// KV-cache usage, 0..1 (vLLM >= 0.9). The daemon also fills it from the name vLLM used
// before, and that name from it, per replica (metrics/vllm_metric_names.h), so policies
// written with either name read both kinds of replica.
inline constexpr std::string_view kKvUsage = "vllm:kv_cache_usage_perc";
inline constexpr std::string_view kKvUsageFormer = "vllm:gpu_cache_usage_perc";

// Service values: requests finished per second over the last 30 s / 2 min.
inline constexpr std::string_view kSuccessRate30s = "sum(rate(vllm:request_success_total[30s]))";
inline constexpr std::string_view kSuccessRate2m = "sum(rate(vllm:request_success_total[2m]))";

// Service values: prompt / generated tokens per second over the last 30 s (vLLM counters).
inline constexpr std::string_view kPromptTokensRate30s =
    "sum(rate(vllm:prompt_tokens_total[30s]))";
inline constexpr std::string_view kGenerationTokensRate30s =
    "sum(rate(vllm:generation_tokens_total[30s]))";

// Service values: prompt tokens looked up in / found in the replicas' prefix caches per
// second over the last 30 s (vLLM counters; their ratio is the prefix cache hit ratio).
inline constexpr std::string_view kPrefixCacheQueriesRate30s =
    "sum(rate(vllm:prefix_cache_queries_total[30s]))";
inline constexpr std::string_view kPrefixCacheHitsRate30s =
    "sum(rate(vllm:prefix_cache_hits_total[30s]))";

// Service values: share of the requests finished in the last minute whose time to first
// token (resp. mean time per output token) exceeded the service's SLO, from the histograms'
// bucket increases (bucket resolution: put SLO thresholds on vLLM bucket bounds). TPOT comes
// from vllm:request_time_per_output_token_seconds (one observation per request, as the
// simulator and the gateway measure it), else from the per-gap inter-token histogram
// (vllm:inter_token_latency_seconds, formerly vllm:time_per_output_token_seconds).
inline constexpr std::string_view kTtftViolationRatio = "slo:ttft_violation_ratio:1m";
inline constexpr std::string_view kTpotViolationRatio = "slo:tpot_violation_ratio:1m";

// Service value: the default KEDA query of the Corrino (OCI AI Blueprints) autoscaling
// recipes, the share of requests over 5 s end-to-end in the last 5 minutes.
inline constexpr std::string_view kE2eOver5sRatio =
    "1 - (sum(rate(vllm:e2e_request_latency_seconds_bucket{le=\"5.0\"}[5m])) / "
    "sum(rate(vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"}[5m])))";

// Service values measured by the daemon's gateway (MetricSource::kGateway): what clients saw,
// queueing at the door and the network included, for every request the gateway routed.
// Rates and ratios over the window in the name; gauges are the values now.
inline constexpr std::string_view kGatewayPrefix = "gateway:";  // every name below starts so
inline constexpr std::string_view kGatewayRequestRate30s = "gateway:request_rate:30s";
inline constexpr std::string_view kGatewayErrorRatio1m = "gateway:error_ratio:1m";
inline constexpr std::string_view kGatewayTtftP50 = "gateway:ttft_seconds:p50:1m";
inline constexpr std::string_view kGatewayTtftP90 = "gateway:ttft_seconds:p90:1m";
inline constexpr std::string_view kGatewayTpotP50 = "gateway:tpot_seconds:p50:1m";
inline constexpr std::string_view kGatewayE2eP90 = "gateway:e2e_seconds:p90:1m";
inline constexpr std::string_view kGatewayTtftViolationRatio = "gateway:ttft_violation_ratio:1m";
inline constexpr std::string_view kGatewayTpotViolationRatio = "gateway:tpot_violation_ratio:1m";
inline constexpr std::string_view kGatewayInFlight = "gateway:in_flight";
inline constexpr std::string_view kGatewayQueued = "gateway:queued";

}  // namespace gpuscale::scale::metric_names
