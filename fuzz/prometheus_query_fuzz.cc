// Fuzz target: the Prometheus HTTP-API response parser must never crash, hang or throw on
// arbitrary bytes (a Prometheus server, or whatever answers at its URL, is untrusted input),
// and an accepted body yields a number; rejections carry a message.
//   build-asan/fuzz/prometheus_query_fuzz -max_total_time=600 fuzz/corpus/prometheus_query_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "metrics/prometheus_response.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto value = gpuscale::metrics::ParsePrometheusQueryResponse(body);
  if (!value && value.error().message.empty()) std::abort();
  return 0;
}
