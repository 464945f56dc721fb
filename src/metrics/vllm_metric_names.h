// The family names vLLM serves on /metrics, as the text format 0.0.4 writes them (counters
// with their `_total`), current and former: the emulator renders them and the daemon's
// metric view reads them. Source: vLLM's Prometheus stat logger (vllm/v1/metrics/loggers.py)
// and its metrics design notes (docs/design/metrics.md), as of vLLM 0.12. Every family
// carries the labels model_name and engine (the engine core's index, "0" without data
// parallelism); request_success_total adds finished_reason.
//
// Renames that gpuscale follows (readers take the current name first, then the former one):
//   vllm:gpu_cache_usage_perc          -> vllm:kv_cache_usage_perc         (0.9; 0.12 no
//                                         longer serves the old name)
//   vllm:time_per_output_token_seconds -> vllm:inter_token_latency_seconds (0.11; hidden
//                                         behind --show-hidden-metrics-for-version in 0.12)
// and 0.11 added vllm:request_time_per_output_token_seconds, one observation per finished
// request (its mean gap between output tokens) where the inter-token histogram has one per
// gap.
//
// Constants only; no I/O.
#pragma once

#include <string_view>

namespace gpuscale::metrics::vllm {

// Gauges.
inline constexpr std::string_view kNumRequestsRunning = "vllm:num_requests_running";
inline constexpr std::string_view kNumRequestsWaiting = "vllm:num_requests_waiting";
inline constexpr std::string_view kKvCacheUsagePerc = "vllm:kv_cache_usage_perc";  // 0..1
inline constexpr std::string_view kGpuCacheUsagePercFormer = "vllm:gpu_cache_usage_perc";

// Counters.
inline constexpr std::string_view kNumPreemptionsTotal = "vllm:num_preemptions_total";
inline constexpr std::string_view kPromptTokensTotal = "vllm:prompt_tokens_total";
inline constexpr std::string_view kGenerationTokensTotal = "vllm:generation_tokens_total";
inline constexpr std::string_view kRequestSuccessTotal = "vllm:request_success_total";
inline constexpr std::string_view kPrefixCacheQueriesTotal = "vllm:prefix_cache_queries_total";
inline constexpr std::string_view kPrefixCacheHitsTotal = "vllm:prefix_cache_hits_total";

// Histograms of request latencies, in seconds.
inline constexpr std::string_view kTimeToFirstTokenSeconds = "vllm:time_to_first_token_seconds";
inline constexpr std::string_view kInterTokenLatencySeconds = "vllm:inter_token_latency_seconds";
inline constexpr std::string_view kTimePerOutputTokenSecondsFormer =
    "vllm:time_per_output_token_seconds";
inline constexpr std::string_view kRequestTimePerOutputTokenSeconds =
    "vllm:request_time_per_output_token_seconds";
inline constexpr std::string_view kE2eRequestLatencySeconds = "vllm:e2e_request_latency_seconds";
inline constexpr std::string_view kRequestQueueTimeSeconds = "vllm:request_queue_time_seconds";
inline constexpr std::string_view kRequestInferenceTimeSeconds =
    "vllm:request_inference_time_seconds";
inline constexpr std::string_view kRequestPrefillTimeSeconds = "vllm:request_prefill_time_seconds";
inline constexpr std::string_view kRequestDecodeTimeSeconds = "vllm:request_decode_time_seconds";

// Histograms of request sizes, in tokens.
inline constexpr std::string_view kRequestPromptTokens = "vllm:request_prompt_tokens";
inline constexpr std::string_view kRequestGenerationTokens = "vllm:request_generation_tokens";

}  // namespace gpuscale::metrics::vllm

// What `gpuscale emulate` adds to vLLM's families so that a simulated GPU leased to an
// emulated replica shows load (the daemon reads them; vLLM itself has no such gauges, a real
// GPU reports its own). Labels as above.
namespace gpuscale::metrics::emulated {

// Batch occupancy, 0..1: running sequences / the most a step takes (max_num_seqs); what a
// leased simulated GPU shows as utilization.
inline constexpr std::string_view kGpuUtilizationRatio = "gpuscale_emulator_gpu_utilization_ratio";
// Bytes one of the replica's GPUs holds: its share of the weights and of the KV cache.
inline constexpr std::string_view kGpuMemoryUsedBytes = "gpuscale_emulator_gpu_memory_used_bytes";

}  // namespace gpuscale::metrics::emulated
