// SimReplica: one simulated LLM engine replica doing continuous batching (vLLM-style).
//
// Each engine iteration either prefills (a chunk of waiting prompts, up to
// max_batched_tokens, fused with one decode step of the running batch) or decodes. Between
// events the batch is constant, so a run of k decode steps is advanced in O(1): with the
// step time t(B, C) from the ReplicaModel and the context growing by B tokens per step, the
// run lasts k * t(B, C0 + B(k-1)/2) (exact when t is affine in the context, as in the
// roofline-style models we use). A run ends when the next sequence finishes (min-heap of
// finish steps); an arrival that can join the batch truncates the run after the step in
// flight (binary search over k). So the cost per request is O(log n), not O(output tokens).
//
// KV cache: a request is admitted only when its whole footprint (prompt + output tokens)
// fits beside those already admitted, so requests wait in the queue when the cache is full
// and no preemption is ever needed (a conservative stand-in for vLLM's block manager, which
// preempts instead). Metrics mirror vLLM's (see MetricsSnapshot).
//
// Prefix cache (block_tokens > 0): a PrefixCache over the KV capacity in blocks. Admission
// looks the prompt's full blocks up (at most all but its last token, as vLLM recomputes the
// last token of a fully cached prompt), references the hit and prefills only the rest; the
// blocks it computes are stored when its prefill completes and released when it finishes.
// Free cached blocks live in the KV memory no admitted request reserves, and are evicted as
// admissions take it. A request's footprint stays reserved whole even when it shares blocks
// (conservative, like the admission rule above).
//
// Ownership: borrows the model and the shared request table, which must outlive it.
// Thread-safety: none; one simulation thread owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <span>
#include <vector>

#include "route/admission_queue.h"
#include "sim/prefix_cache.h"
#include "sim/replica_model.h"

namespace gpuscale::sim {

// Per-request progress, shared by the engine and the replicas (indexed by request id).
struct RequestRecord {
  double arrival_s = 0;
  double first_token_s = -1;  // < 0 until the first token
  double finish_s = -1;       // < 0 until finished
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  int32_t prefilled_tokens = 0;
  bool aborted = false;  // replica stopped/crashed with the request in flight
  // Routed to a replica within kFreshReplicaSeconds of the end of its cold start.
  bool on_fresh_replica = false;
  // Chain keys of the prompt's blocks (PrefixCache::ChainKeys over the trace's hash_ids;
  // empty without them), owned by the engine. Only the blocks the prompt fills are cached.
  std::span<const uint64_t> block_keys = {};
  int32_t cached_tokens = 0;  // prompt tokens the replica's prefix cache supplied
  int32_t held_blocks = 0;    // leading block_keys referenced in the replica's cache
  // The door's view (SimulationConfig::admission): the request's class, and whether the
  // door shed it (answered 429 instead of queueing it, or when its wait ran out).
  route::Priority priority = route::Priority::kStandard;
  uint32_t tenant = 0;  // Trace::tenants index
  bool shed = false;
  // Sent to a replica while another tenant's request of its priority waited at the door:
  // the window in which fair share is a claim (ClassReport::contended_completed).
  bool contended = false;
};

// How long after its cold start a replica counts as fresh in SimReport::fresh_replica_misses.
inline constexpr double kFreshReplicaSeconds = 60;

// vLLM histogram bucket bounds in seconds (data/README.md); +Inf is implicit.
const std::vector<double>& E2eBuckets();
const std::vector<double>& TtftBuckets();
const std::vector<double>& TpotBuckets();  // vLLM's inter-token latency buckets

// Cumulative per-bucket counts of one histogram (vLLM exposition order, +Inf last).
struct HistogramCounts {
  std::vector<double> counts;  // non-cumulative, size = bounds + 1
  double sum = 0;
  void Observe(const std::vector<double>& bounds, double value);
  std::vector<double> Cumulative() const;
};

class SimReplica {
 public:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  // block_tokens: tokens per prefix-cache block; 0 turns the prefix cache off.
  SimReplica(const ReplicaModel& model, std::vector<RequestRecord>& requests,
             int32_t block_tokens = 0);

