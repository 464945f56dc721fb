// AffineReplicaModel: a ReplicaModel with affine costs (fixed + per token / per sequence),
// for tests that need hand-checkable costs (`gpuscale simulate` uses the calibrated model of
// replica_model.h). Defaults approximate Llama-3-8B on one H100 (data/README.md: TPOT ~8 ms
// at light load, ~36 req/s at saturation on 202-in/179-out requests).
//
// Thread-safety: immutable after construction; safe to share between simulations.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sim/replica_model.h"

namespace gpuscale::sim {

struct AffineCosts {
  double prefill_base_s = 0.010;       // per prefill iteration
  double prefill_per_token_s = 5e-5;   // ~20k prompt tokens/s
  double decode_base_s = 0.007;        // per decode step (weights read once)
  double decode_per_seq_s = 2e-5;      // per sequence in the batch
  double decode_per_context_token_s = 4e-8;  // KV reads
  int max_batch_size = 256;
  int64_t kv_cache_tokens = 400000;
  int max_batched_tokens = 8192;
};

class AffineReplicaModel final : public ReplicaModel {
 public:
  explicit AffineReplicaModel(AffineCosts costs = {}) : c_(costs) {}
  double PrefillSeconds(int64_t prompt_tokens) const override {
    return prompt_tokens <= 0 ? 0
                              : c_.prefill_base_s +
                                    c_.prefill_per_token_s * static_cast<double>(prompt_tokens);
  }
  double DecodeStepSeconds(int batch, int64_t context_tokens) const override {
    return c_.decode_base_s + c_.decode_per_seq_s * batch +
           c_.decode_per_context_token_s * static_cast<double>(context_tokens);
  }
  // The fixed costs overlap (one pass over the weights): the larger one is paid once. No
  // attention term: linear in the tokens, so per prompt or per chunk is the same.
  double MixedStepSeconds(const PrefillWork& prefill, int batch,
                          int64_t context_tokens) const override {
    if (prefill.tokens <= 0) return DecodeStepSeconds(batch, context_tokens);
    if (batch <= 0) return PrefillSeconds(prefill.tokens);
    return PrefillSeconds(prefill.tokens) + DecodeStepSeconds(batch, context_tokens) -
           std::min(c_.prefill_base_s, c_.decode_base_s);
  }
  int MaxBatchSize() const override { return c_.max_batch_size; }
  int64_t KvCacheTokens() const override { return c_.kv_cache_tokens; }
  int MaxBatchedTokens() const override { return c_.max_batched_tokens; }

 private:
  AffineCosts c_;
};

}  // namespace gpuscale::sim
