// libFuzzer target for the decoder of vLLM's KV-event stream (kvevents/kv_event_codec.h): an
// engine's ZeroMQ payload may be anything. No input may crash it, and whatever it accepts must
// survive our encoder unchanged: encode(decode(encode(decode(x)))) == encode(decode(x)) (bytes,
// not values, so that a NaN timestamp compares equal to itself).
//   build-asan/fuzz/kv_event_fuzz -max_total_time=600 fuzz/corpus/kv_event_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "kvevents/kv_event_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscale::kvevents;
  auto batch = DecodeKvEventBatch(std::span<const uint8_t>(data, size));
  if (!batch) {
    if (batch.error().ToString().empty()) std::abort();  // an error must say what is wrong
    return 0;
  }
  auto again = DecodeKvEventBatch(EncodeKvEventBatch(*batch));
  if (!again || EncodeKvEventBatch(*again) != EncodeKvEventBatch(*batch)) std::abort();
  return 0;
}
