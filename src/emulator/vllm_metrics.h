// Renders BatchEngine's stats as vLLM's /metrics exposition (Prometheus text 0.0.4): the
// names, types, labels (model_name, engine="0") and histogram buckets that vLLM 0.12 serves
// (metrics/vllm_metric_names.h), so that gpuscale's scraper, policies and dashboards cannot
// tell the emulator from vLLM.
//
// Thread-safety: a stateless function over a const snapshot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "emulator/batch_engine.h"

namespace gpuscale::emulator {

// Families: gauges vllm:num_requests_running, _waiting, vllm:kv_cache_usage_perc (0..1) and,
// for dashboards written against vLLM before 0.9, vllm:gpu_cache_usage_perc (the same
// value); counters vllm:num_preemptions_total, vllm:prompt_tokens_total,
// vllm:generation_tokens_total, vllm:prefix_cache_queries_total / _hits_total and
// vllm:request_success_total (finished_reason stop, length, abort); histograms vllm:time_to_first_token_seconds,
// vllm:inter_token_latency_seconds, vllm:request_time_per_output_token_seconds,
// vllm:e2e_request_latency_seconds, vllm:request_queue_time_seconds,
// vllm:request_inference_time_seconds, vllm:request_prefill_time_seconds,
// vllm:request_decode_time_seconds, vllm:request_prompt_tokens and
// vllm:request_generation_tokens. Labels are sorted by name, and bucket bounds written as
// Python does ("1.0", "0.3"), as prometheus_client writes them: PromQL selectors copied from
// vLLM dashboards match `le="5.0"` literally.
// With `gpu`, the emulator's own gauges follow (metrics::emulated: batch occupancy and the
// memory one of its GPUs holds), which a simulated GPU leased to the replica shows.
struct EmulatedGpu {
  double utilization_ratio = 0;  // 0..1
  int64_t memory_used_bytes = 0;
};
std::string RenderVllmMetrics(const EngineStats& stats, std::string_view model_name,
                              const std::optional<EmulatedGpu>& gpu = std::nullopt);

}  // namespace gpuscale::emulator
