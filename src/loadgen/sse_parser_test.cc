#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscale::loadgen {
namespace {

std::vector<std::string> FeedInPieces(const std::string& stream, size_t piece) {
  SseParser parser;
  std::vector<std::string> events;
  for (size_t i = 0; i < stream.size(); i += piece) {
    for (std::string& e : parser.Feed(std::string_view(stream).substr(i, piece))) {
      events.push_back(std::move(e));
    }
  }
  return events;
}

struct SseCase {
  std::string name;
  std::string stream;
  std::vector<std::string> events;
};

TEST(SseParserTest, ParsesEventsWhateverTheChunking) {
  const std::vector<SseCase> cases = {
      {"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n", {"{\"a\":1}", "[DONE]"}},
      {"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", {"x", "y"}},
      {"bare cr", "data: x\r\rdata: y\r\r", {"x", "y"}},
      {"multi-line data", "data: one\ndata: two\n\n", {"one\ntwo"}},
      {"no space after colon", "data:tight\n\n", {"tight"}},
      {"comments and other fields",
       ": keep-alive\nevent: msg\nid: 7\ndata: z\nretry: 5\n\n",
       {"z"}},
      {"blank lines without data", "\n\n: ping\n\n", {}},
      {"unterminated last event", "data: a\n\ndata: b\n", {"a"}},
  };
  for (const SseCase& c : cases) {
    for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, c.stream.size()}) {
      EXPECT_EQ(FeedInPieces(c.stream, piece), c.events) << c.name << ", pieces of " << piece;
    }
  }
}

TEST(SseParserTest, TracksAPartialEvent) {
  SseParser parser;
  EXPECT_FALSE(parser.HasPartialEvent());
  EXPECT_TRUE(parser.Feed("data: a\n").empty());
  EXPECT_TRUE(parser.HasPartialEvent());
  EXPECT_EQ(parser.Feed("\n"), std::vector<std::string>{"a"});
  EXPECT_FALSE(parser.HasPartialEvent());
}

}  // namespace
}  // namespace gpuscale::loadgen
