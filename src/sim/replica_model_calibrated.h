// CalibratedReplicaModel: the ReplicaModel that MakeReplicaModel returns. Step times come from
// piecewise-linear tables derived from public profiles (replica_model_data.cc says how) plus
// closed-form terms for what the profiles leave out:
//
//   PrefillSeconds(n)        = prefill_table(n) + prefill_s_per_token2 * n^2
//   DecodeStepSeconds(b, c)  = max(decode_table(b) + kv_read_s_per_token * c,
//                                  host_s_per_sequence * b)
//   MixedStepSeconds(w, b, c) = min(max(prefill_table(n + b) + prefill_s_per_token2 * a
//                                       + max(0, decode_table(b) - prefill_table(b))
//                                       + kv_read_s_per_token * c,  host_s_per_sequence * b),
//                                   prefill_table(n) + prefill_s_per_token2 * a
//                                   + DecodeStepSeconds(b, c))
//     with n = w.tokens, a = w.attention_tokens2
//
// n^2 (a) is causal attention, each prompt over its own tokens (PrefillWork: a chunk of c
// tokens after p in KV adds (p + c)^2 - p^2); c is the KV cache the decoding batch reads; the max()
// is the engine's host-side work (scheduling, sampling, detokenizing), which vLLM >= 0.6 overlaps
// with GPU work so it only shows once it exceeds the GPU time (large batches). A fused step
// runs the linear layers once over the n prompt and b decode tokens (one fixed cost); the
// decode tokens add what a decode token costs beyond a prefill token (their logits: the
// decode table's excess over the prefill table at b tokens) and their KV reads.
//
// Ownership: owns its tables (copied in). Thread-safety: immutable after construction, so
// const methods may be called from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sim/replica_model.h"

namespace gpuscale::sim {

// One point of a piecewise-linear cost: x (tokens, or sequences) -> seconds.
struct PerfPoint {
  double x = 0;
  double seconds = 0;
};

// Linear interpolation; flat below the first point, and beyond the last point extended with
// the last segment's slope (profiles stop at 4096/8192 tokens and batch 32/64).
// REQUIRES: >= 2 points, x strictly increasing, seconds non-decreasing.
double InterpolatePerf(std::span<const PerfPoint> points, double x);

// Architecture facts of a known model (from its public config.json).
struct ModelSpec {
  std::string_view name;
  double parameters = 0;
  int layers = 0;
  int hidden = 0;
  int intermediate = 0;  // MLP width (gated: up, gate and down projections)
  int kv_heads = 0;
  int head_dim = 0;
  int vocab = 0;

  double WeightBytes() const { return parameters * 2; }  // bf16
  // K and V of every layer in bf16: Llama-3-8B 128 KiB, Llama-2-7B 512 KiB, 70B 320 KiB.
  int64_t KvBytesPerToken() const { return int64_t{2} * layers * kv_heads * head_dim * 2; }
  // Parameters of one layer's linear ops (QKV, output projection, gated MLP).
  double LinearParamsPerLayer() const;
};

struct GpuSpec {
  std::string_view name;
  double memory_bytes = 0;
  double hbm_bytes_per_s = 0;
  double bf16_flops_per_s = 0;    // dense
  double nvlink_bytes_per_s = 0;  // per direction
};

// nullptr when unknown. Known: llama-3-8b, llama-2-7b, llama-2-70b; h100, a100.
const ModelSpec* FindModelSpec(std::string_view name);
const GpuSpec* FindGpuSpec(std::string_view name);

// The fitted cost terms of one (model, gpu, tensor_parallel); see the formula above.
struct ReplicaPerfProfile {
  std::vector<PerfPoint> prefill;  // prompt tokens -> seconds, without the n^2 term
  double prefill_s_per_token2 = 0;
  std::vector<PerfPoint> decode;   // batch -> GPU seconds per step, without KV reads
  double kv_read_s_per_token = 0;  // per context token held by the batch
  double host_s_per_sequence = 0;  // host work per sequence per decode step
  std::string source;              // which data the tables come from, for reports
};

// Builds the profile. Errors: InvalidArgument naming "model", "gpu" or "tensor_parallel" for
// unknown values; ResourceExhausted when the weights do not fit the GPUs; NotFound when no
// public profile covers the combination (e.g. llama-3-8b on a100).
Result<ReplicaPerfProfile> BuildPerfProfile(std::string_view model, std::string_view gpu,
                                            int tensor_parallel);

// KV cache tokens that fit next to the weights with 90 % of GPU memory usable (vLLM's
// gpu_memory_utilization default): (memory * tp * 0.9 - weights) / KV bytes per token.
// May be <= 0 when the weights alone do not fit.
int64_t DefaultKvCacheTokens(const ModelSpec& model, const GpuSpec& gpu, int tensor_parallel);

class CalibratedReplicaModel final : public ReplicaModel {
 public:
  // REQUIRES: profile from BuildPerfProfile; max_batch_size, max_batched_tokens >= 1;
  // kv_cache_tokens >= 1.
  CalibratedReplicaModel(ReplicaPerfProfile profile, int max_batch_size, int64_t kv_cache_tokens,
                         int max_batched_tokens);

  // 0 for prompt_tokens <= 0.
  double PrefillSeconds(int64_t prompt_tokens) const override;
  // 0 for batch <= 0; context_tokens is the total over the batch (negative counts as 0).
  double DecodeStepSeconds(int batch, int64_t context_tokens) const override;
  double MixedStepSeconds(const PrefillWork& prefill, int batch,
                          int64_t context_tokens) const override;
  int MaxBatchSize() const override { return max_batch_size_; }
  int64_t KvCacheTokens() const override { return kv_cache_tokens_; }
  int MaxBatchedTokens() const override { return max_batched_tokens_; }

  const ReplicaPerfProfile& profile() const { return profile_; }

 private:
  // The prefill part of a step alone: table time of its tokens plus its attention.
  double PrefillWorkSeconds(const PrefillWork& prefill) const;

  ReplicaPerfProfile profile_;
  int max_batch_size_;
  int64_t kv_cache_tokens_;
  int max_batched_tokens_;
};

// ---- embedded calibration data (replica_model_data.cc) ----

// Vidur's Llama-2-7B H100 linear-layer time (32 layers + embedding) vs tokens in the step;
// empty for a tensor-parallel degree without data (profiles exist for 1, 2, 4, 8).
std::vector<PerfPoint> VidurLlama2_7bLinearTable(int tensor_parallel);

// Splitwise Llama-2-70B measurements: prefill seconds vs prompt tokens, decode-step GPU
// seconds vs batch (KV reads removed). nullopt where the CSV has no data.
struct SplitwiseTables {
  std::vector<PerfPoint> prefill;
  std::vector<PerfPoint> decode;
};
std::optional<SplitwiseTables> SplitwiseLlama2_70bTables(std::string_view gpu, int tensor_parallel);

}  // namespace gpuscale::sim
