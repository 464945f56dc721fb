// BatchEngine: the timing model of an LLM serving engine with continuous batching (the way
// vLLM schedules), advanced by the caller's clock so its logic runs in unit tests with a
// ManualClock and in real time under EmulatorServer's scheduler thread.
//
// Model (one "step" = one forward pass of the whole batch):
//   - Requests queue FIFO. At the start of a step the scheduler admits waiting requests from
//     the head while the batch is below max_batch_size and the KV cache can hold the head's
//     prompt_tokens + max_tokens. The reservation is made up front, so running requests are
//     never preempted; a head that does not fit blocks the queue (first-come-first-served, as
//     vLLM's default scheduler).
//   - Step duration: EngineConfig::step_timer when set (step_timer.h; `--timing calibrated`
//     plugs in the simulator's sim::ReplicaModel), else the linear model StepMilliseconds =
//       [ (decode_ms_base + decode_ms_per_seq * batch size) * decode_time_factor
//         + prefill_ms_per_1k_tokens * (prompt tokens prefilled this step) / 1000
//           * prefill_time_factor ]
//       * Parallel(tensor_parallel_size, tp_overhead_ratio)
//       * Parallel(pipeline_parallel_size, pp_overhead_ratio)
//     where Parallel(n, a) = 1/n + a * (n-1)/n: the work is split over n GPUs, and a share `a`
//     of it does not shrink (all-reduce per layer for tensor parallelism, pipeline bubbles
//     for pipeline parallelism). With the defaults a = 0.1 (tp) and 0.25 (pp), tp=2 makes a
//     step 0.55x as long, tp=4 0.325x. decode/prefill_time_factor model dtype and weight
//     quantization (engine_flags.h). Prefill of new requests stalls the decode of the
//     running ones, as in vLLM.
//   - Token budget (max_num_batched_tokens > 0, vLLM's --max-num-batched-tokens): a step
//     processes at most that many tokens, one per decoding sequence plus prefill tokens.
//     With chunked_prefill a prompt is prefilled in chunks over several steps (running
//     prefills first, then newly admitted ones); without it admission stops at the first
//     prompt that does not fit the remaining budget (a prompt alone in a step always fits).
//   - At the end of a step every decoding request has one more output token; a request whose
//     prompt became fully prefilled in the step gets its first token. A request that reaches
//     max_tokens finishes and frees its KV reservation; the next step starts at once when
//     work is left, else the engine idles until the next Submit.
//   - max_model_len > 0: a request with prompt + max_tokens above it is rejected (as vLLM).
//   - prefix_block_tokens > 0: vLLM's automatic prefix caching, as the simulator models it
//     (sim/prefix_cache.h over the KV capacity in blocks): on admission the request's leading
//     cached full blocks (at most all but its last token) are referenced and skip prefill;
//     the blocks it computes are stored when its prefill completes and released when it ends;
//     free cached blocks only use KV memory no running request reserves. The cache's changes
//     come out as vLLM's KV events (TakeKvEvents).
//
// Ownership and thread-safety: owns its request table; not synchronised (EmulatorServer calls
// it under one mutex). Pure: never reads a clock, sleeps or starts threads.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "emulator/step_timer.h"
#include "kvevents/kv_event.h"
#include "metrics/bucket_histogram.h"

namespace gpuscale::sim {
class PrefixCache;
}

