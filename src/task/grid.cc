#include "task/grid.h"

#include <fmt/format.h>

#include <charconv>
#include <set>
#include <string_view>
#include <type_traits>

namespace gpuscale::task {
namespace {

std::string LineSuffix(int line) { return line > 0 ? fmt::format(" (line {})", line) : ""; }

// Counts the grid points into `points`. The product is checked as it grows, so it never
// overflows however long the lists are.
Status CheckGridSize(const alloc::TaskSpec& spec, int64_t& points) {
  points = 1;
  for (const auto& [name, value] : spec.parameters) {
    if (value.items.empty()) {
      return InvalidArgument(
          fmt::format("expected at least one value in the list{}", LineSuffix(value.line)),
          "parameters." + name);
    }
    points *= static_cast<int64_t>(value.items.size());
    if (points > kMaxExperimentsPerTask) {
      return InvalidArgument(fmt::format("the grid has more than {} points (reached {} at '{}'); "
                                         "shorten the lists",
                                         kMaxExperimentsPerTask, points, name),
                             "parameters");
    }
  }
  return OkStatus();
}

// The spec restricted to one point: every parameter becomes the chosen scalar (line kept so
// estimator errors still point at the file).
ExperimentPlan PointPlan(const alloc::TaskSpec& spec, int index) {
  ExperimentPlan plan;
  plan.index = index;
  plan.spec = spec;
  int64_t rest = index;
  // Last parameter fastest: walk the names backwards, taking the remainder each time.
  for (auto it = plan.spec.parameters.rbegin(); it != plan.spec.parameters.rend(); ++it) {
    alloc::ParamValue& value = it->second;
    const int64_t count = static_cast<int64_t>(value.items.size());
    alloc::ParamScalar chosen = value.items[static_cast<size_t>(rest % count)];
    rest /= count;
    plan.parameters[it->first] = chosen;
    value = alloc::ParamValue::Scalar(std::move(chosen), value.line);
  }
  return plan;
}

}  // namespace

Result<std::vector<ExperimentPlan>> ExpandGrid(const TaskDefinition& task,
                                               const alloc::EstimateOptions& options) {
  int64_t points = 1;
  GS_RETURN_IF_ERROR(CheckGridSize(task.spec, points));
  std::vector<ExperimentPlan> plans;
  plans.reserve(static_cast<size_t>(points));
  for (int index = 0; index < points; ++index) {
    ExperimentPlan plan = PointPlan(task.spec, index);
    GS_ASSIGN_OR_RETURN(alloc::Requirement requirement,
                        alloc::EstimateRequirement(plan.spec, options));
    plan.gpus = requirement.gpus;
    plan.memory_mb_per_gpu = requirement.memory_mb_per_gpu;
    plan.requirement_explanation = std::move(requirement.explanation);
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::string ParamText(const alloc::ParamScalar& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          // Shortest text that reads back as the same double: 0.9, not 0.900000.
          char buffer[64];
          auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v);
          return ec == std::errc() ? std::string(buffer, end) : fmt::format("{}", v);
        } else {
          return fmt::format("{}", v);
        }
      },
      value);
}

namespace {

// The value of one placeholder name, or nullopt when the name is unknown.
std::optional<std::string> PlaceholderValue(std::string_view name, const TaskDefinition& task,
                                            const ExperimentPlan& plan,
                                            const ArgvContext& context) {
  if (name == "port") return fmt::format("{}", context.port);
  if (name == "gpus") return fmt::format("{}", fmt::join(context.gpu_indices, ","));
  if (name == "gpu_count") return fmt::format("{}", context.gpu_indices.size());
  if (name == "model") return task.spec.model;
  auto it = plan.parameters.find(std::string(name));
  if (it != plan.parameters.end()) return ParamText(it->second);
  return std::nullopt;
}

// Expands one argument. Errors name `field`.
Result<std::string> RenderArgument(std::string_view text, const std::string& field,
                                   const TaskDefinition& task, const ExperimentPlan& plan,
                                   const ArgvContext& context) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool doubled = i + 1 < text.size() && text[i + 1] == c;
    if ((c == '{' || c == '}') && doubled) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') {
      return InvalidArgument(
          fmt::format("unmatched '}}' in '{}'; write '}}}}' for a literal brace", text), field);
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = text.find('}', i + 1);
    if (close == std::string_view::npos) {
      return InvalidArgument(
          fmt::format("unclosed '{{' in '{}'; write '{{{{' for a literal brace", text), field);
    }
    const std::string_view name = text.substr(i + 1, close - i - 1);
    std::optional<std::string> value = PlaceholderValue(name, task, plan, context);
    if (!value) {
      return InvalidArgument(
          fmt::format("unknown placeholder '{{{}}}'; expected {{port}}, {{gpus}}, "
                      "{{gpu_count}}, {{model}} or a parameter name",
                      name),
          field);
    }
    out += *value;
    i = close;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> RenderServerArgv(const TaskDefinition& task,
                                                  const ExperimentPlan& plan,
                                                  const ArgvContext& context) {
  std::vector<std::string> argv;
  argv.reserve(task.server_command.size());
  for (size_t i = 0; i < task.server_command.size(); ++i) {
    GS_ASSIGN_OR_RETURN(std::string argument,
                        RenderArgument(task.server_command[i], fmt::format("server.command[{}]", i),
                                       task, plan, context));
    argv.push_back(std::move(argument));
  }
  return argv;
}

}  // namespace gpuscale::task
