// Replica performance model: how long an LLM engine replica takes for a prefill of N tokens
// and for one decode step of a batch, calibrated from public profiles in ../shared/data/perf
// (Vidur H100 operator profiles, Splitwise/SageServe measurements). Used by the simulator's
// continuous-batching replica and by the oracle. Pure: built from parameters/tables, no I/O.
#pragma once

#include <string>

#include "core/result.h"

namespace gpuscale::sim {

struct ReplicaModelConfig {
  std::string model = "llama-3-8b";  // known models: llama-3-8b, llama-2-7b, llama-2-70b
  std::string gpu = "h100";          // h100 or a100
  int tensor_parallel = 1;
  int max_batch_size = 256;        // max sequences decoding together (vLLM max_num_seqs)
  int64_t kv_cache_tokens = 0;     // 0 = derive from GPU memory, weights and KV size/token
  int max_batched_tokens = 8192;   // prefill chunk budget per step
};

class ReplicaModel {
 public:
  virtual ~ReplicaModel() = default;
  // Seconds to prefill `prompt_tokens` tokens (one request or a chunk of several).
  virtual double PrefillSeconds(int64_t prompt_tokens) const = 0;
  // Seconds for one decode step of `batch` sequences holding `context_tokens` in KV cache.
  virtual double DecodeStepSeconds(int batch, int64_t context_tokens) const = 0;
  virtual int MaxBatchSize() const = 0;
  virtual int64_t KvCacheTokens() const = 0;
  virtual int MaxBatchedTokens() const = 0;
};

}  // namespace gpuscale::sim
