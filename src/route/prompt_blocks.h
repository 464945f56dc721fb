// Block keys of a prompt's text without a tokenizer, for prefix-cache routing and the
// emulator's prefix cache on live traffic. A token is a whitespace-separated word (as
// `gpuscale emulate` counts prompt tokens; real tokenizers give about 1.3 tokens per English
// word, so a block here spans a little more text than a vLLM block of the same size). Every
// `block_tokens` words form a block; a trailing partial block has no key (vLLM caches full
// blocks only). Keys are chained as vLLM chains its block hashes (each mixes its parent's
// key with its own words), so equal keys mean equal prefixes, and a router that computes them
// from the same text agrees with the engine that published them.
// Pure.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace gpuscale::route {

// Appends the chain keys of `text`'s full blocks to `keys`; returns its words (its tokens).
// REQUIRES: block_tokens >= 1.
int64_t PromptBlockKeys(std::string_view text, int32_t block_tokens, std::vector<uint64_t>* keys);

}  // namespace gpuscale::route