  // Queues request `id` at `now`. Returns true when this changed the end of the current
  // segment (the caller re-schedules NextEventTime()).
  bool Enqueue(uint32_t id, double now);
  // Completes the segment ending at NextEventTime() and starts the next one.
  // REQUIRES: now == NextEventTime().
  void FinishSegment(double now);
  double NextEventTime() const { return segment_end_; }

  // When set, every request this replica completes is appended to `log` (the disaggregated
  // engine hands a finished prefill on to the KV transfer). Borrowed; may be null.
  void set_completion_log(std::vector<uint32_t>* log) { completion_log_ = log; }

  // Aborts every request in flight (stop or crash); returns how many.
  int AbortAll();

  int Waiting() const { return static_cast<int>(waiting_.size()); }
  int Running() const { return static_cast<int>(running_.size() + prefilling_.size()); }
  int Outstanding() const { return Waiting() + Running(); }
  double KvUsageRatio() const;
  // Prompt tokens queued or admitted but not yet prefilled (cache hits excluded once known).
  int64_t PendingPrefillTokens() const { return pending_prefill_tokens_; }
  int32_t block_tokens() const { return block_tokens_; }
  // Prompt tokens a request with `keys` and `input_tokens` would find in the cache now.
  int64_t CachedPrefixTokens(std::span<const uint64_t> keys, int32_t input_tokens) const;
  // vLLM's vllm:prefix_cache_queries_total / _hits_total: prompt tokens looked up, and found,
  // at admission (0 with the cache off).
  int64_t prefix_cache_queries() const { return prefix_queries_; }
  int64_t prefix_cache_hits() const { return prefix_hits_; }
  int64_t completed() const { return completed_; }
  // vLLM's vllm:prompt_tokens_total / vllm:generation_tokens_total, counted per finished
  // request (so their rates line up with request_success_total's).
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t generation_tokens() const { return generation_tokens_; }
  const HistogramCounts& e2e() const { return e2e_; }
  const HistogramCounts& ttft() const { return ttft_; }
  const HistogramCounts& tpot() const { return tpot_; }

 private:
  enum class Segment { kIdle, kPrefill, kDecode };
  struct Chunk {
    uint32_t id;
    int32_t tokens;
  };
  struct Finish {
    int64_t step;
    uint32_t id;
    bool operator>(const Finish& o) const { return step != o.step ? step > o.step : id > o.id; }
  };

  bool CanAdmitHead() const;
  std::span<const uint64_t> FullBlocks(const RequestRecord& r) const;
  void Admit(uint32_t id);
  void ReleaseBlocks(RequestRecord& r);
  void TrimFreeBlocks();
  int64_t Footprint(uint32_t id) const;
  void StartNext(double now);
  void StartPrefill(double now);
  void StartDecode(double now);
  double RunSeconds(int64_t steps) const;
  void CompletePrefill(double now);
  void RetireFinished(double now);
  void Complete(uint32_t id, double now);

  const ReplicaModel& model_;
  std::vector<RequestRecord>& requests_;
  const int max_batch_;
  const int64_t kv_capacity_;
  const int max_batched_tokens_;

  std::deque<uint32_t> waiting_;     // not admitted yet, FIFO
  std::deque<uint32_t> prefilling_;  // admitted, prompt partly prefilled
  std::vector<Finish> running_;      // min-heap by finish step
  int64_t step_ = 0;                 // decode steps done so far
  int64_t context_tokens_ = 0;       // KV tokens of running sequences
  int64_t kv_reserved_ = 0;          // footprint of admitted requests

  Segment segment_ = Segment::kIdle;
  double segment_start_ = 0;
  double segment_end_ = kNever;
  int64_t segment_steps_ = 0;  // decode steps in this segment
  int segment_batch_ = 0;      // running sequences during this segment
  std::vector<Chunk> chunks_;  // prompt tokens prefilled by this segment

  const int32_t block_tokens_;
  PrefixCache cache_;
  int64_t pending_prefill_tokens_ = 0;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;

  std::vector<uint32_t>* completion_log_ = nullptr;
  int64_t completed_ = 0;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  HistogramCounts e2e_, ttft_, tpot_;
};

}  // namespace gpuscale::sim
