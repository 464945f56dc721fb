// libFuzzer target for the bench client's server-sent-events parser: a replica's or proxy's
// stream may be anything, cut anywhere. No input may crash it, and how the bytes are split
// must not change what comes out: the whole input fed at once and fed in pieces (split at
// points the input's first bytes choose) give the same events and the same partial state.
//   build-asan/fuzz/sse_parser_fuzz -max_total_time=600 fuzz/corpus/sse_parser_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/sse_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpuscale::loadgen::SseParser;
  if (size < 1) return 0;
  // The first byte seeds the split points; the rest is the stream.
  const uint8_t seed = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  SseParser whole;
  const std::vector<std::string> all = whole.Feed(stream);
  SseParser pieces;
  std::vector<std::string> split;
  size_t at = 0;
  uint32_t state = seed * 2654435761u + 1;
  while (at < stream.size()) {
    state = state * 1103515245u + 12345u;
    const size_t n = std::min<size_t>(stream.size() - at, 1 + (state >> 16) % 7);
    for (std::string& event : pieces.Feed(stream.substr(at, n))) split.push_back(std::move(event));
    at += n;
  }
  if (split != all || pieces.HasPartialEvent() != whole.HasPartialEvent()) std::abort();
  return 0;
}
