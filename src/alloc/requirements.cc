#include "alloc/requirements.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string_view>
#include <vector>

#include "alloc/model_size.h"

namespace gpuscale::alloc {
namespace {

constexpr double kBytesPerMib = 1024.0 * 1024.0;

// One parallel factor and the spellings vLLM (CLI flags and Python keyword arguments),
// SGLang and the LLM Autotuner use for it.
struct Factor {
  std::string_view short_name;
  std::array<std::string_view, 5> spellings;
};
constexpr std::array<Factor, 5> kFactors = {{
    {"tp", {"tensor-parallel-size", "tensor_parallel_size", "tp-size", "tp_size", "tp"}},
    {"pp", {"pipeline-parallel-size", "pipeline_parallel_size", "pp-size", "pp_size", "pp"}},
    {"dp", {"data-parallel-size", "data_parallel_size", "dp-size", "dp_size", "dp"}},
    {"cp", {"context-parallel-size", "context_parallel_size", "cp-size", "cp_size", "cp"}},
    {"dcp",
     {"decode-context-parallel-size", "decode_context_parallel_size", "dcp-size", "dcp_size",
      "dcp"}},
}};

bool IsFactorSpelling(std::string_view name) {
  for (const Factor& f : kFactors) {
    for (std::string_view spelling : f.spellings) {
      if (spelling == name) return true;
    }
  }
  return false;
}

// A parameter that reads like a parallel size ("expert_parallel_size", "sp-size") but is not
// one the estimate counts: said by name, since a silently ignored factor under-counts GPUs.
bool LooksLikeParallelSize(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool sized = lower.ends_with("size");
  return (sized && lower.find("parallel") != std::string::npos) ||
         (sized && lower.size() <= 7 && (lower.ends_with("p_size") || lower.ends_with("p-size")));
}
constexpr std::array<std::string_view, 4> kMemoryFractionSpellings = {
    "gpu-memory-utilization", "gpu_memory_utilization", "mem-fraction-static",
    "mem_fraction_static"};

std::string WithLine(std::string_view message, int line) {
  return line > 0 ? fmt::format("{} (line {})", message, line) : std::string(message);
}

Unexpected<Error> ParamError(std::string_view name, const ParamValue& value,
                             std::string_view message) {
  return InvalidArgument(WithLine(message, value.line), fmt::format("parameters.{}", name));
}

struct FoundParam {
  std::string name;
  const ParamValue* value = nullptr;
};

// The parameter spelled one of `spellings`; an error when the task gives two of them.
template <size_t N>
Result<std::optional<FoundParam>> FindParam(const TaskSpec& task,
                                            const std::array<std::string_view, N>& spellings) {
  std::optional<FoundParam> found;
  for (std::string_view spelling : spellings) {
    auto it = task.parameters.find(std::string(spelling));
    if (it == task.parameters.end()) continue;
    if (found) {
      return ParamError(it->first, it->second,
                        fmt::format("same setting as '{}'; give only one spelling", found->name));
    }
    found = FoundParam{it->first, &it->second};
  }
  return found;
}

// MiB as an integer, saturating: absurd inputs (a fuzzed params_b of 1e60) must give a huge
// requirement that no GPU meets, not undefined behaviour in the float-to-int conversion.
int64_t SaturatingMb(double mb) {
  constexpr double kMaxMb = 1e15;  // ~1 ZiB: far beyond any GPU, far below INT64_MAX
  if (!(mb < kMaxMb)) return static_cast<int64_t>(kMaxMb);  // also catches NaN
  return static_cast<int64_t>(std::ceil(mb));
}

// Integral value of a scalar, accepting 2.0 but not 2.5, "2" or true.
std::optional<int64_t> AsInteger(const ParamScalar& scalar) {
  if (const auto* i = std::get_if<int64_t>(&scalar)) return *i;
  if (const auto* d = std::get_if<double>(&scalar)) {
    if (std::isfinite(*d) && std::floor(*d) == *d && std::fabs(*d) < 1e15) {
      return static_cast<int64_t>(*d);
    }
  }
  return std::nullopt;
}

std::optional<double> AsNumber(const ParamScalar& scalar) {
  if (const auto* i = std::get_if<int64_t>(&scalar)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&scalar)) return *d;
  return std::nullopt;
}

Result<std::vector<int64_t>> PositiveIntegers(const FoundParam& param) {
  std::vector<int64_t> values;
  for (const ParamScalar& item : param.value->items) {
    const std::optional<int64_t> value = AsInteger(item);
    if (!value || *value < 1 || *value > kMaxWorldSize) {
      return ParamError(param.name, *param.value, "expected a positive integer or a list of them");
    }
    values.push_back(*value);
  }
  if (values.empty()) {
    return ParamError(param.name, *param.value, "expected a positive integer or a list of them");
  }
  return values;
}

// Largest and smallest value of each factor over the grid (1 when absent).
struct ParallelGrid {
  std::array<int64_t, kFactors.size()> max{1, 1, 1, 1, 1};
  std::array<int64_t, kFactors.size()> min{1, 1, 1, 1, 1};
  int line = 0;  // line of some factor, for the world-size error
  int64_t MaxWorldSize() const { return max[0] * max[1] * std::max({max[2], max[3], max[4]}); }
  int64_t MinShards() const { return min[0] * min[1]; }
};

Result<ParallelGrid> ReadParallelGrid(const TaskSpec& task) {
  ParallelGrid grid;
  for (size_t f = 0; f < kFactors.size(); ++f) {
    GS_ASSIGN_OR_RETURN(std::optional<FoundParam> param, FindParam(task, kFactors[f].spellings));
    if (!param) continue;
    GS_ASSIGN_OR_RETURN(std::vector<int64_t> values, PositiveIntegers(*param));
    grid.max[f] = *std::max_element(values.begin(), values.end());
    grid.min[f] = *std::min_element(values.begin(), values.end());
    grid.line = std::max(grid.line, param->value->line);
  }
  // Each factor is <= kMaxWorldSize (2^20), so the product of three fits in int64.
  if (grid.MaxWorldSize() > kMaxWorldSize) {
    return InvalidArgument(WithLine(fmt::format("world size {} exceeds the supported {}",
                                                grid.MaxWorldSize(), kMaxWorldSize),
                                    grid.line),
                           "parameters");
  }
  return grid;
}

// Largest memory fraction of the grid, when the task sets one.
Result<std::optional<FoundParam>> ReadMemoryFraction(const TaskSpec& task, double* fraction) {
  GS_ASSIGN_OR_RETURN(std::optional<FoundParam> param, FindParam(task, kMemoryFractionSpellings));
  if (!param) return param;
  *fraction = 0;
  for (const ParamScalar& item : param->value->items) {
    const std::optional<double> value = AsNumber(item);
    if (!value || !(*value > 0 && *value <= 1)) {
      return ParamError(param->name, *param->value,
                        "expected a fraction in (0, 1] or a list of them");
    }
    *fraction = std::max(*fraction, *value);
  }
  if (param->value->items.empty()) {
    return ParamError(param->name, *param->value,
                      "expected a fraction in (0, 1] or a list of them");
  }
  return param;
}

struct Precision {
  double bytes = 2.0;
  std::string source;  // "bf16 (default)", "fp8 (dtype)", ...
};

// Largest bytes/weight of a string-valued engine parameter (quantization or dtype).
Result<std::optional<Precision>> PrecisionFromParam(const TaskSpec& task, std::string_view name) {
  auto it = task.parameters.find(std::string(name));
  if (it == task.parameters.end()) return std::optional<Precision>();
  std::optional<Precision> best;
  for (const ParamScalar& item : it->second.items) {
    const auto* text = std::get_if<std::string>(&item);
    const std::optional<double> bytes = text ? BytesPerParameter(*text) : std::nullopt;
    if (!bytes) {
      return ParamError(name, it->second,
                        fmt::format("unknown precision; expected one of {}", KnownDtypesText()));
    }
    if (!best || *bytes > best->bytes) {
      best = Precision{*bytes, fmt::format("{} (parameters.{})", *text, name)};
    }
  }
  return best;
}

Result<Precision> ResolvePrecision(const TaskSpec& task) {
  if (!task.dtype.empty()) {
    const std::optional<double> bytes = BytesPerParameter(task.dtype);
    if (!bytes) {
      return InvalidArgument(
          fmt::format("unknown dtype '{}'; expected one of {}", task.dtype, KnownDtypesText()),
          "dtype");
    }
    return Precision{*bytes, fmt::format("{} (dtype)", task.dtype)};
  }
  // Quantization decides the weight size when set; the dtype then only covers activations.
  for (std::string_view name : {"quantization", "dtype"}) {
    GS_ASSIGN_OR_RETURN(std::optional<Precision> precision, PrecisionFromParam(task, name));
    if (precision) return *precision;
  }
  return Precision{2.0, "bf16 (default)"};
}

struct ParamCount {
  double params = 0;
  std::string source;
};

Result<std::optional<ParamCount>> ResolveParamCount(const TaskSpec& task) {
  if (task.params_b) {
    if (!(*task.params_b > 0) || !std::isfinite(*task.params_b) || *task.params_b > 1e6) {
      return InvalidArgument(
          fmt::format("expected a positive number of billions of parameters, got {}",
                      *task.params_b),
          "params_b");
    }
    return ParamCount{*task.params_b * 1e9, "params_b"};
  }
  if (std::optional<double> params = ParamCountFromModelName(task.model)) {
    return ParamCount{*params, "from the model name"};
  }
  return std::optional<ParamCount>();
}

std::string FactorsText(const ParallelGrid& grid) {
  return fmt::format("tp {} x pp {} x max(dp {}, cp {}, dcp {})", grid.max[0], grid.max[1],
                     grid.max[2], grid.max[3], grid.max[4]);
}

// Memory from the weights (see the header for the formula); appends the steps.
int64_t WeightsMemoryMb(const ParamCount& count, const Precision& precision,
                        const ParallelGrid& grid, const TaskSpec& task, std::string& explanation) {
  const double weights_mb =
      count.params * precision.bytes / static_cast<double>(grid.MinShards()) / kBytesPerMib;
  const int64_t memory_mb =
      SaturatingMb(weights_mb * (1.0 + kRuntimeOverheadShare) + static_cast<double>(kCudaContextMb));
  explanation += fmt::format(
      "model {}: {:g}e9 parameters ({}), {} = {:g} bytes each\n"
      "weights per GPU = params x bytes / (tp {} x pp {}, the least sharded grid point) = "
      "{:.0f} MiB\n"
      "memory per GPU = weights x {:g} (activations, CUDA graphs, NCCL buffers) + {} MiB "
      "(CUDA context) = {} MiB",
      task.model.empty() ? "(unnamed)" : task.model, count.params / 1e9, count.source,
      precision.source, precision.bytes, grid.min[0], grid.min[1], std::ceil(weights_mb),
      1.0 + kRuntimeOverheadShare, kCudaContextMb, memory_mb);
  return memory_mb;
}

struct TotalMemory {
  int64_t mb = kDefaultGpuMemoryMb;
  std::string_view source = "default: H100 80GB";
};

Result<TotalMemory> ResolveTotalMemory(const TaskSpec& task, const EstimateOptions& options) {
  if (task.gpu_memory_mb) {
    if (*task.gpu_memory_mb <= 0) {
      return InvalidArgument(
          fmt::format("expected a positive number of MiB, got {}", *task.gpu_memory_mb),
          "gpu_memory_mb");
    }
    return TotalMemory{*task.gpu_memory_mb, "task field gpu_memory_mb"};
  }
  if (options.gpu_memory_total_mb && *options.gpu_memory_total_mb > 0) {
    return TotalMemory{*options.gpu_memory_total_mb, "reported by the GPU backend"};
  }
  return TotalMemory{};
}

// Memory when the engine reserves `fraction` of each GPU; notes when the weights alone
// would not fit in that share (the engine would fail to start).
int64_t FractionMemoryMb(const FoundParam& param, double fraction, const TotalMemory& total,
                         std::optional<int64_t> weights_memory_mb, std::string& explanation) {
  const int64_t memory_mb = SaturatingMb(fraction * static_cast<double>(total.mb));
  explanation += fmt::format(
      "\nmemory per GPU = {} {:g} x {} MiB GPU total ({}) = {} MiB: the engine reserves that "
      "share of every GPU at start",
      param.name, fraction, total.mb, total.source, memory_mb);
  if (weights_memory_mb && *weights_memory_mb > memory_mb) {
    explanation += fmt::format(
        "\nwarning: the model needs about {} MiB per GPU, more than that share; raise tp/pp or "
        "{}",
        *weights_memory_mb, param.name);
  }
  return memory_mb;
}

}  // namespace

