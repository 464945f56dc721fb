// Trace rate scaling and time compression (see trace.h). Deterministic across platforms:
// the PRNG and the uniform draws are written out here rather than taken from <random>.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/trace.h"

namespace gpuscale::sim {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014), written out so that a seed gives the same stream with
// every standard library; uniforms are built from the top 53 bits rather than through
// std::uniform_real_distribution, whose output is implementation-defined.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

// The mean gap between consecutive arrivals of a sorted trace; 0 below two requests.
double MeanGap(const std::vector<TraceRequest>& in) {
  const size_t n = in.size();
  return n > 1 ? (in.back().arrival_s - in.front().arrival_s) / static_cast<double>(n - 1) : 0;
}

// kReplicate, and sub-sampling in both modes: each request yields floor(rate) copies plus one
// more with probability frac(rate), so the expected count is rate * n for any rate > 0
// (rate < 1 is Bernoulli sub-sampling). The first copy keeps the original time; extra copies
// land uniformly in the gap to the next request (the mean gap after the last one), which
// multiplies every burst of the trace by the rate.
std::vector<TraceRequest> ScaleRate(const std::vector<TraceRequest>& in, double rate,
                                    uint64_t seed) {
  SplitMix64 rng(seed);
  double whole = 0;
  const double frac = std::modf(rate, &whole);
  const size_t n = in.size();
  const double mean_gap = MeanGap(in);
  std::vector<TraceRequest> out;
  out.reserve(static_cast<size_t>(static_cast<double>(n) * (whole + (frac > 0 ? 1 : 0))));
  for (size_t i = 0; i < n; ++i) {
    const int64_t copies = static_cast<int64_t>(whole) + (rng.Uniform() < frac ? 1 : 0);
    const double gap = i + 1 < n ? in[i + 1].arrival_s - in[i].arrival_s : mean_gap;
    for (int64_t c = 0; c < copies; ++c) {
      TraceRequest r = in[i];
      if (c > 0) r.arrival_s += rng.Uniform() * gap;
      out.push_back(r);
    }
  }
  return out;
}

// kStreams (see trace.h): copy 0 is the trace itself; copy c > 0 is the trace shifted by one
// offset of its own, uniform in [-shift, +shift], wrapped into the trace's span (last - first
// arrival plus one mean gap, so the wrapped end does not land on the first request). Copies
// numbered below floor(rate) are whole; the one after them keeps each request with
// probability frac(rate), so the expected count is rate * n.
std::vector<TraceRequest> SuperposeStreams(const std::vector<TraceRequest>& in, double rate,
                                           double shift_seconds, uint64_t seed) {
  if (in.empty()) return {};
  SplitMix64 rng(seed);
  double whole = 0;
  const double frac = std::modf(rate, &whole);
  const double first = in.front().arrival_s;
  const double span = in.back().arrival_s - first + MeanGap(in);
  const int64_t copies = static_cast<int64_t>(whole) + (frac > 0 ? 1 : 0);
  std::vector<TraceRequest> out;
  out.reserve(static_cast<size_t>(static_cast<double>(in.size()) * static_cast<double>(copies)));
  for (int64_t c = 0; c < copies; ++c) {
    const double offset = c == 0 ? 0.0 : (2 * rng.Uniform() - 1) * shift_seconds;
    const bool thinned = static_cast<double>(c) >= whole;
    for (const TraceRequest& original : in) {
      if (thinned && rng.Uniform() >= frac) continue;
      TraceRequest r = original;
      if (offset != 0 && span > 0) {
        const double shifted = std::fmod(r.arrival_s - first + offset, span);
        r.arrival_s = first + (shifted < 0 ? shifted + span : shifted);
      }
      out.push_back(r);
    }
  }
  return out;
}

bool ValidRate(double v) { return std::isfinite(v) && v > 0 && v <= 10000; }
bool ValidCompress(double v) { return std::isfinite(v) && v > 0 && v <= 1e6; }
bool ValidShift(double v) { return std::isfinite(v) && v > 0 && v <= 1e9; }

}  // namespace

Status ValidateTraceTransform(const TraceTransform& transform) {
  if (!ValidRate(transform.rate_scale)) {
    return InvalidArgument(
        fmt::format("expected a number in (0, 10000], got {}", transform.rate_scale), "rate_scale");
  }
  if (!ValidCompress(transform.time_compress)) {
    return InvalidArgument(
        fmt::format("expected a number in (0, 1e6], got {}", transform.time_compress),
        "time_compress");
  }
  if (!ValidShift(transform.stream_shift_seconds)) {
    return InvalidArgument(fmt::format("expected seconds in (0, 1e9], got {}",
                                       transform.stream_shift_seconds),
                           "stream_shift_seconds");
  }
  return OkStatus();
}

std::string_view RateScaleModeName(RateScaleMode mode) {
  return mode == RateScaleMode::kStreams ? "streams" : "replicate";
}

Result<RateScaleMode> ParseRateScaleMode(std::string_view name) {
  if (name == "streams") return RateScaleMode::kStreams;
  if (name == "replicate") return RateScaleMode::kReplicate;
  return InvalidArgument(fmt::format("expected streams or replicate, got '{}'", name),
                         "rate_mode");
}

Trace TransformTrace(const Trace& trace, const TraceTransform& transform) {
  const double rate = ValidRate(transform.rate_scale) ? transform.rate_scale : 1.0;
  const double compress = ValidCompress(transform.time_compress) ? transform.time_compress : 1.0;
  Trace out;
  out.format = trace.format;
  out.skipped_rows = trace.skipped_rows;
  out.first_skipped_row = trace.first_skipped_row;
  // Copies point at the same block hashes: a copy of the user population sends the same
  // prompts (shared system prompts and documents stay shared), at other moments.
  out.hash_ids = trace.hash_ids;
  out.hash_block_tokens = trace.hash_block_tokens;
  out.tenants = trace.tenants;
  const double shift =
      ValidShift(transform.stream_shift_seconds) ? transform.stream_shift_seconds : 300.0;
  if (rate == 1.0) {
    out.requests = trace.requests;
  } else if (rate > 1.0 && transform.mode == RateScaleMode::kStreams) {
    out.requests = SuperposeStreams(trace.requests, rate, shift, transform.seed);
  } else {  // sub-sampling is the same Bernoulli thinning in both modes
    out.requests = ScaleRate(trace.requests, rate, transform.seed);
  }
  for (TraceRequest& r : out.requests) r.arrival_s /= compress;
  SortAndRebase(&out.requests);
  return out;
}

}  // namespace gpuscale::sim
