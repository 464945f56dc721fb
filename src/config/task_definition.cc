#include "config/task_definition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "config/task_spec_reader.h"
#include "task/grid.h"
#include "task/objective.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

constexpr size_t kMaxNameLength = 40;

bool Present(const YAML::Node& node) { return node.IsDefined() && !node.IsNull(); }

Status CheckName(const YAML::Node& root, const std::string& name) {
  if (!Present(root["name"])) {
    return yaml::FieldError(root, "name",
                            "required field is missing: a name of 1 to 40 characters a-z, 0-9 "
                            "and '-'");
  }
  const bool valid_chars = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
  if (name.empty() || name.size() > kMaxNameLength || !valid_chars) {
    return yaml::FieldError(root["name"], "name",
                            "expected a name of 1 to 40 characters a-z, 0-9 and '-'");
  }
  return OkStatus();
}

Result<std::vector<std::string>> ReadCommand(const YAML::Node& server) {
  const YAML::Node node = server["command"];
  if (!Present(node)) {
    return yaml::FieldError(server, "server.command", "required field is missing");
  }
  if (!node.IsSequence() || node.size() == 0) {
    return yaml::FieldError(node, "server.command",
                            "expected a non-empty list of arguments (argv, no shell)");
  }
  std::vector<std::string> argv;
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar()) {
      return yaml::FieldError(node[i], yaml::Index("server.command", i), "expected a string");
    }
    argv.push_back(node[i].Scalar());
  }
  if (argv[0].empty()) return yaml::FieldError(node[0], "server.command[0]", "expected a program");
  return argv;
}

Status ReadServer(const YAML::Node& root, task::TaskDefinition& task) {
  const YAML::Node server = root["server"];
  if (!Present(server)) return yaml::FieldError(root, "server", "required field is missing");
  if (!server.IsMap()) return yaml::FieldError(server, "server", "expected a mapping");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      server, "server", {"command", "env", "readiness_path", "startup_timeout_seconds"}));
  GS_ASSIGN_OR_RETURN(task.server_command, ReadCommand(server));
  const YAML::Node env = server["env"];
  if (Present(env)) {
    if (!env.IsMap()) {
      return yaml::FieldError(env, "server.env", "expected a mapping NAME: value");
    }
    for (const auto& entry : env) {
      if (!entry.first.IsScalar() || !entry.second.IsScalar()) {
        return yaml::FieldError(entry.first, "server.env", "expected NAME: value strings");
      }
      task.env.emplace_back(entry.first.Scalar(), entry.second.Scalar());
    }
  }
  GS_ASSIGN_OR_RETURN(task.readiness_path,
                      yaml::ReadString(server, "readiness_path", "server", "/health"));
  if (task.readiness_path.empty() || task.readiness_path[0] != '/') {
    return yaml::FieldError(server["readiness_path"], "server.readiness_path",
                            "expected an HTTP path starting with '/'");
  }
  GS_ASSIGN_OR_RETURN(double startup,
                      yaml::ReadDouble(server, "startup_timeout_seconds", "server", 600));
  if (!(startup > 0)) {
    return yaml::FieldError(server["startup_timeout_seconds"], "server.startup_timeout_seconds",
                            "expected a positive number of seconds");
  }
  task.startup_timeout = Seconds(startup);
  return OkStatus();
}

// A number read from `parent[key]` (with `fallback`) that must satisfy `ok`.
Result<double> ReadChecked(const YAML::Node& parent, std::string_view key, std::string_view path,
                           double fallback, bool (*ok)(double), std::string_view expectation) {
  GS_ASSIGN_OR_RETURN(double value, yaml::ReadDouble(parent, key, path, fallback));
  if (!ok(value)) {
    return yaml::FieldError(parent[std::string(key)], yaml::Join(path, key), expectation);
  }
  return value;
}

bool Positive(double v) { return v > 0; }
bool NonNegative(double v) { return v >= 0; }
// An integer >= 1 that fits an int (token lengths, clients).
bool AtLeastOne(double v) { return v >= 1 && v <= 1e9 && v == std::trunc(v); }

Status ReadLengths(const YAML::Node& b, std::string_view prefix,
                   loadgen::LengthDistribution& length, int fallback) {
  constexpr std::string_view kPath = "benchmark";
  GS_ASSIGN_OR_RETURN(double mean, ReadChecked(b, fmt::format("{}_tokens", prefix), kPath, fallback,
                                               AtLeastOne, "expected an integer >= 1"));
  GS_ASSIGN_OR_RETURN(double stddev, ReadChecked(b, fmt::format("{}_stddev_tokens", prefix), kPath,
                                                 0, NonNegative, "expected a number >= 0"));
  length = {static_cast<int32_t>(mean), stddev};
  return OkStatus();
}