namespace gpuscale::emulator {

// Timing and capacity. Defaults resemble an 8B model on one H100 under vLLM, scaled down
// (about 3x faster steps, smaller batch and cache) so that tests and demos run quickly.
struct EngineConfig {
  double prefill_ms_per_1k_tokens = 20.0;  // prefill cost per 1000 prompt tokens in a step
  double decode_ms_base = 5.0;             // fixed cost of one step
  double decode_ms_per_seq = 0.1;          // extra step cost per sequence in the batch
  int32_t max_batch_size = 64;             // most sequences in one step (vLLM max_num_seqs)
  int64_t kv_cache_tokens = 65536;         // KV-cache capacity in tokens
  int32_t tensor_parallel_size = 1;        // GPUs a step is split over (vLLM -tp)
  int32_t pipeline_parallel_size = 1;      // pipeline stages (vLLM -pp)
  double tp_overhead_ratio = 0.1;          // share of a step tensor parallelism cannot split
  double pp_overhead_ratio = 0.25;         // share lost to pipeline bubbles
  double decode_time_factor = 1.0;         // dtype/quantization: scales the decode part
  double prefill_time_factor = 1.0;        // dtype/quantization: scales the prefill part
  int64_t max_num_batched_tokens = 0;      // token budget per step; 0 = unlimited
  bool chunked_prefill = false;            // split prompts over steps within the budget
  int32_t max_model_len = 0;               // most prompt + output tokens; 0 = unlimited
  // Tokens per KV block with prefix caching on (vLLM's --block-size under
  // --enable-prefix-caching); 0 = no prefix cache.
  int32_t prefix_block_tokens = 0;
  // Times each step instead of the linear knobs above (which it then ignores); null = linear.
  // Shared so that configs stay cheap to copy; the timer is immutable.
  std::shared_ptr<const StepTimer> step_timer;
};

// How long one step takes with `batch_size` sequences of which `prefill_tokens` prompt
// tokens are prefilled in it (the model above). REQUIRES: config is valid.
double StepMilliseconds(const EngineConfig& config, int32_t batch_size, int64_t prefill_tokens);

// Errors: InvalidArgument naming the field (as the `gpuscale emulate` flag, e.g.
// "--decode-ms-base") when a time is negative or not finite, or a capacity is < 1.
Status ValidateEngineConfig(const EngineConfig& config);

using RequestId = uint64_t;

enum class RequestState { kWaiting, kRunning, kFinished, kCancelled };

struct RequestProgress {
  RequestState state = RequestState::kWaiting;
  int32_t prompt_tokens = 0;
  int32_t max_tokens = 0;
  int32_t tokens_generated = 0;
  int32_t prefilled_tokens = 0;  // of prompt_tokens; the first token follows the last chunk
  bool stops = false;            // ends at the model's end, not the client's limit
  std::vector<uint64_t> block_keys;  // the prompt's full blocks' chain keys (prefix cache)
  int32_t cached_tokens = 0;         // prompt tokens found in the prefix cache on admission
  int32_t held_blocks = 0;           // leading block_keys this request references
  Seconds arrived_at{0};
  std::optional<Seconds> scheduled_at;  // admitted to the batch (vLLM: SCHEDULED)
  std::optional<Seconds> first_token_at;
  std::optional<Seconds> last_token_at;
  std::optional<Seconds> finished_at;  // finished or cancelled
};

// Counters, gauges and histograms in the shape of vLLM's /metrics (vllm_metrics.h). The
// request histograms other than TTFT and inter-token latency observe finished requests
// only, as vLLM does; a cancelled request adds to none of them.
struct EngineStats {
  int32_t running = 0;
  int32_t waiting = 0;
  int64_t kv_used_tokens = 0;  // reserved by running requests
  int64_t kv_capacity_tokens = 0;
  int64_t prompt_tokens_total = 0;      // prompt tokens prefilled
  int64_t generation_tokens_total = 0;  // output tokens produced
  int64_t requests_finished_total = 0;  // produced their output tokens
  int64_t requests_stopped_total = 0;   // of those, ended at the model's end (finish "stop")
  int64_t requests_cancelled_total = 0;
  // Prompt tokens looked up in the prefix cache on admission, and found there (0 without a
  // prefix cache). The model reserves KV up front, so nothing is preempted.
  int64_t prefix_cache_queries_total = 0;
  int64_t prefix_cache_hits_total = 0;
  int64_t preemptions_total = 0;        // always 0

  using Histogram = metrics::BucketHistogram;
  Histogram ttft_seconds{metrics::kVllmTtftBucketsSeconds};  // arrival -> first token
  // Every gap between two successive output tokens of a request.
  Histogram inter_token_seconds{metrics::kVllmInterTokenBucketsSeconds};
  // Per finished request with two tokens or more: decode time / (tokens - 1).
  Histogram request_tpot_seconds{metrics::kVllmInterTokenBucketsSeconds};
  Histogram e2e_seconds{metrics::kVllmE2eBucketsSeconds};        // arrival -> last token
  Histogram queue_seconds{metrics::kVllmE2eBucketsSeconds};      // arrival -> scheduled
  Histogram prefill_seconds{metrics::kVllmE2eBucketsSeconds};    // scheduled -> first token
  Histogram decode_seconds{metrics::kVllmE2eBucketsSeconds};     // first token -> last token
  Histogram inference_seconds{metrics::kVllmE2eBucketsSeconds};  // scheduled -> last token
  // Token counts per finished request, on vLLM's 1-2-5 bounds up to the longest request the
  // engine takes (max_model_len, else the KV cache).
  Histogram prompt_tokens{metrics::VllmTokenCountBuckets(65536)};
  Histogram generation_tokens{metrics::VllmTokenCountBuckets(65536)};

