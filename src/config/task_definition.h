// Task definition files -> task::TaskDefinition: the model and parameter grid of a task file
// (config/task_file.h) plus how to start the server, how to benchmark it, the GPU wait
// timeout, priority, parallelism cap and the objective (docs/tasks.md, examples/tasks/).
// Parsing validates everything that can be checked without GPUs: estimator rules for every
// grid point, placeholders of the server command, the objective.
//
// Thread-safety: pure functions (LoadTaskDefinitionFile reads the file).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "core/result.h"
#include "task/task_types.h"

namespace gpuscale::config {

// Errors: kInvalidArgument naming the field and line ("benchmark.duration_seconds: expected a
// positive number (line 12)"); unknown keys are errors.
Result<task::TaskDefinition> ParseTaskDefinition(const YAML::Node& root);
// YAML or JSON text; `source` names the input in messages (a file path, "request body").
Result<task::TaskDefinition> ParseTaskDefinitionText(std::string_view text,
                                                     std::string_view source);
// Errors: kNotFound when the file cannot be read, else as above.
Result<task::TaskDefinition> LoadTaskDefinitionFile(const std::string& path);

}  // namespace gpuscale::config
