// Internal to config/: reads the model and parameter-grid fields shared by task files
// (task_file.h) and task definitions (task_definition.h): name, model, params_b, dtype,
// gpu_memory_mb and parameters. Each caller checks its own set of top-level keys first.
//
// Thread-safety: pure functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include "alloc/task_spec.h"
#include "core/result.h"

namespace gpuscale::config::internal {

// Top-level keys the spec reader consumes (callers add their own to CheckKnownKeys).
#define GPUSCALE_TASK_SPEC_KEYS "name", "model", "params_b", "dtype", "gpu_memory_mb", "parameters"

// Reads the spec fields of `root` and runs alloc::ValidateTask. Errors: kInvalidArgument
// naming the field and line (also for shapes yaml-cpp throws on: never throws).
Result<alloc::TaskSpec> ReadTaskSpecFields(const YAML::Node& root);

}  // namespace gpuscale::config::internal
