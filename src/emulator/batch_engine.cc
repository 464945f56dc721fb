#include "emulator/batch_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace gpuscale::emulator {
namespace {

Status CheckMilliseconds(double value, const char* flag) {
  if (!std::isfinite(value) || value < 0) {
    return InvalidArgument(
        fmt::format("expected a finite number of milliseconds >= 0, got {}", value), flag);
  }
  return OkStatus();
}

}  // namespace

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
  return OkStatus();
}

double EngineStats::KvUsageRatio() const {
  if (kv_capacity_tokens <= 0) return 0;
  return static_cast<double>(kv_used_tokens) / static_cast<double>(kv_capacity_tokens);
}

BatchEngine::BatchEngine(const EngineConfig& config) : config_(config) {
  stats_.kv_capacity_tokens = config.kv_cache_tokens;
}

Result<RequestId> BatchEngine::Submit(int32_t prompt_tokens, int32_t max_tokens, Seconds now) {
  if (prompt_tokens < 1) {
    return InvalidArgument(fmt::format("expected at least 1 token, got {}", prompt_tokens),
                           "prompt_tokens");
  }
  if (max_tokens < 1) {
    return InvalidArgument(fmt::format("expected at least 1, got {}", max_tokens), "max_tokens");
  }
  const int64_t need = int64_t{prompt_tokens} + max_tokens;
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

void BatchEngine::StartStep(Seconds at) {
  int64_t prefill_tokens = 0;
  while (!waiting_.empty()) {
    RequestProgress& head = requests_.at(waiting_.front());
    if (!CanAdmit(head)) break;  // FCFS: a head that does not fit blocks those behind it
    head.state = RequestState::kRunning;
    stats_.kv_used_tokens += head.prompt_tokens + head.max_tokens;
    stats_.prompt_tokens_total += head.prompt_tokens;
    prefill_tokens += head.prompt_tokens;
    running_.push_back(waiting_.front());
    waiting_.pop_front();
  }
  stats_.running = static_cast<int32_t>(running_.size());
  stats_.waiting = static_cast<int32_t>(waiting_.size());
  // Empty only if nothing runs and the head cannot fit an empty cache, which Submit rules out.
  if (running_.empty()) return;
  const double step_ms =
      config_.decode_ms_base + config_.decode_ms_per_seq * static_cast<double>(running_.size()) +
      config_.prefill_ms_per_1k_tokens * static_cast<double>(prefill_tokens) / 1000.0;
  step_end_ = at + Seconds{step_ms / 1000.0};
}

void BatchEngine::FinishStep(Seconds at) {
  std::vector<RequestId> still_running;
  still_running.reserve(running_.size());
  for (RequestId id : running_) {
    RequestProgress& request = requests_.at(id);
    ++request.tokens_generated;
    ++stats_.generation_tokens_total;
    if (!request.first_token_at) {
      request.first_token_at = at;
      stats_.ttft_seconds.Observe((at - request.arrived_at).count());
    }
    if (request.tokens_generated < request.max_tokens) {
      still_running.push_back(id);
      continue;
    }
    request.state = RequestState::kFinished;
    request.finished_at = at;
    stats_.kv_used_tokens -= request.prompt_tokens + request.max_tokens;
    ++stats_.requests_finished_total;
    stats_.e2e_seconds.Observe((at - request.arrived_at).count());
  }
  running_ = std::move(still_running);
  stats_.running = static_cast<int32_t>(running_.size());
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

int32_t BatchEngine::ActiveRequests() const {
  return static_cast<int32_t>(running_.size() + waiting_.size());
}

}  // namespace gpuscale::emulator