  // kv_used_tokens / kv_capacity_tokens, in [0, 1].
  double KvUsageRatio() const;
};

class BatchEngine {
 public:
  // REQUIRES: ValidateEngineConfig(config) is ok.
  explicit BatchEngine(const EngineConfig& config);
  ~BatchEngine();
  BatchEngine(BatchEngine&&) noexcept;
  BatchEngine& operator=(BatchEngine&&) noexcept;

  // Advances to `now`, then queues a request arriving at `now` that produces `max_tokens`
  // output tokens; starts a step at `now` when the engine was idle. `stops`: the output ends
  // at the model's own end rather than at the client's limit (counted as finish "stop").
  // `prefilled`: the prompt's KV cache is already here (a decode replica of a disaggregated
  // service received it from a prefill replica), so the request decodes from its first step
  // and its prompt adds no prefill time and no prompt_tokens_total. Errors: InvalidArgument (field
  // "prompt_tokens" or "max_tokens") when either is < 1, or when prompt_tokens + max_tokens exceeds
  // max_model_len or the KV cache, which could never admit it. REQUIRES: `now` is not before the
  // last time passed in.
  // `block_keys`: the prompt's full blocks' chain keys (route/prompt_blocks.h), looked up in
  // the prefix cache when there is one.
  Result<RequestId> Submit(int32_t prompt_tokens, int32_t max_tokens, Seconds now,
                           bool stops = false, bool prefilled = false,
                           std::vector<uint64_t> block_keys = {});

  // Completes every step that ends at or before `now`, starting each next step where the
  // previous one ended. REQUIRES: `now` is not before the last time passed in.
  void Advance(Seconds now);

  // When the step in progress ends; nullopt when idle.
  std::optional<Seconds> NextStepEnd() const { return step_end_; }

  // The request's progress, or nullptr when unknown or forgotten.
  const RequestProgress* Find(RequestId id) const;

  // Drops a waiting or running request (its client went away) and frees its KV reservation.
  // No-op for finished, cancelled or unknown ids.
  void Cancel(RequestId id, Seconds now);

  // Forgets a request's record once its client has read it (finished/cancelled), or cancels
  // and forgets an active one.
  void Forget(RequestId id, Seconds now);

  // The prefix cache's changes since the last call, as vLLM reports them (BlockStored with
  // the chain parent, BlockRemoved, AllBlocksCleared; no token ids, which the emulator does
  // not have); empty without a prefix cache.
  std::vector<kvevents::KvEvent> TakeKvEvents();

  // Waiting + running requests.
  int32_t ActiveRequests() const;
  const EngineStats& stats() const { return stats_; }
  const EngineConfig& config() const { return config_; }

 private:
  void StartStep(Seconds at);
  void FinishStep(Seconds at);
  bool CanAdmit(const RequestProgress& request) const;
  StepShape ShapeOfStep(int64_t prefill_tokens) const;
  double StepSeconds(const StepShape& step) const;
  int64_t PlanPrefill(int64_t budget);
  int64_t AdmitWaiting(int64_t budget, Seconds at);
  void ObserveToken(RequestProgress& request, Seconds at);
  void ObserveFinished(const RequestProgress& request, Seconds at);
  int32_t CachedTokens(const RequestProgress& request) const;
  std::span<const uint64_t> FullBlocks(const RequestProgress& request) const;
  void ReleaseBlocks(RequestProgress& request);

  EngineConfig config_;
  RequestId next_id_ = 1;
  std::unordered_map<RequestId, RequestProgress> requests_;
  std::deque<RequestId> waiting_;   // FIFO
  std::vector<RequestId> running_;  // the batch of the step in progress
  std::unordered_map<RequestId, int32_t> step_prefill_;  // prompt tokens prefilled this step
  std::optional<Seconds> step_end_;
  EngineStats stats_;
  std::unique_ptr<sim::PrefixCache> cache_;  // null without prefix caching
};

}  // namespace gpuscale::emulator
