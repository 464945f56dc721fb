#include "config/task_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "alloc/model_size.h"
#include "alloc/requirements.h"
#include "config/task_spec_reader.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using alloc::ParamScalar;
using alloc::ParamValue;

constexpr std::string_view kValueExpectation = "expected a number, string, bool or a list of them";

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// A plain scalar is typed the way YAML/JSON reads it (integer, then number, then true/false);
// a quoted one stays a string, so "4" and 4 differ as they do in JSON.
Result<ParamScalar> ReadScalar(const YAML::Node& node, std::string_view path) {
  if (!node.IsScalar()) return yaml::FieldError(node, path, kValueExpectation);
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return ParamScalar(text);
  if (int64_t i = 0; YAML::convert<int64_t>::decode(node, i)) return ParamScalar(i);
  if (double d = 0; YAML::convert<double>::decode(node, d)) return ParamScalar(d);
  const std::string lower = Lower(text);
  if (lower == "true" || lower == "false") return ParamScalar(lower == "true");
  return ParamScalar(text);
}

Result<ParamValue> ReadParamValue(const YAML::Node& node, std::string_view path) {
  const int line = yaml::LineOf(node);
  if (!node.IsSequence()) {
    GS_ASSIGN_OR_RETURN(ParamScalar scalar, ReadScalar(node, path));
    return ParamValue::Scalar(std::move(scalar), line);
  }
  std::vector<ParamScalar> items;
  for (size_t i = 0; i < node.size(); ++i) {
    GS_ASSIGN_OR_RETURN(ParamScalar scalar, ReadScalar(node[i], yaml::Index(path, i)));
    items.push_back(std::move(scalar));
  }
  if (items.empty()) return yaml::FieldError(node, path, "expected at least one value in the list");
  return ParamValue::List(std::move(items), line);
}

Result<std::map<std::string, ParamValue>> ReadParameters(const YAML::Node& root) {
  std::map<std::string, ParamValue> parameters;
  const YAML::Node node = root["parameters"];
  if (!node.IsDefined() || node.IsNull()) return parameters;
  if (!node.IsMap())
    return yaml::FieldError(node, "parameters", "expected a mapping of name: value");
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      return yaml::FieldError(entry.first, "parameters", "expected parameter names as keys");
    }
    const std::string name = entry.first.Scalar();
    GS_ASSIGN_OR_RETURN(ParamValue value,
                        ReadParamValue(entry.second, yaml::Join("parameters", name)));
    parameters.insert_or_assign(name, std::move(value));
  }
  return parameters;
}

// `model: name` or the LLM Autotuner's `model: {id_or_path: name}`.
Result<std::string> ReadModel(const YAML::Node& root) {
  const YAML::Node node = root["model"];
  if (node.IsDefined() && node.IsMap()) {
    GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, "model", {"id_or_path"}));
    return yaml::ReadString(node, "id_or_path", "model");
  }
  GS_ASSIGN_OR_RETURN(std::string model, yaml::ReadString(root, "model", ""));
  if (model.empty()) return yaml::FieldError(node, "model", "expected a model id or path");
  return model;
}

// params_b, dtype and gpu_memory_mb, each checked here where the line is known.
Status ReadSizing(const YAML::Node& root, alloc::TaskSpec& task) {
  if (root["params_b"].IsDefined() && !root["params_b"].IsNull()) {
    GS_ASSIGN_OR_RETURN(double params_b, yaml::ReadDouble(root, "params_b", ""));
    if (!(params_b > 0 && params_b <= 1e6)) {
      return yaml::FieldError(root["params_b"], "params_b",
                              "expected a positive number of billions of parameters");
    }
    task.params_b = params_b;
  }
  GS_ASSIGN_OR_RETURN(task.dtype, yaml::ReadString(root, "dtype", "", std::string()));
  if (!task.dtype.empty() && !alloc::BytesPerParameter(task.dtype)) {
    return yaml::FieldError(root["dtype"], "dtype",
                            fmt::format("unknown dtype '{}'; expected one of {}", task.dtype,
                                        alloc::KnownDtypesText()));
  }
  if (root["gpu_memory_mb"].IsDefined() && !root["gpu_memory_mb"].IsNull()) {
    GS_ASSIGN_OR_RETURN(int memory_mb, yaml::ReadInt(root, "gpu_memory_mb", ""));
    if (memory_mb <= 0) {
      return yaml::FieldError(root["gpu_memory_mb"], "gpu_memory_mb",
                              "expected a positive number of MiB");
    }
    task.gpu_memory_mb = memory_mb;
  }
  return OkStatus();
}

Unexpected<Error> MalformedTask(const YAML::Exception& e) {
  return InvalidArgument(fmt::format("malformed task: {} (line {})", e.msg, e.mark.line + 1));
}

}  // namespace

namespace internal {

Result<alloc::TaskSpec> ReadTaskSpecFields(const YAML::Node& root) {
  // yaml-cpp throws on some malformed shapes (e.g. a sequence used as a map key): a function
  // that returns a Result never throws, so the exception becomes the error here.
  try {
    alloc::TaskSpec task;
    GS_ASSIGN_OR_RETURN(task.name, yaml::ReadString(root, "name", "", std::string()));
    GS_ASSIGN_OR_RETURN(task.model, ReadModel(root));
    GS_RETURN_IF_ERROR(ReadSizing(root, task));
    GS_ASSIGN_OR_RETURN(task.parameters, ReadParameters(root));
    GS_RETURN_IF_ERROR(alloc::ValidateTask(task));
    return task;
  } catch (const YAML::Exception& e) {
    return MalformedTask(e);
  }
}

}  // namespace internal

Result<alloc::TaskSpec> ParseTaskSpec(const YAML::Node& root) {
  // yaml-cpp throws on some malformed shapes; a Result function never throws.
  try {
    GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(root, "", {GPUSCALE_TASK_SPEC_KEYS}));
  } catch (const YAML::Exception& e) {
    return MalformedTask(e);
  }
  return internal::ReadTaskSpecFields(root);
}

Result<alloc::TaskSpec> ParseTaskText(std::string_view text, std::string_view source) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::ParseYaml(text, source));
  return ParseTaskSpec(root);
}

Result<alloc::TaskSpec> LoadTaskFile(const std::string& path) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(path));
  return ParseTaskSpec(root);
}

}  // namespace gpuscale::config
