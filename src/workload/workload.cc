#include "workload/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>

#include "workload/tenant_workload.h"

namespace gpuscale::loadgen {
namespace {

Status CheckLength(const LengthDistribution& length, const char* mean_flag,
                   const char* stddev_flag) {
  if (length.mean_tokens < 1) {
    return InvalidArgument(fmt::format("expected at least 1 token, got {}", length.mean_tokens),
                           mean_flag);
  }
  if (!std::isfinite(length.stddev_tokens) || length.stddev_tokens < 0) {
    return InvalidArgument("expected a number of tokens >= 0", stddev_flag);
  }
  return OkStatus();
}

// `words` words whose leading ones are those of `ids`' blocks (PromptText): cut inside the
// last block when the prompt ends there (a trace's last block may be partial), filled up with
// "x" when the blocks cover less than the prompt.
std::string BlockPrompt(std::span<const uint64_t> ids, int32_t block_tokens, int32_t words) {
  const int64_t needed = (int64_t{words} + block_tokens - 1) / block_tokens;
  ids = ids.first(std::min(ids.size(), static_cast<size_t>(needed)));
  std::string text = PromptText(ids, block_tokens);
  int64_t have = static_cast<int64_t>(ids.size()) * block_tokens;
  // REQUIRES words >= 1, so a space is left while have > words.
  for (; have > words; --have) text.resize(text.rfind(' '));  // drops the last word
  for (; have < words; ++have) text += text.empty() ? "x" : " x";
  return text;
}

Status CheckTraceHashes(const WorkloadSpec& spec) {
  if (spec.trace_hash_block_tokens < 0) return InvalidArgument("negative block size", "--trace");
  for (const sim::TraceRequest& row : spec.trace) {
    if (uint64_t{row.hash_begin} + row.hash_count > spec.trace_hash_ids.size()) {
      return InvalidArgument(
          fmt::format("a row's hash ids [{}, +{}) lie past the trace's {}", row.hash_begin,
                      row.hash_count, spec.trace_hash_ids.size()),
          "--trace");
    }
    if (row.tenant >= spec.trace_tenants.size()) {
      return InvalidArgument(fmt::format("a row's tenant {} lies past the trace's {} tenants",
                                         row.tenant, spec.trace_tenants.size()),
                             "--trace");
    }
  }
  return OkStatus();
}

}  // namespace

Status ValidateWorkloadSpec(const WorkloadSpec& spec) {
  GS_RETURN_IF_ERROR(CheckLength(spec.input, "--input-tokens", "--input-stddev"));
  GS_RETURN_IF_ERROR(CheckLength(spec.output, "--output-tokens", "--output-stddev"));
  if (spec.mode == ArrivalMode::kPoisson &&
      (!std::isfinite(spec.rate_per_second) || spec.rate_per_second <= 0)) {
    return InvalidArgument(
        fmt::format("expected requests per second > 0, got {}", spec.rate_per_second), "--rate");
  }
  if (spec.mode == ArrivalMode::kTrace && spec.trace.empty()) {
    return InvalidArgument("the trace has no requests", "--trace");
  }
  if (spec.mode == ArrivalMode::kTrace) GS_RETURN_IF_ERROR(CheckTraceHashes(spec));
  if (spec.max_requests < 0) return InvalidArgument("expected 0 or more", "--max-requests");
  if (!std::isfinite(spec.duration_seconds) || spec.duration_seconds < 0) {
    return InvalidArgument("expected a number of seconds >= 0", "--duration");
  }
  return OkStatus();
}

WorkloadGenerator::WorkloadGenerator(WorkloadSpec spec)
    : spec_(std::move(spec)), state_(spec_.seed) {}

std::optional<PlannedRequest> WorkloadGenerator::Next() {
  if (spec_.max_requests > 0 && generated_ >= spec_.max_requests) return std::nullopt;
  PlannedRequest request;
  request.index = generated_;
  switch (spec_.mode) {
    case ArrivalMode::kClosedLoop:
      break;
    case ArrivalMode::kPoisson:
      clock_seconds_ += -std::log(NextUniform()) / spec_.rate_per_second;
      request.send_at_seconds = clock_seconds_;
      break;
    case ArrivalMode::kTrace: {
      if (generated_ >= static_cast<int64_t>(spec_.trace.size())) return std::nullopt;
      const sim::TraceRequest& row = spec_.trace[static_cast<size_t>(generated_)];
      request.send_at_seconds = row.arrival_s;
      request.input_tokens = std::max(1, row.input_tokens);
      request.output_tokens = std::max(1, row.output_tokens);
      request.priority = row.priority;
      request.tenant = spec_.trace_tenants[row.tenant];
      if (spec_.trace_hash_block_tokens > 0 && row.hash_count > 0) {
        const auto ids =
            std::span<const uint64_t>(spec_.trace_hash_ids).subspan(row.hash_begin, row.hash_count);
        request.prompt = BlockPrompt(ids, spec_.trace_hash_block_tokens, request.input_tokens);
      }
      break;
    }
  }
  if (spec_.mode != ArrivalMode::kClosedLoop && spec_.duration_seconds > 0 &&
      request.send_at_seconds >= spec_.duration_seconds) {
    return std::nullopt;
  }
  if (spec_.mode != ArrivalMode::kTrace) {
    request.input_tokens = DrawLength(spec_.input);
    request.output_tokens = DrawLength(spec_.output);
  }
  ++generated_;
  return request;
}

double WorkloadGenerator::NextUniform() {
  // splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and the same on every platform.
  state_ += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;  // never 0 or 1
}

int32_t WorkloadGenerator::DrawLength(const LengthDistribution& distribution) {
  if (distribution.stddev_tokens <= 0) return distribution.mean_tokens;
  // Box-Muller: one standard normal from two uniforms.
  const double normal =
      std::sqrt(-2.0 * std::log(NextUniform())) * std::cos(2.0 * std::numbers::pi * NextUniform());
  const double tokens = distribution.mean_tokens + distribution.stddev_tokens * normal;
  return static_cast<int32_t>(std::clamp(std::round(tokens), 1.0, 1e9));
}

}  // namespace gpuscale::loadgen
