#include "sim/sim_replica.h"

#include <algorithm>
#include <functional>

namespace gpuscale::sim {

const std::vector<double>& E2eBuckets() {
  static const std::vector<double> kBounds = {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,
                                              20,  30,  40,  50, 60,  120, 240, 480, 960, 1920,
                                              7680};
  return kBounds;
}

const std::vector<double>& TtftBuckets() {
  static const std::vector<double> kBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                              0.25,  0.5,   0.75, 1,    2.5,  5,    7.5,  10,
                                              20,    40,    80,   160,  640,  2560};
  return kBounds;
}

const std::vector<double>& TpotBuckets() {
  static const std::vector<double> kBounds = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                              0.3,  0.4,   0.5,  0.75,  1,   2.5,  5,
                                              7.5,  10,    20,   40,    80};
  return kBounds;
}

void HistogramCounts::Observe(const std::vector<double>& bounds, double value) {
  if (counts.empty()) counts.assign(bounds.size() + 1, 0.0);
  // Prometheus `le`: a bucket counts values <= its bound.
  size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                                 bounds.begin());
  counts[i] += 1;
  sum += value;
}

std::vector<double> HistogramCounts::Cumulative() const {
  std::vector<double> out(counts.size());
  double total = 0;
  for (size_t i = 0; i < counts.size(); ++i) out[i] = total += counts[i];
  return out;
}

SimReplica::SimReplica(const ReplicaModel& model, std::vector<RequestRecord>& requests,
                       int32_t block_tokens)
    : model_(model),
      requests_(requests),
      max_batch_(std::max(model.MaxBatchSize(), 1)),
      kv_capacity_(model.KvCacheTokens()),
      max_batched_tokens_(std::max(model.MaxBatchedTokens(), 1)),
      block_tokens_(std::max(block_tokens, 0)),
      cache_(block_tokens_ > 0 ? kv_capacity_ / block_tokens_ : 0) {}

std::span<const uint64_t> SimReplica::FullBlocks(const RequestRecord& r) const {
  if (block_tokens_ <= 0) return {};
  return r.block_keys.first(
      std::min<size_t>(r.block_keys.size(), static_cast<size_t>(r.input_tokens / block_tokens_)));
}

int64_t SimReplica::CachedPrefixTokens(std::span<const uint64_t> keys, int32_t input_tokens) const {
  if (block_tokens_ <= 0 || input_tokens <= 0) return 0;
  const int64_t most = (int64_t{input_tokens} - 1) / block_tokens_;
  const auto full = keys.first(std::min<size_t>(keys.size(), static_cast<size_t>(most)));
  return cache_.Match(full) * block_tokens_;
}

// Looks the prompt up when the scheduler admits it (vLLM's get_computed_blocks): the hit is
// referenced at once and never prefilled.
void SimReplica::Admit(uint32_t id) {
  RequestRecord& r = requests_[id];
  kv_reserved_ += Footprint(id);
  if (block_tokens_ <= 0) return;
  const int64_t most = std::max<int64_t>((int64_t{r.input_tokens} - 1) / block_tokens_, 0);
  r.held_blocks = static_cast<int32_t>(cache_.Acquire(FullBlocks(r), most));
  r.cached_tokens = r.held_blocks * block_tokens_;
  r.prefilled_tokens = r.cached_tokens;
  pending_prefill_tokens_ -= r.cached_tokens;
  prefix_queries_ += r.input_tokens;
  prefix_hits_ += r.cached_tokens;
  TrimFreeBlocks();
}

// Free cached blocks may only use the KV memory that admitted requests leave.
void SimReplica::TrimFreeBlocks() {
  cache_.TrimFree(std::max<int64_t>(kv_capacity_ - kv_reserved_, 0) / block_tokens_);
}

void SimReplica::ReleaseBlocks(RequestRecord& r) {
  if (r.held_blocks > 0) cache_.Release(r.block_keys.first(static_cast<size_t>(r.held_blocks)));
  r.held_blocks = 0;
}

int64_t SimReplica::Footprint(uint32_t id) const {
  return int64_t{requests_[id].input_tokens} + requests_[id].output_tokens;
}

bool SimReplica::CanAdmitHead() const {
  if (waiting_.empty() || Running() >= max_batch_) return false;
  // An empty replica admits even a request larger than its cache, so nothing waits forever.
  return kv_reserved_ == 0 || kv_reserved_ + Footprint(waiting_.front()) <= kv_capacity_;
}

double SimReplica::KvUsageRatio() const {
  if (kv_capacity_ <= 0) return 0;
  int64_t used = context_tokens_;
  for (uint32_t id : prefilling_) used += requests_[id].prefilled_tokens;
  return std::min(1.0, static_cast<double>(used) / static_cast<double>(kv_capacity_));
}

bool SimReplica::Enqueue(uint32_t id, double now) {
  waiting_.push_back(id);
  // A decode replica of a disaggregated pool gets requests already prefilled.
  pending_prefill_tokens_ +=
      std::max(requests_[id].input_tokens, 1) - requests_[id].prefilled_tokens;
  if (segment_ == Segment::kIdle) {
    StartNext(now);
    return true;
  }
  if (segment_ != Segment::kDecode || waiting_.size() != 1 || !CanAdmitHead()) return false;
  // The new request can join: cut the decode run after the step in flight at `now`.
  int64_t lo = 0, hi = segment_steps_;  // largest j with start + T(j) <= now
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (segment_start_ + RunSeconds(mid) <= now) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  int64_t steps = std::min(lo + 1, segment_steps_);
  if (steps >= segment_steps_) return false;
  segment_steps_ = steps;
  segment_end_ = segment_start_ + RunSeconds(steps);
  return true;
}

