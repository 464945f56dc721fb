#include "route/prompt_blocks.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscale::route {
namespace {

std::vector<uint64_t> Keys(std::string_view text, int32_t block_tokens) {
  std::vector<uint64_t> keys;
  PromptBlockKeys(text, block_tokens, &keys);
  return keys;
}

TEST(PromptBlocksTest, FullBlocksOnlyChainedOnTheirPrefix) {
  const auto a = Keys("you are a helpful bot . hello", 2);
  ASSERT_EQ(a.size(), 3u);  // 7 words: three full blocks, the seventh word has no key
  const auto b = Keys("you are a helpful bot !  bye now", 2);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);  // "bot ." vs "bot !"
  // A block's key names its whole prefix: the same words after a different start differ.
  EXPECT_NE(Keys("x y a helpful", 2)[1], a[1]);
  // Spacing between words does not matter.
  EXPECT_EQ(Keys(" you\n are\ta   helpful ", 2), (std::vector<uint64_t>{a[0], a[1]}));
  EXPECT_TRUE(Keys("one", 2).empty());
  EXPECT_TRUE(Keys("", 1).empty());
}

}  // namespace
}  // namespace gpuscale::route
