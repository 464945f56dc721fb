// Replica performance model: how long an LLM engine replica takes for a prefill of N tokens
// and for one decode step of a batch, calibrated from public profiles in data/perf
// (Vidur H100 operator profiles, Splitwise/SageServe measurements). Used by the simulator's
// continuous-batching replica and by the oracle. Pure: built from parameters/tables, no I/O.
// Thread-safety: models are immutable once built; const methods may be called concurrently.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"

namespace gpuscale::sim {

// A bound far past any GPU's KV cache (an H200 holds a few million tokens), so that a configured
// count always converts to int64 and stays finite in per-token arithmetic.
inline constexpr double kMaxKvCacheTokens = 1e12;

struct ReplicaModelConfig {
  std::string model = "llama-3-8b";  // known models: llama-3-8b, llama-2-7b, llama-2-70b
  std::string gpu = "h100";          // h100 or a100
  int tensor_parallel = 1;
  int max_batch_size = 256;        // max sequences decoding together (vLLM max_num_seqs)
  int64_t kv_cache_tokens = 0;     // 0 = derive from GPU memory, weights and KV size/token
  int max_batched_tokens = 8192;   // prefill chunk budget per step

  friend bool operator==(const ReplicaModelConfig&, const ReplicaModelConfig&) = default;
};

// The prompt work of one step: the tokens it prefills and their causal attention in tokens^2
// (the unit of PrefillSeconds' n^2 term). Attention is per prompt: a chunk of c tokens of a
// prompt whose first p tokens are already in KV attends to those and causally to itself,
// (p + c)^2 - p^2, so a prompt's chunks add up to its own n^2 and prompts fused into one step
// do not attend to each other (a step of two 4096-token prompts costs 2 x 4096^2, not 8192^2).
struct PrefillWork {
  int64_t tokens = 0;
  double attention_tokens2 = 0;

  // One whole prompt of `tokens` tokens, none in KV yet.
  static PrefillWork Prompt(int64_t tokens) {
    PrefillWork work;
    work.AddChunk(0, tokens);
    return work;
  }
  // Adds `chunk` tokens of a prompt whose first `in_kv` tokens are already in KV (prefilled in
  // earlier steps, or a cached prefix). Non-positive chunks add nothing.
  void AddChunk(int64_t in_kv, int64_t chunk) {
    if (chunk <= 0) return;
    const double p = static_cast<double>(std::max<int64_t>(in_kv, 0));
    const double c = static_cast<double>(chunk);
    tokens += chunk;
    attention_tokens2 += (p + c) * (p + c) - p * p;
  }
};

class ReplicaModel {
 public:
  virtual ~ReplicaModel() = default;
  // Seconds to prefill one prompt of `prompt_tokens` tokens in one step.
  virtual double PrefillSeconds(int64_t prompt_tokens) const = 0;
  // Seconds for one decode step of `batch` sequences holding `context_tokens` in KV cache.
  virtual double DecodeStepSeconds(int batch, int64_t context_tokens) const = 0;
  // Seconds for one fused iteration (chunked prefill): `prefill` (chunks of one or more
  // prompts) while `batch` sequences holding `context_tokens` decode one token each. The
  // linear layers run once over all prefill.tokens + batch tokens, so the per-step fixed cost
  // (weight reads, launches, LM-head read) is paid once, not once for the prefill and again
  // for the decode; attention is each prompt's own (PrefillWork). Equals
  // PrefillSeconds(n) for PrefillWork::Prompt(n) and batch <= 0, and
  // DecodeStepSeconds(batch, context_tokens) for no prefill tokens.
  virtual double MixedStepSeconds(const PrefillWork& prefill, int batch,
                                  int64_t context_tokens) const = 0;
  virtual int MaxBatchSize() const = 0;
  virtual int64_t KvCacheTokens() const = 0;
  virtual int MaxBatchedTokens() const = 0;
};

// The calibrated model for `config` (see replica_model_calibrated.h for the formula and
// replica_model_data.cc for the data behind it). Supported: llama-3-8b and llama-2-7b on h100
// at tensor_parallel 1/2/4/8; llama-2-70b on h100 and a100 at tensor_parallel 2/4/8.
// kv_cache_tokens = 0 derives the KV capacity from GPU memory (90 % usable) minus weights.
// Errors: InvalidArgument naming the field for an unknown model/gpu, a tensor_parallel other
// than 1/2/4/8, or a non-positive max_batch_size / max_batched_tokens or negative
// kv_cache_tokens; ResourceExhausted when the weights do not fit the GPUs; NotFound when no
// public profile covers the model on that gpu/tensor_parallel.
Result<std::unique_ptr<ReplicaModel>> MakeReplicaModel(const ReplicaModelConfig& config);

}  // namespace gpuscale::sim