double SimReplica::RunSeconds(int64_t steps) const {
  if (steps <= 0) return 0;
  // Mid-run context: exact total for step times affine in the context.
  int64_t mid_context = context_tokens_ + int64_t{segment_batch_} * (steps - 1) / 2;
  return static_cast<double>(steps) * model_.DecodeStepSeconds(segment_batch_, mid_context);
}

void SimReplica::FinishSegment(double now) {
  if (segment_ == Segment::kPrefill) {
    step_ += segment_steps_;
    context_tokens_ += int64_t{segment_batch_} * segment_steps_;
    CompletePrefill(now);
    RetireFinished(now);
  } else if (segment_ == Segment::kDecode) {
    step_ += segment_steps_;
    context_tokens_ += int64_t{segment_batch_} * segment_steps_;
    RetireFinished(now);
  }
  StartNext(now);
}

void SimReplica::StartNext(double now) {
  if (!prefilling_.empty() || CanAdmitHead()) {
    StartPrefill(now);
  } else if (!running_.empty()) {
    StartDecode(now);
  } else {
    segment_ = Segment::kIdle;
    segment_end_ = kNever;
  }
}

void SimReplica::StartPrefill(double now) {
  segment_ = Segment::kPrefill;
  segment_batch_ = static_cast<int>(running_.size());
  segment_steps_ = segment_batch_ > 0 ? 1 : 0;
  int64_t budget = std::max<int64_t>(max_batched_tokens_ - segment_batch_, 1);
  int64_t total = 0;
  PrefillWork work;
  chunks_.clear();
  auto take = [&](uint32_t id) {
    const auto& r = requests_[id];
    int64_t left = std::max(r.input_tokens, 1) - r.prefilled_tokens;
    int64_t n = std::min(left, budget - total);
    if (n > 0) chunks_.push_back({id, static_cast<int32_t>(n)});
    work.AddChunk(r.prefilled_tokens, n);  // attention over its own prompt only
    total += std::max<int64_t>(n, 0);
  };
  for (uint32_t id : prefilling_) {
    if (total >= budget) break;
    take(id);
  }
  while (total < budget && CanAdmitHead()) {
    uint32_t id = waiting_.front();
    waiting_.pop_front();
    Admit(id);
    prefilling_.push_back(id);
    take(id);
  }
  // One fused iteration: the per-step fixed cost is paid once (MixedStepSeconds).
  double seconds = model_.MixedStepSeconds(work, segment_batch_, context_tokens_);
  segment_start_ = now;
  segment_end_ = now + seconds;
}

void SimReplica::StartDecode(double now) {
  segment_ = Segment::kDecode;
  segment_batch_ = static_cast<int>(running_.size());
  segment_steps_ = std::max<int64_t>(running_.front().step - step_, 1);
  segment_start_ = now;
  segment_end_ = now + RunSeconds(segment_steps_);
}

void SimReplica::CompletePrefill(double now) {
  for (const Chunk& c : chunks_) {
    requests_[c.id].prefilled_tokens += c.tokens;
    pending_prefill_tokens_ -= c.tokens;
  }
  chunks_.clear();
  while (!prefilling_.empty()) {
    uint32_t id = prefilling_.front();
    auto& r = requests_[id];
    if (r.prefilled_tokens < std::max(r.input_tokens, 1)) break;  // FIFO: the rest wait too
    prefilling_.pop_front();
    if (block_tokens_ > 0) {
      r.held_blocks = static_cast<int32_t>(cache_.Store(FullBlocks(r), r.held_blocks));
    }
    r.first_token_s = now;
    ttft_.Observe(TtftBuckets(), now - r.arrival_s);
    if (r.output_tokens <= 1) {
      Complete(id, now);
      continue;
    }
    running_.push_back({step_ + r.output_tokens - 1, id});
    std::push_heap(running_.begin(), running_.end(), std::greater<Finish>());
    context_tokens_ += int64_t{r.input_tokens} + 1;
  }
}

void SimReplica::RetireFinished(double now) {
  while (!running_.empty() && running_.front().step <= step_) {
    uint32_t id = running_.front().id;
    std::pop_heap(running_.begin(), running_.end(), std::greater<Finish>());
    running_.pop_back();
    context_tokens_ -= Footprint(id);
    Complete(id, now);
  }
}

void SimReplica::Complete(uint32_t id, double now) {
  auto& r = requests_[id];
  r.finish_s = now;
  kv_reserved_ -= Footprint(id);
  ReleaseBlocks(r);
  ++completed_;
  if (completion_log_ != nullptr) completion_log_->push_back(id);
  prompt_tokens_ += r.input_tokens;
  generation_tokens_ += r.output_tokens;
  e2e_.Observe(E2eBuckets(), now - r.arrival_s);
  if (r.output_tokens > 1) {
    tpot_.Observe(TpotBuckets(), (now - r.first_token_s) / (r.output_tokens - 1));
  }
}

int SimReplica::AbortAll() {
  int n = 0;
  auto abort = [&](uint32_t id) {
    requests_[id].aborted = true;
    requests_[id].held_blocks = 0;
    ++n;
  };
  for (uint32_t id : waiting_) abort(id);
  for (uint32_t id : prefilling_) abort(id);
  for (const Finish& f : running_) abort(f.id);
  waiting_.clear();
  prefilling_.clear();
  running_.clear();
  chunks_.clear();
  kv_reserved_ = 0;
  context_tokens_ = 0;
  pending_prefill_tokens_ = 0;
  cache_.Clear();  // the engine restarts cold
  segment_ = Segment::kIdle;
  segment_end_ = kNever;
  return n;
}

}  // namespace gpuscale::sim
