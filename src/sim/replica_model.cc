// Composition of the calibrated replica model: embedded tables (replica_model_data.cc) plus
// analytic terms for what the profiles leave out. Every constant below is either a public
// hardware/model fact or was calibrated against a public serving figure; calibration_test.cc
// checks the result against the CSVs and the figures.
#include "sim/replica_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "sim/replica_model_calibrated.h"

namespace gpuscale::sim {
namespace {

// Public config.json values. Llama-3-8B differs from Llama-2-7B by GQA (8 KV heads: 128 KiB
// of KV per token instead of 512 KiB), a wider MLP (14336 vs 11008) and a 4x vocabulary.
constexpr std::array<ModelSpec, 3> kModels = {{
    {"llama-3-8b", 8.03e9, 32, 4096, 14336, 8, 128, 128256},
    {"llama-2-7b", 6.74e9, 32, 4096, 11008, 32, 128, 32000},
    {"llama-2-70b", 68.98e9, 80, 8192, 28672, 8, 128, 32000},
}};

// H100 SXM: 80 GB, 3.35 TB/s HBM3, ~989 TFLOP/s dense bf16, NVLink4 450 GB/s per direction.
// A100 SXM 80 GB: 2.039 TB/s HBM2e, 312 TFLOP/s bf16, NVLink3 300 GB/s per direction.
constexpr std::array<GpuSpec, 2> kGpus = {{
    {"h100", 80e9, 3.35e12, 989e12, 450e9},
    {"a100", 80e9, 2.039e12, 312e12, 300e9},
}};

// vLLM's default gpu_memory_utilization.
constexpr double kUsableMemoryRatio = 0.9;
// Achieved fraction of peak for the analytic terms: streaming reads (KV cache, LM head)
// reach ~80 % of HBM bandwidth; FlashAttention prefill ~50 % of peak FLOP/s; the LM-head
// GEMM ~60 %; NCCL all-reduce ~70 % of NVLink bandwidth plus ~10 us latency per call.
constexpr double kBandwidthEfficiency = 0.8;
constexpr double kAttentionFlopsEfficiency = 0.5;
constexpr double kLmHeadFlopsEfficiency = 0.6;
constexpr double kNvlinkEfficiency = 0.7;
constexpr double kAllReduceLatencySeconds = 10e-6;
// Per-step GPU-side cost outside the profiled linear ops (launches not covered by CUDA
// graphs, sampling kernels, synchronisation). Calibrated so that Llama-3-8B on one H100 has
// the public ~8 ms TPOT at light load (Vidur linear ops 6.0 ms + LM head 0.4 ms + this).
constexpr double kStepOverheadSeconds = 1.5e-3;
// Host-side work per running sequence per decode step (scheduler, sampler output handling,
// detokenizer), overlapped with the GPU. Calibrated so that a vLLM-like step loop of
// Llama-3-8B on one H100 saturates at the public ~36 req/s on 202-in/179-out requests
// (calibration_test.cc); vLLM's v0.6 performance post reports this CPU work dominating
// 8B-on-H100 serving at large batches.
constexpr double kHostSecondsPerSequence = 0.115e-3;

// Two all-reduces per layer (after attention and after the MLP) of tokens x hidden bf16
// activations; a ring all-reduce moves 2 (tp - 1) / tp of the buffer over each link.
double AllReduceSeconds(const ModelSpec& m, const GpuSpec& g, int tp, double tokens) {
  if (tp <= 1) return 0;
  const double bytes = tokens * m.hidden * 2.0;
  const double transfer_s =
      2.0 * (tp - 1) / tp * bytes / (g.nvlink_bytes_per_s * kNvlinkEfficiency);
  return 2.0 * m.layers * (kAllReduceLatencySeconds + transfer_s);
}

double KvReadSecondsPerToken(const ModelSpec& m, const GpuSpec& g, int tp) {
  return static_cast<double>(m.KvBytesPerToken()) / tp / (g.hbm_bytes_per_s * kBandwidthEfficiency);
}

// Llama-2-7B / Llama-3-8B: Vidur's Llama-2-7B linear-op times, scaled by the ratio of linear
// parameters (time of both memory- and compute-bound GEMMs grows with the weights they
// touch: x1.078 for Llama-3-8B), plus step overhead, LM head, all-reduce and attention.
// Prefill computes logits for the last token only; decode for every sequence.
ReplicaPerfProfile VidurProfile(const ModelSpec& m, const GpuSpec& g, int tp) {
  const ModelSpec& base = *FindModelSpec("llama-2-7b");
  const double scale =
      m.layers * m.LinearParamsPerLayer() / (base.layers * base.LinearParamsPerLayer());
  const double lm_head_bytes = 2.0 * m.vocab * m.hidden / tp;
  const double lm_read_s = lm_head_bytes / (g.hbm_bytes_per_s * kBandwidthEfficiency);
  const double lm_s_per_token = lm_head_bytes / (g.bf16_flops_per_s * kLmHeadFlopsEfficiency);
  ReplicaPerfProfile p;
  for (const PerfPoint& linear : VidurLlama2_7bLinearTable(tp)) {
    const double common = kStepOverheadSeconds + scale * linear.seconds + lm_read_s +
                          AllReduceSeconds(m, g, tp, linear.x);
    p.prefill.push_back({linear.x, common + lm_s_per_token});
    p.decode.push_back({linear.x, common + lm_s_per_token * linear.x});
  }
  // Causal attention: QK^T and PV are 2 n^2 d FLOPs each per layer, halved by the mask.
  p.prefill_s_per_token2 =
      2.0 * m.layers * m.hidden / tp / (g.bf16_flops_per_s * kAttentionFlopsEfficiency);
  p.kv_read_s_per_token = KvReadSecondsPerToken(m, g, tp);
  p.host_s_per_sequence = kHostSecondsPerSequence;
  p.source =
      fmt::format("vidur llama-2-7b h100 tp{} linear ops x{:.3f} + analytic terms", tp, scale);
  return p;
}

// Llama-2-70B: Splitwise end-to-end measurements already include attention, communication
// and overheads; only the KV read (removed from the decode table) is added back per token.
ReplicaPerfProfile SplitwiseProfile(const ModelSpec& m, const GpuSpec& g, int tp,
                                    SplitwiseTables tables) {
  ReplicaPerfProfile p;
  p.prefill = std::move(tables.prefill);
  p.decode = std::move(tables.decode);
  p.kv_read_s_per_token = KvReadSecondsPerToken(m, g, tp);
  p.host_s_per_sequence = kHostSecondsPerSequence;
  p.source = fmt::format("splitwise llama2-70b {} tp{}", g.name, tp);
  return p;
}

}  // namespace

double ModelSpec::LinearParamsPerLayer() const {
  const double qkv = static_cast<double>(hidden) * (hidden + 2.0 * kv_heads * head_dim);
  const double output = static_cast<double>(hidden) * hidden;
  const double mlp = 3.0 * hidden * intermediate;
  return qkv + output + mlp;
}

const ModelSpec* FindModelSpec(std::string_view name) {
  for (const ModelSpec& m : kModels) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const GpuSpec* FindGpuSpec(std::string_view name) {
  for (const GpuSpec& g : kGpus) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

double InterpolatePerf(std::span<const PerfPoint> points, double x) {
  if (points.empty()) return 0;
  if (points.size() == 1 || x <= points.front().x) return points.front().seconds;
  auto upper = std::upper_bound(points.begin() + 1, points.end() - 1, x,
                                [](double v, const PerfPoint& p) { return v < p.x; });
  const PerfPoint& b = *upper;  // the last segment also extrapolates
  const PerfPoint& a = *(upper - 1);
  return a.seconds + (b.seconds - a.seconds) * (x - a.x) / (b.x - a.x);
}

int64_t DefaultKvCacheTokens(const ModelSpec& model, const GpuSpec& gpu, int tensor_parallel) {
  const double free_bytes =
      gpu.memory_bytes * tensor_parallel * kUsableMemoryRatio - model.WeightBytes();
  return static_cast<int64_t>(free_bytes / static_cast<double>(model.KvBytesPerToken()));
}

Result<ReplicaPerfProfile> BuildPerfProfile(std::string_view model, std::string_view gpu,
                                            int tensor_parallel) {
  const ModelSpec* m = FindModelSpec(model);
  if (m == nullptr) {
    return InvalidArgument(
        fmt::format("unknown model '{}': expected llama-3-8b, llama-2-7b or llama-2-70b", model),
        "model");
  }
  const GpuSpec* g = FindGpuSpec(gpu);
  if (g == nullptr) {
    return InvalidArgument(fmt::format("unknown gpu '{}': expected h100 or a100", gpu), "gpu");
  }
  const int tp = tensor_parallel;
  if (tp != 1 && tp != 2 && tp != 4 && tp != 8) {
    return InvalidArgument(fmt::format("expected 1, 2, 4 or 8, got {}", tp), "tensor_parallel");
  }
  if (DefaultKvCacheTokens(*m, *g, tp) <= 0) {
    return ResourceExhausted(
        fmt::format("{} weights ({:.0f} GB) do not fit {} x {} ({:.0f} GB usable each): raise "
                    "tensor_parallel",
                    m->name, m->WeightBytes() / 1e9, tp, g->name,
                    g->memory_bytes * kUsableMemoryRatio / 1e9),
        "tensor_parallel");
  }
  if (m->name == "llama-2-70b") {
    std::optional<SplitwiseTables> tables = SplitwiseLlama2_70bTables(g->name, tp);
    if (!tables) {
      return NotFound(fmt::format("no profile for llama-2-70b on {} at tensor_parallel {}: "
                                  "Splitwise measured tensor_parallel 2, 4 and 8",
                                  g->name, tp),
                      "tensor_parallel");
    }
    return SplitwiseProfile(*m, *g, tp, std::move(*tables));
  }
  if (g->name != "h100") {
    return NotFound(fmt::format("no profile for {} on {}: the Vidur profiles behind it cover "
                                "h100 only (a100 is available for llama-2-70b)",
                                m->name, g->name),
                    "gpu");
  }
  return VidurProfile(*m, *g, tp);
}

CalibratedReplicaModel::CalibratedReplicaModel(ReplicaPerfProfile profile, int max_batch_size,
                                               int64_t kv_cache_tokens, int max_batched_tokens)
    : profile_(std::move(profile)),
      max_batch_size_(max_batch_size),
      kv_cache_tokens_(kv_cache_tokens),
      max_batched_tokens_(max_batched_tokens) {}

double CalibratedReplicaModel::PrefillSeconds(int64_t prompt_tokens) const {
  return PrefillWorkSeconds(PrefillWork::Prompt(prompt_tokens));
}

double CalibratedReplicaModel::PrefillWorkSeconds(const PrefillWork& prefill) const {
  if (prefill.tokens <= 0) return 0;
  return InterpolatePerf(profile_.prefill, static_cast<double>(prefill.tokens)) +
         profile_.prefill_s_per_token2 * prefill.attention_tokens2;
}

double CalibratedReplicaModel::DecodeStepSeconds(int batch, int64_t context_tokens) const {
  if (batch <= 0) return 0;
  const double gpu_s =
      InterpolatePerf(profile_.decode, batch) +
      profile_.kv_read_s_per_token * static_cast<double>(std::max<int64_t>(context_tokens, 0));
  return std::max(gpu_s, profile_.host_s_per_sequence * batch);
}

double CalibratedReplicaModel::MixedStepSeconds(const PrefillWork& prefill, int batch,
                                                int64_t context_tokens) const {
  if (prefill.tokens <= 0) return DecodeStepSeconds(batch, context_tokens);
  if (batch <= 0) return PrefillWorkSeconds(prefill);
  const double n = static_cast<double>(prefill.tokens);
  const double b = batch;
  const double logits_s = std::max(
      0.0, InterpolatePerf(profile_.decode, b) - InterpolatePerf(profile_.prefill, b));
  const double gpu_s =
      InterpolatePerf(profile_.prefill, n + b) +
      profile_.prefill_s_per_token2 * prefill.attention_tokens2 + logits_s +
      profile_.kv_read_s_per_token * static_cast<double>(std::max<int64_t>(context_tokens, 0));
  // Where the chunk is compute-bound the decode tokens cost about as much fused as a
  // separate step would; an engine never does worse than running both back to back.
  return std::min(std::max(gpu_s, profile_.host_s_per_sequence * b),
                  PrefillWorkSeconds(prefill) + DecodeStepSeconds(batch, context_tokens));
}

Result<std::unique_ptr<ReplicaModel>> MakeReplicaModel(const ReplicaModelConfig& config) {
  if (config.max_batch_size < 1) {
    return InvalidArgument(fmt::format("expected >= 1, got {}", config.max_batch_size),
                           "max_batch_size");
  }
  if (config.max_batched_tokens < 1) {
    return InvalidArgument(fmt::format("expected >= 1, got {}", config.max_batched_tokens),
                           "max_batched_tokens");
  }
  if (config.kv_cache_tokens < 0) {
    return InvalidArgument(
        fmt::format("expected >= 0 (0 derives it from GPU memory), got {}", config.kv_cache_tokens),
        "kv_cache_tokens");
  }
  GS_ASSIGN_OR_RETURN(ReplicaPerfProfile profile,
                      BuildPerfProfile(config.model, config.gpu, config.tensor_parallel));
  const int64_t kv_tokens =
      config.kv_cache_tokens > 0
          ? config.kv_cache_tokens
          : DefaultKvCacheTokens(*FindModelSpec(config.model), *FindGpuSpec(config.gpu),
                                 config.tensor_parallel);
  return std::unique_ptr<ReplicaModel>(std::make_unique<CalibratedReplicaModel>(
      std::move(profile), config.max_batch_size, kv_tokens, config.max_batched_tokens));
}

}  // namespace gpuscale::sim
