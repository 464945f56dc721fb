#include "emulator/batch_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sim/prefix_cache.h"
#include "sim/replica_model.h"

namespace gpuscale::emulator {
namespace {

Status CheckMilliseconds(double value, const char* flag) {
  if (!std::isfinite(value) || value < 0) {
    return InvalidArgument(
        fmt::format("expected a finite number of milliseconds >= 0, got {}", value), flag);
  }
  return OkStatus();
}

Status CheckFactor(double value, const char* flag) {
  if (!std::isfinite(value) || value <= 0) {
    return InvalidArgument(fmt::format("expected a finite factor > 0, got {}", value), flag);
  }
  return OkStatus();
}

Status CheckOverhead(double value, const char* name) {
  if (!std::isfinite(value) || value < 0 || value > 1) {
    return InvalidArgument(fmt::format("expected a ratio in [0, 1], got {}", value), name);
  }
  return OkStatus();
}

// The parallel split of a step over n GPUs: 1/n of the work each, plus the share `overhead`
// that does not shrink (communication, bubbles) on the other (n-1)/n.
double ParallelFactor(int32_t n, double overhead) {
  const double gpus = static_cast<double>(n);
  return 1.0 / gpus + overhead * (gpus - 1.0) / gpus;
}

// The parallelism, budget and length limits (split out to keep the validator short).
Status ValidateEngineLimits(const EngineConfig& config) {
  if (config.tensor_parallel_size < 1 || config.tensor_parallel_size > 1024) {
    return InvalidArgument(
        fmt::format("expected 1..1024 GPUs, got {}", config.tensor_parallel_size),
        "--tensor-parallel-size");
  }
  if (config.pipeline_parallel_size < 1 || config.pipeline_parallel_size > 1024) {
    return InvalidArgument(
        fmt::format("expected 1..1024 stages, got {}", config.pipeline_parallel_size),
        "--pipeline-parallel-size");
  }
  GS_RETURN_IF_ERROR(CheckOverhead(config.tp_overhead_ratio, "tp_overhead_ratio"));
  GS_RETURN_IF_ERROR(CheckOverhead(config.pp_overhead_ratio, "pp_overhead_ratio"));
  GS_RETURN_IF_ERROR(CheckFactor(config.decode_time_factor, "--quantization"));
  GS_RETURN_IF_ERROR(CheckFactor(config.prefill_time_factor, "--quantization"));
  if (config.max_num_batched_tokens < 0) {
    return InvalidArgument(
        fmt::format("expected 0 (no limit) or more tokens, got {}", config.max_num_batched_tokens),
        "--max-num-batched-tokens");
  }
  if (config.chunked_prefill && config.max_num_batched_tokens == 0) {
    return InvalidArgument("chunked prefill needs a token budget per step",
                           "--max-num-batched-tokens");
  }
  if (config.max_model_len < 0) {
    return InvalidArgument(
        fmt::format("expected 0 (no limit) or more tokens, got {}", config.max_model_len),
        "--max-model-len");
  }
  return OkStatus();
}

}  // namespace

double StepMilliseconds(const EngineConfig& config, int32_t batch_size, int64_t prefill_tokens) {
  const double decode_ms =
      (config.decode_ms_base + config.decode_ms_per_seq * static_cast<double>(batch_size)) *
      config.decode_time_factor;
  const double prefill_ms = config.prefill_ms_per_1k_tokens *
                            static_cast<double>(prefill_tokens) / 1000.0 *
                            config.prefill_time_factor;
  return (decode_ms + prefill_ms) *
         ParallelFactor(config.tensor_parallel_size, config.tp_overhead_ratio) *
         ParallelFactor(config.pipeline_parallel_size, config.pp_overhead_ratio);
}

Status ValidateEngineConfig(const EngineConfig& config) {
  GS_RETURN_IF_ERROR(
      CheckMilliseconds(config.prefill_ms_per_1k_tokens, "--prefill-ms-per-1k-tokens"));
  GS_RETURN_IF_ERROR(CheckMilliseconds(config.decode_ms_base, "--decode-ms-base"));
  GS_RETURN_IF_ERROR(CheckMilliseconds(config.decode_ms_per_seq, "--decode-ms-per-seq"));
  if (config.decode_ms_base + config.decode_ms_per_seq <= 0) {
    return InvalidArgument("a step must take time: set it or --decode-ms-per-seq above 0",
                           "--decode-ms-base");
  }
  if (config.max_batch_size < 1) {
    return InvalidArgument(fmt::format("expected at least 1, got {}", config.max_batch_size),
                           "--max-batch-size");
  }
  if (config.kv_cache_tokens < 2) {
    return InvalidArgument(
        fmt::format("expected at least 2 tokens (one prompt + one output), got {}",
                    config.kv_cache_tokens),
        "--kv-cache-tokens");
  }
  if (config.prefix_block_tokens < 0) {
    return InvalidArgument(fmt::format("expected >= 0, got {}", config.prefix_block_tokens),
                           "--block-size");
  }
  return ValidateEngineLimits(config);
}

double EngineStats::KvUsageRatio() const {
  if (kv_capacity_tokens <= 0) return 0;
  return static_cast<double>(kv_used_tokens) / static_cast<double>(kv_capacity_tokens);
}

BatchEngine::BatchEngine(const EngineConfig& config) : config_(config) {
  stats_.kv_capacity_tokens = config.kv_cache_tokens;
  const int64_t longest = config.max_model_len > 0 ? config.max_model_len : config.kv_cache_tokens;
  stats_.prompt_tokens = metrics::BucketHistogram(metrics::VllmTokenCountBuckets(longest));
  stats_.generation_tokens = metrics::BucketHistogram(metrics::VllmTokenCountBuckets(longest));
  if (config.prefix_block_tokens > 0) {
    cache_ =
        std::make_unique<sim::PrefixCache>(config.kv_cache_tokens / config.prefix_block_tokens);
    cache_->RecordChanges();
  }
}

BatchEngine::~BatchEngine() = default;
BatchEngine::BatchEngine(BatchEngine&&) noexcept = default;
BatchEngine& BatchEngine::operator=(BatchEngine&&) noexcept = default;

Result<RequestId> BatchEngine::Submit(int32_t prompt_tokens, int32_t max_tokens, Seconds now,
                                      bool stops, bool prefilled,
                                      std::vector<uint64_t> block_keys) {
  if (prompt_tokens < 1) {
    return InvalidArgument(fmt::format("expected at least 1 token, got {}", prompt_tokens),
                           "prompt_tokens");
  }
  if (max_tokens < 1) {
    return InvalidArgument(fmt::format("expected at least 1, got {}", max_tokens), "max_tokens");
  }
  const int64_t need = int64_t{prompt_tokens} + max_tokens;
  if (config_.max_model_len > 0 && need > config_.max_model_len) {
    // vLLM's wording, so clients that parse it behave the same.
    return InvalidArgument(
        fmt::format("This model's maximum context length is {} tokens. However, you requested "
                    "{} tokens ({} in the prompt, {} in the completion)",
                    config_.max_model_len, need, prompt_tokens, max_tokens),
        "max_tokens");
  }
  if (need > config_.kv_cache_tokens) {
    return InvalidArgument(
        fmt::format("prompt ({} tokens) + max_tokens ({}) = {} exceeds the KV cache of {} tokens",
                    prompt_tokens, max_tokens, need, config_.kv_cache_tokens),
        "max_tokens");
  }
  Advance(now);
  const RequestId id = next_id_++;
  RequestProgress& request = requests_[id];
  request.prompt_tokens = prompt_tokens;
  request.max_tokens = max_tokens;
  request.stops = stops;
  request.prefilled_tokens = prefilled ? prompt_tokens : 0;
  request.block_keys = std::move(block_keys);
  request.arrived_at = now;
  waiting_.push_back(id);
  ++stats_.waiting;
  if (!step_end_) StartStep(now);
  return id;
}

void BatchEngine::Advance(Seconds now) {
  while (step_end_ && *step_end_ <= now) {
    const Seconds end = *step_end_;
    FinishStep(end);
    step_end_.reset();
    if (!running_.empty() || !waiting_.empty()) StartStep(end);
  }
}

bool BatchEngine::CanAdmit(const RequestProgress& request) const {
  return static_cast<int32_t>(running_.size()) < config_.max_batch_size &&
         stats_.kv_used_tokens + request.prompt_tokens + request.max_tokens <=
             config_.kv_cache_tokens;
}

// Gives running requests that are still prefilling their next chunk (oldest first); returns
// the prompt tokens planned. Without chunked prefill every prompt was planned whole on
// admission, so nothing is left here.
int64_t BatchEngine::PlanPrefill(int64_t budget) {
  int64_t planned = 0;
  for (RequestId id : running_) {
    const RequestProgress& request = requests_.at(id);
    const int64_t left = request.prompt_tokens - request.prefilled_tokens;
    if (left <= 0 || budget <= 0) continue;
    const int32_t chunk = static_cast<int32_t>(std::min(left, budget));
    step_prefill_[id] = chunk;
    planned += chunk;
    budget -= chunk;
  }
  return planned;
}

// Admits waiting requests from the head while batch, KV cache and token budget allow;
// returns the prompt tokens planned for this step.
int64_t BatchEngine::AdmitWaiting(int64_t budget, Seconds at) {
  int64_t planned = 0;
  while (!waiting_.empty() && budget > 0) {
    RequestProgress& head = requests_.at(waiting_.front());
    if (!CanAdmit(head)) break;  // FCFS: a head that does not fit blocks those behind it
    // Without chunking a prompt is prefilled whole: it must fit the budget left, unless it
    // is alone in the step (else it could never run). A prompt already in KV has none left,
    // and its cached prefix is not prefilled either.
    const int32_t prompt_left = head.prompt_tokens - head.prefilled_tokens;
    const int32_t cached = prompt_left == head.prompt_tokens ? CachedTokens(head) : 0;
    const int32_t to_prefill = prompt_left - cached;
    if (!config_.chunked_prefill && to_prefill > budget && planned > 0) break;
    const int32_t chunk = config_.chunked_prefill
                              ? static_cast<int32_t>(std::min<int64_t>(to_prefill, budget))
                              : to_prefill;
    head.state = RequestState::kRunning;
    head.scheduled_at = at;
    stats_.kv_used_tokens += head.prompt_tokens + head.max_tokens;
    stats_.prompt_tokens_total += prompt_left;
    stats_.prefix_cache_queries_total += prompt_left;
    if (cached > 0) {
      head.held_blocks = static_cast<int32_t>(
          cache_->Acquire(head.block_keys, cached / config_.prefix_block_tokens));
      head.cached_tokens = cached;
      head.prefilled_tokens += cached;
      stats_.prefix_cache_hits_total += cached;
    }
    if (chunk > 0) step_prefill_[waiting_.front()] = chunk;
    planned += chunk;
    budget -= chunk;
    running_.push_back(waiting_.front());
    waiting_.pop_front();
  }
  return planned;
}

void BatchEngine::StartStep(Seconds at) {
  step_prefill_.clear();
  int64_t budget = config_.max_num_batched_tokens > 0 ? config_.max_num_batched_tokens
                                                      : std::numeric_limits<int64_t>::max();
  // Decoding sequences take one token of the budget each (vLLM schedules decodes first).
  for (RequestId id : running_) {
    const RequestProgress& request = requests_.at(id);
    if (request.prefilled_tokens >= request.prompt_tokens) --budget;
  }
  int64_t prefill_tokens = PlanPrefill(budget);
  prefill_tokens += AdmitWaiting(budget - prefill_tokens, at);
  if (cache_) {
    // Free cached blocks live in the KV memory that admitted requests leave.
    cache_->TrimFree((config_.kv_cache_tokens - stats_.kv_used_tokens) /
                     config_.prefix_block_tokens);
  }
  stats_.running = static_cast<int32_t>(running_.size());
  stats_.waiting = static_cast<int32_t>(waiting_.size());
  // Empty only if nothing runs and the head cannot fit an empty cache, which Submit rules out.
  if (running_.empty()) return;
  step_end_ = at + Seconds{StepSeconds(ShapeOfStep(prefill_tokens))};
}

// The planned step: every running request whose prompt is already in KV (including one
// admitted with its prompt prefilled elsewhere) decodes one token over its context.
StepShape BatchEngine::ShapeOfStep(int64_t prefill_tokens) const {
  StepShape step;
  step.batch_size = static_cast<int32_t>(running_.size());
  step.prefill_tokens = prefill_tokens;
  // Each prompt's chunk attends to what of that prompt is in KV (cached prefix included).
  sim::PrefillWork work;
  for (const auto& [id, chunk] : step_prefill_) {
    work.AddChunk(requests_.at(id).prefilled_tokens, chunk);
  }
  step.prefill_attention_tokens2 = work.attention_tokens2;
  for (RequestId id : running_) {
    const RequestProgress& request = requests_.at(id);
    if (request.prefilled_tokens < request.prompt_tokens) continue;
    ++step.decoding;
    step.context_tokens += int64_t{request.prompt_tokens} + request.tokens_generated;
  }
  return step;
}

double BatchEngine::StepSeconds(const StepShape& step) const {
  if (config_.step_timer) return config_.step_timer->StepSeconds(step);
  return StepMilliseconds(config_, step.batch_size, step.prefill_tokens) / 1000.0;
}

void BatchEngine::FinishStep(Seconds at) {
  std::vector<RequestId> still_running;
  still_running.reserve(running_.size());
  for (RequestId id : running_) {
    RequestProgress& request = requests_.at(id);
    if (auto chunk = step_prefill_.find(id); chunk != step_prefill_.end()) {
      request.prefilled_tokens += chunk->second;
      if (cache_ && request.prefilled_tokens >= request.prompt_tokens) {
        request.held_blocks =
            static_cast<int32_t>(cache_->Store(FullBlocks(request), request.held_blocks));
      }
    }
    if (request.prefilled_tokens < request.prompt_tokens) {  // more chunks to go
      still_running.push_back(id);
      continue;
    }
    ObserveToken(request, at);
    if (request.tokens_generated < request.max_tokens) {
      still_running.push_back(id);
      continue;
    }
    request.state = RequestState::kFinished;
    request.finished_at = at;
    ReleaseBlocks(request);
    stats_.kv_used_tokens -= request.prompt_tokens + request.max_tokens;
    ++stats_.requests_finished_total;
    if (request.stops) ++stats_.requests_stopped_total;
    ObserveFinished(request, at);
  }
  running_ = std::move(still_running);
  stats_.running = static_cast<int32_t>(running_.size());
}

// One more output token at `at`: TTFT for the first, an inter-token gap for the others.
void BatchEngine::ObserveToken(RequestProgress& request, Seconds at) {
  ++request.tokens_generated;
  ++stats_.generation_tokens_total;
  if (!request.first_token_at) {
    request.first_token_at = at;
    stats_.ttft_seconds.Observe((at - request.arrived_at).count());
  } else {
    stats_.inter_token_seconds.Observe((at - *request.last_token_at).count());
  }
  request.last_token_at = at;
}

// vLLM's per-request intervals (its metrics design: queued -> scheduled -> first token ->
// last token). A request only finishes after its first token, so every time point is set.
void BatchEngine::ObserveFinished(const RequestProgress& request, Seconds at) {
  const Seconds scheduled = request.scheduled_at.value_or(request.arrived_at);
  const Seconds first = request.first_token_at.value_or(at);
  const double decode = (at - first).count();
  stats_.e2e_seconds.Observe((at - request.arrived_at).count());
  stats_.queue_seconds.Observe((scheduled - request.arrived_at).count());
  stats_.prefill_seconds.Observe((first - scheduled).count());
  stats_.decode_seconds.Observe(decode);
  stats_.inference_seconds.Observe((at - scheduled).count());
  // One token has no gap to average.
  if (request.tokens_generated > 1) {
    stats_.request_tpot_seconds.Observe(decode / (request.tokens_generated - 1));
  }
  stats_.prompt_tokens.Observe(request.prompt_tokens);
  stats_.generation_tokens.Observe(request.tokens_generated);
}

const RequestProgress* BatchEngine::Find(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

void BatchEngine::Cancel(RequestId id, Seconds now) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  RequestProgress& request = it->second;
  if (request.state == RequestState::kWaiting) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
  } else if (request.state == RequestState::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), id));
    stats_.kv_used_tokens -= request.prompt_tokens + request.max_tokens;
    ReleaseBlocks(request);
  } else {
    return;
  }
  request.state = RequestState::kCancelled;
  request.finished_at = now;
  ++stats_.requests_cancelled_total;
  stats_.running = static_cast<int32_t>(running_.size());
  stats_.waiting = static_cast<int32_t>(waiting_.size());
  // The step in progress keeps its computed length (the GPU work was already launched).
}

