#include "route/prompt_blocks.h"

#include <cctype>

#include "route/picker.h"

namespace gpuscale::route {

int64_t PromptBlockKeys(std::string_view text, int32_t block_tokens, std::vector<uint64_t>* keys) {
  int64_t total = 0;
  uint64_t parent = 0x9e3779b97f4a7c15ull;  // the root's seed: any fixed value
  uint64_t block = 0;                       // the words of the block being read
  int32_t words = 0;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) break;
    ++total;
    // Word by word, so that the spacing between words does not change a key.
    block = MixHash(block, HashText(text.substr(start, i - start)));
    if (++words == block_tokens) {
      parent = MixHash(parent, block);
      keys->push_back(parent);
      block = 0;
      words = 0;
    }
  }
  return total;
}

}  // namespace gpuscale::route