Status ReadBenchmark(const YAML::Node& root, task::BenchSpec& bench) {
  const YAML::Node b = root["benchmark"];
  if (!Present(b)) return OkStatus();
  if (!b.IsMap()) return yaml::FieldError(b, "benchmark", "expected a mapping");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      b, "benchmark",
      {"concurrency", "rate_per_second", "input_tokens", "input_stddev_tokens", "output_tokens",
       "output_stddev_tokens", "duration_seconds", "drain_timeout_seconds", "seed"}));
  GS_ASSIGN_OR_RETURN(double concurrency, ReadChecked(b, "concurrency", "benchmark", 8, AtLeastOne,
                                                      "expected an integer >= 1"));
  bench.concurrency = static_cast<int>(concurrency);
  if (Present(b["rate_per_second"])) {
    GS_ASSIGN_OR_RETURN(bench.rate_per_second,
                        ReadChecked(b, "rate_per_second", "benchmark", 0, Positive,
                                    "expected a positive number of requests per second"));
    bench.mode = loadgen::ArrivalMode::kPoisson;
  }
  GS_RETURN_IF_ERROR(ReadLengths(b, "input", bench.input, 256));
  GS_RETURN_IF_ERROR(ReadLengths(b, "output", bench.output, 128));
  GS_ASSIGN_OR_RETURN(bench.duration_seconds,
                      ReadChecked(b, "duration_seconds", "benchmark", 30, Positive,
                                  "expected a positive number of seconds"));
  GS_ASSIGN_OR_RETURN(bench.drain_timeout_seconds,
                      ReadChecked(b, "drain_timeout_seconds", "benchmark", 30, NonNegative,
                                  "expected a number of seconds >= 0"));
  GS_ASSIGN_OR_RETURN(int seed, yaml::ReadInt(b, "seed", "benchmark", 1));
  if (seed < 0) return yaml::FieldError(b["seed"], "benchmark.seed", "expected an integer >= 0");
  bench.seed = static_cast<uint64_t>(seed);
  return OkStatus();
}

Status ReadScheduling(const YAML::Node& root, task::TaskDefinition& task) {
  GS_ASSIGN_OR_RETURN(double wait, ReadChecked(root, "gpu_wait_timeout_seconds", "", 300,
                                               NonNegative, "expected a number of seconds >= 0"));
  task.gpu_wait_timeout = Seconds(wait);
  GS_ASSIGN_OR_RETURN(task.priority, yaml::ReadInt(root, "priority", "", 0));
  GS_ASSIGN_OR_RETURN(task.max_parallel, yaml::ReadInt(root, "max_parallel", "", 0));
  if (task.max_parallel < 0) {
    return yaml::FieldError(root["max_parallel"], "max_parallel",
                            "expected an integer >= 0 (0 = as many as GPUs allow)");
  }
  return OkStatus();
}

// "ttft_p90" -> metric "ttft", percentile 90 (checked by ValidateObjective afterwards).
Status ReadLatencyName(const YAML::Node& node, std::string_view path, task::Objective& objective) {
  const std::string text = node.IsScalar() ? node.Scalar() : std::string();
  const size_t split = text.rfind("_p");
  double percentile = 0;
  const bool parsed = split != std::string::npos &&
                      YAML::convert<double>::decode(YAML::Node(text.substr(split + 2)), percentile);
  if (!parsed) {
    return yaml::FieldError(node, path,
                            fmt::format("expected <ttft|tpot|itl|e2e>_p<50|90|99>, e.g. ttft_p90; "
                                        "got '{}'",
                                        text));
  }
  objective.latency_metric = text.substr(0, split);
  objective.percentile = percentile;
  return OkStatus();
}

// `maximize: throughput` with an optional `max_latency: {<metric>_p<q>: seconds}`.
Status ReadMaximize(const YAML::Node& node, task::Objective& objective) {
  GS_ASSIGN_OR_RETURN(std::string target, yaml::ReadString(node, "maximize", "objective"));
  if (target != "throughput") {
    return yaml::FieldError(node["maximize"], "objective.maximize", "expected throughput");
  }
  if (Present(node["min_throughput_rps"])) {
    return yaml::FieldError(node["min_throughput_rps"], "objective.min_throughput_rps",
                            "only applies with minimize: <latency>");
  }
  const YAML::Node ceiling = node["max_latency"];
  if (!Present(ceiling)) return OkStatus();
  if (!ceiling.IsMap() || ceiling.size() != 1) {
    return yaml::FieldError(ceiling, "objective.max_latency",
                            "expected one entry <metric>_p<q>: seconds, e.g. {ttft_p90: 0.5}");
  }
  const auto entry = *ceiling.begin();
  GS_RETURN_IF_ERROR(ReadLatencyName(entry.first, "objective.max_latency", objective));
  double seconds = 0;
  if (!YAML::convert<double>::decode(entry.second, seconds) || !(seconds > 0)) {
    return yaml::FieldError(entry.second, "objective.max_latency",
                            "expected a positive number of seconds");
  }
  objective.kind = task::ObjectiveKind::kMaxThroughputUnderLatency;
  objective.latency_ceiling_seconds = seconds;
  return OkStatus();
}

