// Fuzzes task-file parsing and requirement estimation: any input must yield a TaskSpec or
// an error value, never a crash, exception or sanitizer report; an accepted task must
// estimate without error (the parser validates what estimation needs).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "alloc/requirements.h"
#include "config/task_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuscale::Result<gpuscale::alloc::TaskSpec> task =
      gpuscale::config::ParseTaskText(text, "fuzz.yaml");
  if (!task) return 0;
  gpuscale::Result<gpuscale::alloc::Requirement> requirement =
      gpuscale::alloc::EstimateRequirement(*task, {});
  if (!requirement) std::abort();  // validated tasks must always estimate
  if (requirement->gpus < 1 || requirement->memory_mb_per_gpu <= 0) std::abort();
  return 0;
}
