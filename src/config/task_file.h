// Task files -> alloc::TaskSpec. A task file is YAML (or JSON) naming a model and the engine
// parameters to launch it with; a list value is a grid of experiments (examples/task.yaml):
//
//   name: llama70b-sweep            # optional label
//   model: meta-llama/Llama-3.1-70B-Instruct   # or {id_or_path: ...} (the LLM Autotuner's form)
//   params_b: 70                    # optional; overrides the size in the model name
//   dtype: bf16                     # optional; fp32 | bf16 | fp16 | fp8 | int8 | int4 | awq | gptq
//   ... gpu_memory_mb: 81559            # optional; total memory of the target GPU, MiB parameters:
//   # engine flags by name: number, string, bool or a list
//     tp-size: [2, 4]
//     gpu-memory-utilization: 0.9
//
// Parsing also runs alloc::ValidateTask, so a bad parallel size fails here with its line:
// `parameters.tp: expected a positive integer or a list of them (line 4)`.
//
// Thread-safety: pure functions (LoadTaskFile reads the file).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "alloc/task_spec.h"
#include "core/result.h"

namespace gpuscale::config {

// Errors: kInvalidArgument naming the field and line (unknown fields included, so typos are
// not silently ignored).
Result<alloc::TaskSpec> ParseTaskSpec(const YAML::Node& root);
// Parses text; `source` names the input in messages.
Result<alloc::TaskSpec> ParseTaskText(std::string_view text, std::string_view source);
// Errors: kNotFound when the file cannot be opened, else as ParseTaskSpec.
Result<alloc::TaskSpec> LoadTaskFile(const std::string& path);

}  // namespace gpuscale::config