// `minimize: <metric>_p<q>` with an optional `min_throughput_rps`.
Status ReadMinimize(const YAML::Node& node, task::Objective& objective) {
  GS_RETURN_IF_ERROR(ReadLatencyName(node["minimize"], "objective.minimize", objective));
  if (Present(node["max_latency"])) {
    return yaml::FieldError(node["max_latency"], "objective.max_latency",
                            "only applies with maximize: throughput");
  }
  objective.kind = task::ObjectiveKind::kMinLatency;
  GS_ASSIGN_OR_RETURN(objective.throughput_floor_rps,
                      ReadChecked(node, "min_throughput_rps", "objective", 0, NonNegative,
                                  "expected a number of requests per second >= 0"));
  return OkStatus();
}

Status ReadObjective(const YAML::Node& root, task::Objective& objective) {
  const YAML::Node node = root["objective"];
  if (!Present(node)) return OkStatus();  // default: maximize throughput
  if (!node.IsMap()) return yaml::FieldError(node, "objective", "expected a mapping");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      node, "objective", {"maximize", "minimize", "min_throughput_rps", "max_latency"}));
  const bool maximize = Present(node["maximize"]);
  if (maximize == Present(node["minimize"])) {
    return yaml::FieldError(node, "objective",
                            "expected exactly one of maximize: throughput or minimize: <latency>");
  }
  GS_RETURN_IF_ERROR(maximize ? ReadMaximize(node, objective) : ReadMinimize(node, objective));
  Status valid = task::ValidateObjective(objective);
  if (!valid) {
    // Name the key the user wrote, not the Objective member.
    const char* key = maximize ? "max_latency" : "minimize";
    return yaml::FieldError(node[key], yaml::Join("objective", key), valid.error().message);
  }
  return OkStatus();
}

// Every grid point must estimate and every placeholder of the command must be known; a
// dummy context stands in for the port and GPUs chosen at run time.
Status CheckGridAndCommand(const YAML::Node& root, const task::TaskDefinition& task) {
  GS_ASSIGN_OR_RETURN(std::vector<task::ExperimentPlan> plans, task::ExpandGrid(task));
  const task::ArgvContext dummy{8000, {0}};
  for (const task::ExperimentPlan& plan : plans) {
    Result<std::vector<std::string>> argv = task::RenderServerArgv(task, plan, dummy);
    if (argv) continue;
    const std::string& field = argv.error().field;
    // field is "server.command[i]": point at that argument's line.
    const size_t i = std::stoul(field.substr(field.find('[') + 1));
    return yaml::FieldError(root["server"]["command"][i], field, argv.error().message);
  }
  return OkStatus();
}

}  // namespace

Result<task::TaskDefinition> ParseTaskDefinition(const YAML::Node& root) {
  // yaml-cpp throws on some malformed shapes; a Result function never throws.
  try {
    if (!root.IsMap()) return yaml::FieldError(root, "", "expected a task: a mapping at the top");
    GS_RETURN_IF_ERROR(
        yaml::CheckKnownKeys(root, "",
                             {GPUSCALE_TASK_SPEC_KEYS, "server", "benchmark",
                              "gpu_wait_timeout_seconds", "priority", "max_parallel", "objective"}));
    task::TaskDefinition task;
    GS_ASSIGN_OR_RETURN(task.spec, internal::ReadTaskSpecFields(root));
    task.name = task.spec.name;
    GS_RETURN_IF_ERROR(CheckName(root, task.name));
    GS_RETURN_IF_ERROR(ReadServer(root, task));
    GS_RETURN_IF_ERROR(ReadBenchmark(root, task.bench));
    GS_RETURN_IF_ERROR(ReadScheduling(root, task));
    GS_RETURN_IF_ERROR(ReadObjective(root, task.objective));
    GS_RETURN_IF_ERROR(CheckGridAndCommand(root, task));
    return task;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("malformed task: {} (line {})", e.msg, e.mark.line + 1));
  }
}

Result<task::TaskDefinition> ParseTaskDefinitionText(std::string_view text,
                                                     std::string_view source) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::ParseYaml(text, source));
  return ParseTaskDefinition(root);
}

Result<task::TaskDefinition> LoadTaskDefinitionFile(const std::string& path) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(path));
  return ParseTaskDefinition(root);
}

}  // namespace gpuscale::config
