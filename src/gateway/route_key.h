// RouteKey: what of a request's prompt its routing reads: the prefix-affinity key, and for
// prefix_cache routing the chain keys of the prompt's full blocks (route/prompt_blocks.h) and
// its length in tokens. A plain value; the block keys are shared, not copied, by the steps and
// queue entries of one request.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace gpuscale::gateway {

struct RouteKey {
  RouteKey() = default;
  // Prefix affinity alone (or nothing): as callers that know no blocks spell it.
  RouteKey(std::nullopt_t) {}                                 // NOLINT(google-explicit-constructor)
  RouteKey(std::optional<uint64_t> key) : prefix_key(key) {}  // NOLINT(google-explicit-constructor)

  std::optional<uint64_t> prefix_key;  // prefix affinity; nullopt when it is off
  // prefix_cache: the prompt's block keys, first block first; null when it is off.
  std::shared_ptr<const std::vector<uint64_t>> blocks;
  int64_t prompt_tokens = 0;  // prefix_cache: whitespace words, as the emulator counts them
};

}  // namespace gpuscale::gateway
