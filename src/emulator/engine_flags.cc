#include "emulator/engine_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>

#include "alloc/model_size.h"
#include "emulator/calibrated_timing.h"

namespace gpuscale::emulator {
namespace {

struct TimeFactors {
  double decode = 1.0;
  double prefill = 1.0;
};

// --dtype values vLLM accepts; only float32 changes the emulated time.
const std::map<std::string, TimeFactors, std::less<>>& DtypeFactors() {
  static const auto* factors = new std::map<std::string, TimeFactors, std::less<>>{
      {"auto", {}},       {"half", {}},         {"float16", {}},
      {"bfloat16", {}},   {"float", {2.0, 2.0}}, {"float32", {2.0, 2.0}}};
  return *factors;
}

const std::map<std::string, TimeFactors, std::less<>>& QuantizationFactors() {
  static const auto* factors = new std::map<std::string, TimeFactors, std::less<>>{
      {"", {}},
      {"none", {}},
      {"fp8", {0.7, 0.8}},
      {"awq", {0.6, 1.1}},
      {"awq_marlin", {0.6, 1.1}},
      {"gptq", {0.6, 1.1}},
      {"gptq_marlin", {0.6, 1.1}}};
  return *factors;
}

Result<TimeFactors> Lookup(const std::map<std::string, TimeFactors, std::less<>>& table,
                           const std::string& value, const char* flag) {
  auto it = table.find(value);
  if (it != table.end()) return it->second;
  std::string known;
  for (const auto& [name, factors] : table) {
    if (name.empty()) continue;
    known += known.empty() ? name : ", " + name;
  }
  return InvalidArgument(fmt::format("unknown value '{}'; expected one of {}", value, known), flag);
}

// "-tp" / "-pp" (vLLM's short spellings CLI11 cannot declare): the target field, else null.
int32_t* ShortFlagTarget(std::string_view name, EngineFlags& flags) {
  if (name == "-tp") return &flags.tensor_parallel_size;
  if (name == "-pp") return &flags.pipeline_parallel_size;
  return nullptr;
}

Result<int32_t> ParseCount(const std::string& text, std::string_view flag) {
  int32_t value = 0;
  size_t used = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    return InvalidArgument(fmt::format("expected an integer, got '{}'", text), std::string(flag));
  }
  return value;
}

// The flags the chosen timing cannot use. The calibrated model is of 16-bit weights: it has
// no factor to scale for --dtype or --quantization.
Status CheckTimingFlags(const EngineFlags& flags, TimeFactors dtype, TimeFactors quant) {
  if (flags.timing == StepTiming::kCalibrated) {
    if (dtype.decode != 1.0 || dtype.prefill != 1.0) {
      return InvalidArgument("calibrated timing models 16-bit weights; use --timing linear",
                             "--dtype");
    }
    if (quant.decode != 1.0 || quant.prefill != 1.0) {
      return InvalidArgument("calibrated timing models unquantized weights; use --timing linear",
                             "--quantization");
    }
    return OkStatus();
  }
  for (const char* flag : {"--gpu", "--model-preset"}) {
    if (std::ranges::find(flags.given, flag) != flags.given.end()) {
      return InvalidArgument("only calibrated timing uses it; add --timing calibrated", flag);
    }
  }
  return OkStatus();
}

}  // namespace

Result<EngineConfig> ApplyEngineFlags(const EngineConfig& base, const EngineFlags& flags) {
  EngineConfig config = base;
  const double util = flags.gpu_memory_utilization;
  if (!std::isfinite(util) || util <= 0 || util > 1) {
    return InvalidArgument(fmt::format("expected a fraction in (0, 1], got {}", util),
                           "--gpu-memory-utilization");
  }
  GS_ASSIGN_OR_RETURN(TimeFactors dtype, Lookup(DtypeFactors(), flags.dtype, "--dtype"));
  GS_ASSIGN_OR_RETURN(TimeFactors quant,
                      Lookup(QuantizationFactors(), flags.quantization, "--quantization"));
  GS_RETURN_IF_ERROR(CheckTimingFlags(flags, dtype, quant));
  if (flags.timing == StepTiming::kCalibrated) return ApplyCalibratedTiming(base, flags);
  config.decode_time_factor = base.decode_time_factor * dtype.decode * quant.decode;
  config.prefill_time_factor = base.prefill_time_factor * dtype.prefill * quant.prefill;
  config.tensor_parallel_size = flags.tensor_parallel_size;
  config.pipeline_parallel_size = flags.pipeline_parallel_size;
  config.max_model_len = flags.max_model_len;
  config.chunked_prefill = flags.enable_chunked_prefill;
  config.max_num_batched_tokens = flags.max_num_batched_tokens;
  if (config.chunked_prefill && config.max_num_batched_tokens == 0) {
    config.max_num_batched_tokens = kDefaultChunkedPrefillTokens;
  }
  GS_RETURN_IF_ERROR(ValidateEngineConfig(config));  // parallel sizes before scaling by them
  const double scale = util / kDefaultGpuMemoryUtilization *
                       static_cast<double>(flags.tensor_parallel_size) *
                       static_cast<double>(flags.pipeline_parallel_size);
  config.kv_cache_tokens =
      static_cast<int64_t>(std::llround(static_cast<double>(base.kv_cache_tokens) * scale));
  GS_RETURN_IF_ERROR(ValidateEngineConfig(config));
  return config;
}

Result<std::vector<std::string>> ApplyExtraArgs(const std::vector<std::string>& extras,
                                                bool accept_unknown, EngineFlags& flags) {
  std::vector<std::string> ignored;
  for (size_t i = 0; i < extras.size(); ++i) {
    const std::string& arg = extras[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const bool has_next_value = i + 1 < extras.size() && !extras[i + 1].starts_with("-");
    if (int32_t* target = ShortFlagTarget(name, flags)) {
      if (eq == std::string::npos && !has_next_value) {
        return InvalidArgument("expected a value", name);
      }
      const std::string value = eq != std::string::npos ? arg.substr(eq + 1) : extras[++i];
      GS_ASSIGN_OR_RETURN(*target, ParseCount(value, name));
      continue;
    }
    if (!arg.starts_with("-")) {
      return InvalidArgument(fmt::format("unexpected argument '{}'", arg), "gpuscale emulate");
    }
    if (!accept_unknown) {
      return InvalidArgument(
          "unrecognized argument; pass --accept-unknown-flags to ignore engine flags the "
          "emulator does not model",
          name);
    }
    std::string skipped = arg;
    if (eq == std::string::npos && has_next_value) skipped += " " + extras[++i];
    ignored.push_back(std::move(skipped));
  }
  return ignored;
}

int64_t GpuMemoryBytes(std::string_view model_name, const EngineFlags& flags,
                       const EngineConfig& engine) {
  const double params = alloc::ParamCountFromModelName(model_name).value_or(kDefaultEmulatedParams);
  const bool quantized = !flags.quantization.empty() && flags.quantization != "none";
  const double bytes_per_weight =
      alloc::BytesPerParameter(quantized ? flags.quantization : flags.dtype).value_or(2.0);
  const double total = params * bytes_per_weight +
                       static_cast<double>(engine.kv_cache_tokens) * kKvBytesPerToken;
  const int gpus = std::max(1, engine.tensor_parallel_size * engine.pipeline_parallel_size);
  return static_cast<int64_t>(total / gpus);
}

}  // namespace gpuscale::emulator
