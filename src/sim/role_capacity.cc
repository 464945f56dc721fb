#include "sim/role_capacity.h"

#include <algorithm>
#include <array>

namespace gpuscale::sim {
namespace {

// Prompt and output lengths spanning the shipped traces (conv, code, Mooncake).
constexpr std::array<double, 6> kPrompts = {128, 512, 2048, 8192, 16384, 32768};
constexpr std::array<double, 4> kOutputs = {16, 64, 256, 1024};

}  // namespace

std::vector<scale::MixCapacity> PrefillCapacities(const ReplicaModel& model) {
  const int64_t chunk = std::max(model.MaxBatchedTokens(), 1);
  std::vector<scale::MixCapacity> out;
  for (double prompt : kPrompts) {
    const auto p = static_cast<int64_t>(prompt);
    // Whole prompts packed into a chunk, or one chunk of a prompt longer than it.
    const int64_t tokens = p >= chunk ? chunk : std::max<int64_t>(chunk / p, 1) * p;
    out.push_back({prompt, 1, static_cast<double>(tokens) / model.PrefillSeconds(tokens)});
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
