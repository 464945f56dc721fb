// Fuzzes task-definition parsing: any input must yield a TaskDefinition or an error value,
// never a crash, exception or sanitizer report. An accepted task must expand into a grid
// whose every point renders its server argv (the parser validated both).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/task_definition.h"
#include "task/grid.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuscale::Result<gpuscale::task::TaskDefinition> task =
      gpuscale::config::ParseTaskDefinitionText(text, "fuzz.yaml");
  if (!task) return 0;
  gpuscale::Result<std::vector<gpuscale::task::ExperimentPlan>> plans =
      gpuscale::task::ExpandGrid(*task);
  if (!plans || plans->empty()) std::abort();  // validated tasks must always expand
  const gpuscale::task::ArgvContext context{8000, {0, 1}};
  for (const gpuscale::task::ExperimentPlan& plan : *plans) {
    if (plan.gpus < 1 || plan.memory_mb_per_gpu <= 0) std::abort();
    if (!gpuscale::task::RenderServerArgv(*task, plan, context)) std::abort();
  }
  return 0;
}
