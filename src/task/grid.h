// Grid expansion: a task's parameters (each a scalar or a list) -> one ExperimentPlan per
// point of the cartesian product, each with its own GPU requirement from the estimator, and
// the server argv of one experiment with its placeholders filled in.
//
// Order is deterministic: parameters in name order (TaskSpec::parameters is a std::map), the
// last parameter varying fastest, list items in the order written.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "alloc/requirements.h"
#include "core/result.h"
#include "task/task_types.h"

namespace gpuscale::task {

// Upper bound on experiments per task (a typo like a 1000-item list should not flood the
// queue). Errors beyond it name the parameters and the product.
inline constexpr int kMaxExperimentsPerTask = 1024;

// Errors: kInvalidArgument naming "parameters.<name>" (with its line) for an empty list or a
// point the estimator rejects; kInvalidArgument naming "parameters" when the grid has more
// than kMaxExperimentsPerTask points.
Result<std::vector<ExperimentPlan>> ExpandGrid(const TaskDefinition& task,
                                               const alloc::EstimateOptions& options = {});

// Text of a scalar as a command-line value: 4, 0.9, true, fp8 (doubles in shortest form).
std::string ParamText(const alloc::ParamScalar& value);

// What the server argv placeholders take for one experiment.
struct ArgvContext {
  int port = 0;
  std::vector<int> gpu_indices;  // {gpus} = "0,1"; {gpu_count} = 2
};

// Fills {port}, {gpus}, {gpu_count}, {model} and {<parameter-name>} in every argument of
// task.server_command (an argument may hold several placeholders and literal text; "{{" and
// "}}" are literal braces). Errors: kInvalidArgument naming "server.command[i]" for an
// unknown placeholder or an unclosed brace.
Result<std::vector<std::string>> RenderServerArgv(const TaskDefinition& task,
                                                  const ExperimentPlan& plan,
                                                  const ArgvContext& context);

}  // namespace gpuscale::task
