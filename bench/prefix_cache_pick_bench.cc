// What prefix_cache routing with the precise index costs per request (issue 46's target: under
// 20 us): 8 replicas whose KV events announced 100,000 blocks each (route::KvBlockIndex via
// route::PrefixCacheLookup), a prompt of 16-token blocks of which half the replicas hold a
// prefix of different lengths. One iteration is what GatewayState::AcquireLocked does for it:
// fill every candidate's cached tokens, pick, record the choice in the approximate index.
// BM_PromptBlockKeys: computing the prompt's block keys from its text (once per request, at
// the door, outside the routing lock).
// Run: build/bench/prefix_cache_pick_bench
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "route/picker.h"
#include "route/prefix_cache_lookup.h"
#include "route/prompt_blocks.h"

namespace {

using gpuscale::route::Candidate;
using gpuscale::route::PrefixCacheLookup;

constexpr int kReplicas = 8;
constexpr int64_t kBlocksPerReplica = 100'000;
constexpr int32_t kBlockTokens = 16;

// A lookup holding kBlocksPerReplica random blocks per replica; replica i also holds the
// first i * blocks / kReplicas of `prompt` when i is odd.
PrefixCacheLookup& Indexed(const std::vector<uint64_t>& prompt) {
  static PrefixCacheLookup lookup = [&] {
    PrefixCacheLookup l({.mode = gpuscale::route::PrefixIndexMode::kPrecise,
                         .block_tokens = kBlockTokens,
                         .capacity_blocks = kBlocksPerReplica});
    std::mt19937_64 rng(7);
    for (uint64_t r = 0; r < kReplicas; ++r) {
      gpuscale::kvevents::KvEvent stored;
      stored.kind = gpuscale::kvevents::KvEventKind::kBlockStored;
      if (r % 2 == 1) {
        stored.block_hashes.assign(prompt.begin(), prompt.begin() + r * prompt.size() / kReplicas);
      }
      while (std::ssize(stored.block_hashes) < kBlocksPerReplica) {
        stored.block_hashes.push_back(rng());
      }
      l.Apply(r, 0, gpuscale::kvevents::KvEventBatch{0, {stored}, {}});
    }
    return l;
  }();
  return lookup;
}

std::vector<uint64_t> PromptKeys(int64_t blocks) {
  std::vector<uint64_t> keys;
  std::mt19937_64 rng(11);
  for (int64_t i = 0; i < blocks; ++i) keys.push_back(rng());
  return keys;
}

void BM_PrefixCachePickPrecise(benchmark::State& state) {
  static const std::vector<uint64_t> kPrompt = PromptKeys(512);
  PrefixCacheLookup& lookup = Indexed(kPrompt);
  const auto blocks = static_cast<size_t>(state.range(0));
  const std::vector<uint64_t> keys(kPrompt.begin(), kPrompt.begin() + blocks);
  const int64_t tokens = static_cast<int64_t>(blocks) * kBlockTokens + 1;
  gpuscale::route::Picker picker({.kind = gpuscale::route::PickerKind::kPrefixCache,
                                  .prefix_index = gpuscale::route::PrefixIndexMode::kPrecise});
  std::vector<Candidate> candidates(kReplicas);
  double now = 0;
  for (auto _ : state) {
    for (uint64_t r = 0; r < kReplicas; ++r) {
      candidates[r] = Candidate{};
      candidates[r].outstanding = 1;
      candidates[r].identity = r;
    }
    lookup.Fill(candidates, keys, tokens, now);
    const size_t chosen = *picker.Pick(candidates, now, std::nullopt, tokens);
    lookup.Routed(candidates[chosen].identity, keys, tokens, now);
    benchmark::DoNotOptimize(chosen);
    now += 1e-3;
  }
  state.SetLabel("8 replicas x 100k blocks");
}
// 128 blocks: a 2k-token prompt; 512: 8k tokens.
BENCHMARK(BM_PrefixCachePickPrecise)->Arg(8)->Arg(128)->Arg(512);

void BM_PromptBlockKeys(benchmark::State& state) {
  std::string text;
  for (int64_t i = 0; i < state.range(0); ++i) text += "word" + std::to_string(i % 97) + " ";
  std::vector<uint64_t> keys;
  for (auto _ : state) {
    keys.clear();
    benchmark::DoNotOptimize(gpuscale::route::PromptBlockKeys(text, kBlockTokens, &keys));
  }
}
BENCHMARK(BM_PromptBlockKeys)->Arg(2048);

}  // namespace

BENCHMARK_MAIN();