void BatchEngine::Forget(RequestId id, Seconds now) {
  Cancel(id, now);
  requests_.erase(id);
}

// The prompt's full blocks: a trailing partial block is never cached.
std::span<const uint64_t> BatchEngine::FullBlocks(const RequestProgress& request) const {
  const auto full = static_cast<size_t>(request.prompt_tokens / config_.prefix_block_tokens);
  return std::span<const uint64_t>(request.block_keys)
      .first(std::min(full, request.block_keys.size()));
}

// Tokens of the prompt's cached leading blocks, at most all but its last token: vLLM computes
// the last token of a fully cached prompt again, to have its logits.
int32_t BatchEngine::CachedTokens(const RequestProgress& request) const {
  if (!cache_) return 0;
  const int32_t block = config_.prefix_block_tokens;
  const auto most = static_cast<size_t>((request.prompt_tokens - 1) / block);
  const std::span<const uint64_t> full = FullBlocks(request);
  return static_cast<int32_t>(cache_->Match(full.first(std::min(most, full.size())))) * block;
}

void BatchEngine::ReleaseBlocks(RequestProgress& request) {
  if (!cache_ || request.held_blocks == 0) return;
  cache_->Release(std::span<const uint64_t>(request.block_keys)
                      .first(static_cast<size_t>(request.held_blocks)));
  request.held_blocks = 0;
}

