#include "sim/role_capacity.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "sim/oracle.h"

namespace gpuscale::sim {
namespace {

// Prompt and output lengths spanning the shipped traces (conv, code, Mooncake).
constexpr std::array<double, 6> kPrompts = {128, 512, 2048, 8192, 16384, 32768};
constexpr std::array<double, 4> kOutputs = {16, 64, 256, 1024};
constexpr int kBisectionSteps = 10;
// A load test's length: long enough for queues to form at the rate tried, capped in requests.
constexpr double kTestSeconds = 300;
constexpr double kMaxTestRequests = 20000;

// Poisson arrivals of `rps` prompts of `prompt` tokens, one output token each, from a fixed
// seed (exponential gaps by inversion: std::exponential_distribution differs between
// standard libraries).
std::vector<TraceRequest> PoissonPrompts(double rps, int64_t prompt) {
  std::mt19937_64 rng(1);
  const double seconds = std::min(kTestSeconds, kMaxTestRequests / rps);
  std::vector<TraceRequest> out;
  for (double t = 0; t < seconds;) {
    out.push_back({t, static_cast<int32_t>(prompt), 1});
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    t += -std::log1p(-u) / rps;
  }
  return out;
}

}  // namespace

std::vector<scale::MixCapacity> PrefillCapacities(const ReplicaModel& model, const SloSpec& slo) {
  const int64_t chunk = std::max(model.MaxBatchedTokens(), 1);
  SloSpec ttft_only = slo;
  ttft_only.tpot_seconds = std::numeric_limits<double>::max();
  std::vector<scale::MixCapacity> out;
  for (double prompt : kPrompts) {
    const auto p = static_cast<int64_t>(prompt);
    // Whole prompts packed into a chunk, each paying its own attention, or one chunk of a
    // prompt longer than it.
    PrefillWork work;
    for (int64_t i = 0, n = p >= chunk ? 1 : std::max<int64_t>(chunk / p, 1); i < n; ++i) {
      work.AddChunk(0, std::min(p, chunk));
    }
    const double saturation_rps =
        static_cast<double>(work.tokens) / model.MixedStepSeconds(work, 0, 0) / prompt;
    auto meets = [&](double rps) {
      return SingleReplicaAttainment(model, PoissonPrompts(rps, p), ttft_only) >= slo.target_ratio;
    };
    double lo = 0, hi = saturation_rps;
    for (int i = 0; i < kBisectionSteps; ++i) {
      const double mid = (lo + hi) / 2;
      (meets(mid) ? lo : hi) = mid;
    }
    const double rps = lo > 0 ? lo : saturation_rps;
    out.push_back({prompt, 1, rps * prompt});
  }
  return out;
}

std::vector<scale::MixCapacity> DecodeCapacities(const ReplicaModel& model, double tpot_seconds) {
  std::vector<scale::MixCapacity> out;
  for (double prompt : kPrompts) {
    for (double output : kOutputs) {
      const double context = prompt + output / 2;
      const auto kv_fit = static_cast<int>(std::min<double>(
          static_cast<double>(model.KvCacheTokens()) / (prompt + output), model.MaxBatchSize()));
      int batch = 1;
      for (int b = std::max(kv_fit, 1); b >= 1; --b) {
        const double step = model.DecodeStepSeconds(b, static_cast<int64_t>(b * context));
        if (step <= tpot_seconds) {
          batch = b;
          break;
        }
      }
      const double step = model.DecodeStepSeconds(batch, static_cast<int64_t>(batch * context));
      out.push_back({prompt, output, batch / step});
    }
  }
  return out;
}

}  // namespace gpuscale::sim