Status ValidateTask(const TaskSpec& task) {
  GS_RETURN_IF_ERROR(EstimateRequirement(task));
  return OkStatus();
}

Result<Requirement> EstimateRequirement(const TaskSpec& task, const EstimateOptions& options) {
  GS_ASSIGN_OR_RETURN(ParallelGrid grid, ReadParallelGrid(task));
  GS_ASSIGN_OR_RETURN(Precision precision, ResolvePrecision(task));
  GS_ASSIGN_OR_RETURN(std::optional<ParamCount> count, ResolveParamCount(task));
  double fraction = 0;
  GS_ASSIGN_OR_RETURN(std::optional<FoundParam> fraction_param,
                      ReadMemoryFraction(task, &fraction));
  GS_ASSIGN_OR_RETURN(TotalMemory total, ResolveTotalMemory(task, options));

  Requirement requirement;
  for (const auto& [name, value] : task.parameters) {
    if (!IsFactorSpelling(name) && LooksLikeParallelSize(name)) {
      requirement.warnings.push_back(fmt::format(
          "parameter '{}' looks like a parallel size but is not one gpuscale counts (tensor, "
          "pipeline, data, context, decode-context): the estimate assumes it adds no GPUs",
          name));
    }
  }
  requirement.world_size = static_cast<int>(grid.MaxWorldSize());
  requirement.gpus = requirement.world_size;
  std::string& explanation = requirement.explanation;
  explanation = fmt::format("world size = {} = {} (largest point of the parameter grid)\n",
                            FactorsText(grid), requirement.world_size);

  std::optional<int64_t> weights_memory_mb;
  if (count) {
    weights_memory_mb = WeightsMemoryMb(*count, precision, grid, task, explanation);
  } else {
    explanation += fmt::format(
        "model '{}': parameter count unknown (no size such as 7B in the name); set params_b "
        "for an estimate. memory per GPU = {} MiB (floor for models of unknown size)",
        task.model, kUnknownModelMemoryMb);
  }
  requirement.memory_mb_per_gpu = weights_memory_mb.value_or(kUnknownModelMemoryMb);
  if (fraction_param) {
    requirement.memory_mb_per_gpu =
        FractionMemoryMb(*fraction_param, fraction, total, weights_memory_mb, explanation);
  }
  for (const std::string& warning : requirement.warnings) {
    explanation += "\nwarning: " + warning;
  }
  return requirement;
}

}  // namespace gpuscale::alloc