// Consecutive stores that extend one chain become one BlockStored, as vLLM reports the blocks
// a request computed; evictions in a row become one BlockRemoved.
std::vector<kvevents::KvEvent> BatchEngine::TakeKvEvents() {
  using Kind = sim::PrefixCache::ChangeKind;
  std::vector<kvevents::KvEvent> events;
  if (!cache_) return events;
  for (const sim::PrefixCache::Change& c : cache_->TakeChanges()) {
    kvevents::KvEvent* last = events.empty() ? nullptr : &events.back();
    if (c.kind == Kind::kCleared) {
      events.push_back(kvevents::KvEvent{});
    } else if (c.kind == Kind::kRemoved) {
      if (last == nullptr || last->kind != kvevents::KvEventKind::kBlockRemoved) {
        last = &events.emplace_back();
        last->kind = kvevents::KvEventKind::kBlockRemoved;
        last->medium = "GPU";
      }
      last->block_hashes.push_back(c.key);
    } else {
      if (last == nullptr || last->kind != kvevents::KvEventKind::kBlockStored ||
          c.parent != last->block_hashes.back()) {
        last = &events.emplace_back();
        last->kind = kvevents::KvEventKind::kBlockStored;
        last->parent_block_hash = c.parent;
        last->block_size = config_.prefix_block_tokens;
        last->medium = "GPU";
      }
      last->block_hashes.push_back(c.key);
    }
  }
  return events;
}

int32_t BatchEngine::ActiveRequests() const {
  return static_cast<int32_t>(running_.size() + waiting_.size());
}

}  // namespace gpuscale::emulator
