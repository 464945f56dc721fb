// Renders BatchEngine's stats as vLLM's /metrics exposition (Prometheus text 0.0.4): the
// same metric names, types, label (`model_name`) and histogram buckets that vLLM serves, so
// that gpuscale's scraper, policies and dashboards cannot tell the emulator from vLLM.
//
// Thread-safety: a stateless function over a const snapshot.
#pragma once

#include <string>
#include <string_view>

#include "emulator/batch_engine.h"

namespace gpuscale::emulator {

// Families (vLLM 0.6 names): vllm:num_requests_running, vllm:num_requests_waiting,
// vllm:gpu_cache_usage_perc (gauges; the cache usage is a 0..1 ratio despite its name),
// vllm:prompt_tokens_total, vllm:generation_tokens_total, vllm:request_success_total
// (counters; success carries finished_reason="length" as every emulated request runs to
// max_tokens), vllm:time_to_first_token_seconds and vllm:e2e_request_latency_seconds
// (histograms). Bucket bounds are written as Python does ("1.0", "0.3") because PromQL
// selectors copied from vLLM dashboards match `le="5.0"` literally.
std::string RenderVllmMetrics(const EngineStats& stats, std::string_view model_name);

}  // namespace gpuscale::emulator
