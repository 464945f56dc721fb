// libFuzzer target for the nvidia-smi CSV parsers (GPU query and compute-apps query).
// Besides "no crash, no sanitizer report", it checks the parser's promises on every
// accepted input: GPUs sorted by unique index, utilization within 0..100, memory >= 0.
//   build-asan/fuzz/nvidia_smi_fuzz -max_total_time=600 fuzz/corpus/nvidia_smi_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gpu/nvidia_smi_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto gpus = gpuscale::gpu::ParseNvidiaSmiCsv(text);
  if (gpus) {
    for (size_t i = 0; i < gpus->size(); ++i) {
      const gpuscale::gpu::GpuInfo& gpu = (*gpus)[i];
      if (i > 0 && (*gpus)[i - 1].index >= gpu.index) std::abort();
      if (gpu.utilization_percent &&
          (*gpu.utilization_percent < 0 || *gpu.utilization_percent > 100)) {
        std::abort();
      }
      if (gpu.memory_total_mb && *gpu.memory_total_mb < 0) std::abort();
      if (gpu.uuid.empty()) std::abort();
    }
  } else if (gpus.error().field.rfind("line ", 0) != 0) {
    std::abort();  // every parse error must name its line
  }
  auto apps = gpuscale::gpu::ParseNvidiaSmiAppsCsv(text);
  if (apps && gpus) gpuscale::gpu::AttachProcesses(*apps, *gpus);
  return 0;
}
