// A task as the allocator sees it: which model, in what precision, launched with which
// engine parameters (vLLM / SGLang flags such as `tp-size` or `gpu-memory-utilization`).
// Built by config/task_file (YAML/JSON) or by the API; consumed by requirement estimation
// here and, later, by the tasks/experiments feature, which expands every list-valued
// parameter into a cartesian grid of experiments.
//
// Values stay close to what the user wrote: a parameter is one scalar (number, string or
// bool) or a list of them, and remembers its source line so that errors found after parsing
// can still point at the file ("parameters.tp: ... (line 4)").
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gpuscale::alloc {

// One scalar as written: integers stay integers so a grid prints "2", not "2.0".
using ParamScalar = std::variant<bool, int64_t, double, std::string>;

// A parameter value: one scalar (`is_list == false`, exactly one item) or a list of
// candidates, each of which is one point of the task's experiment grid.
struct ParamValue {
  std::vector<ParamScalar> items;
  bool is_list = false;
  int line = 0;  // 1-based source line; 0 when built in code

  static ParamValue Scalar(ParamScalar value, int line = 0) {
    return ParamValue{{std::move(value)}, false, line};
  }
  static ParamValue List(std::vector<ParamScalar> values, int line = 0) {
    return ParamValue{std::move(values), true, line};
  }
};

struct TaskSpec {
  std::string name;  // optional label
  // Model id or path, e.g. "meta-llama/Llama-3.1-70B-Instruct". Its size is parsed from
  // the name unless params_b is given.
  std::string model;
  // Explicit parameter count in billions (overrides the name), e.g. 46.7 for Mixtral-8x7B.
  std::optional<double> params_b;
  // Weight precision ("bf16", "fp8", "awq", ...); empty means: from the `quantization` or
  // `dtype` engine parameter when present, else bf16.
  std::string dtype;
  // Total memory of the target GPU in MiB, used when an engine reserves a share of it
  // (gpu-memory-utilization). Unset: the backend's reading, else the H100 80GB default.
  std::optional<int64_t> gpu_memory_mb;
  // Engine parameters by the name the user wrote (ordered, so output is stable).
  std::map<std::string, ParamValue> parameters;
};

}  // namespace gpuscale::alloc
