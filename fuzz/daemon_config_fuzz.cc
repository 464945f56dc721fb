// Fuzz target: the daemon config parser must never crash, hang or let an exception escape on
// arbitrary text (config files and POST /v1/services bodies are user input). Whatever it
// accepts must survive the store's round trip: every service written with
// ServiceConfigToYaml parses back to an equal value.
//   build-asan/fuzz/daemon_config_fuzz -max_total_time=600 fuzz/corpus/daemon_config_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "serve_config/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscale::daemon;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // api.token_file would read files named by the input: keep the fuzzer off the file system.
  if (text.find("token_file") != std::string::npos) return 0;
  auto config = ParseDaemonConfigText(text, "fuzz");
  (void)ParseServiceConfigText(text, "fuzz");
  if (!config) {
    if (config.error().message.empty()) std::abort();
    return 0;
  }
  for (const ServiceConfig& service : config->services) {
    auto again = ParseServiceConfigText(ServiceConfigToYaml(service), "round trip");
    if (!again || !(*again == service)) std::abort();
  }
  return 0;
}
