// Fuzz target: the simulation config parser (`gpuscale simulate --config`, --compare lists)
// must never crash, hang or let an exception escape on arbitrary text, and whatever it
// accepts must build its policy or say why, with a message.
//   build-asan/fuzz/sim_config_fuzz -max_total_time=600 fuzz/corpus/sim_config_fuzz
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "config/sim_config.h"
#include "yaml/yaml_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscale;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto root = yaml::ParseYaml(text, "fuzz");
  if (!root) {
    if (root.error().message.empty()) std::abort();
    return 0;
  }
  auto file = config::ParseSimConfig(*root);
  if (!file) {
    if (file.error().message.empty()) std::abort();
    return 0;
  }
  const double slow_start = file->sim.router.slow_start_seconds;
  if (!(slow_start >= 0) || std::isinf(slow_start)) std::abort();
  auto policy = config::MakeSimPolicy(*file);
  if (!policy && policy.error().message.empty()) std::abort();
  return 0;
}
