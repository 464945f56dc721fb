// `gpuscale policy eval`: replays a recorded or hand-written input (steps of metrics, task
// counts and worker groups) through one policy, exactly as the control loop would call it,
// and prints each step's decision. docs/policies.md documents the input format.
//
// The input file is read with the YAML field readers (yaml-cpp parses JSON) so that every
// error names the field and line; the output is JSON (nlohmann) or a table.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli/command.h"
#include "config/policy_config.h"
#include "scale/node_plan.h"
#include "scale/policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::cli {

namespace {

using nlohmann::json;

// One step of the input, as written (optional fields stay unset).
struct EvalStep {
  double t = 0;
  std::map<std::string, scale::MetricValue> metrics;
  std::optional<int> replicas;
  std::optional<int> ready_replicas;
  std::vector<scale::TaskDemand> tasks;
  std::optional<std::vector<scale::WorkerGroup>> groups;
  std::optional<std::vector<scale::AdapterCapacity>> adapters;
  bool metrics_error = false;
};

struct EvalInput {
  int replicas = 0;
  std::optional<std::vector<scale::WorkerGroup>> groups;
  std::vector<scale::AdapterCapacity> adapters;
  std::vector<EvalStep> steps;
};

// What one step printed.
struct EvalRow {
  double t = 0;
  int replicas = 0;
  int desired = 0;
  std::string reason;
  std::optional<scale::NodePlan> plan;
};

// --- reading the input ---

Result<scale::CapabilitySet> ReadCapabilities(const YAML::Node& parent, const std::string& path) {
  scale::CapabilitySet set;
  const YAML::Node node = parent["capabilities"];
  if (!node.IsDefined() || node.IsNull()) return set;
  const std::string field = yaml::Join(path, "capabilities");
  if (!node.IsSequence()) return yaml::FieldError(node, field, "expected a list of names");
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar() || node[i].Scalar().empty()) {
      return yaml::FieldError(node[i], yaml::Index(field, i), "expected a capability name");
    }
    set.insert(node[i].Scalar());
  }
  return set;
}

// A number, or "NaN"/.nan (a broken exporter is a case worth replaying).
Result<double> ReadSample(const YAML::Node& node, const std::string& path) {
  double value = 0;
  if (node.IsScalar() && YAML::convert<double>::decode(node, value)) return value;
  if (node.IsScalar() && (node.Scalar() == "NaN" || node.Scalar() == "nan")) return std::nan("");
  return yaml::FieldError(node, path, "expected a number or a list of numbers, one per replica");
}

Result<std::map<std::string, scale::MetricValue>> ReadMetrics(const YAML::Node& step,
                                                              const std::string& path) {
  std::map<std::string, scale::MetricValue> metrics;
  const YAML::Node node = step["metrics"];
  if (!node.IsDefined() || node.IsNull()) return metrics;
  const std::string field = yaml::Join(path, "metrics");
  if (!node.IsMap()) return yaml::FieldError(node, field, "expected a mapping of metric names");
  for (const auto& entry : node) {
    GS_ASSIGN_OR_RETURN(const std::string name, yaml::KeyName(entry.first, field));
    const std::string metric_path = yaml::Join(field, name);
    scale::MetricValue& value = metrics[name];
    if (entry.second.IsSequence()) {
      for (size_t i = 0; i < entry.second.size(); ++i) {
        GS_ASSIGN_OR_RETURN(double v, ReadSample(entry.second[i], yaml::Index(metric_path, i)));
        value.per_replica.push_back(v);
      }
    } else {
      GS_ASSIGN_OR_RETURN(value.service_value, ReadSample(entry.second, metric_path));
    }
  }
  return metrics;
}

Result<scale::TaskDemand> ReadDemand(const YAML::Node& node, const std::string& path) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, path, {"capabilities", "queued", "running"}));
  scale::TaskDemand demand;
  GS_ASSIGN_OR_RETURN(demand.capabilities, ReadCapabilities(node, path));
  GS_ASSIGN_OR_RETURN(demand.queued, yaml::ReadInt(node, "queued", path, 0));
  GS_ASSIGN_OR_RETURN(demand.running, yaml::ReadInt(node, "running", path, 0));
  if (demand.queued < 0) {
    return yaml::FieldError(node["queued"], yaml::Join(path, "queued"), "must be >= 0");
  }
  if (demand.running < 0) {
    return yaml::FieldError(node["running"], yaml::Join(path, "running"), "must be >= 0");
  }
  return demand;
}

// `tasks` is one {queued, running} mapping or a list of them with capabilities.
Result<std::vector<scale::TaskDemand>> ReadTasks(const YAML::Node& step, const std::string& path) {
  std::vector<scale::TaskDemand> tasks;
  const YAML::Node node = step["tasks"];
  if (!node.IsDefined() || node.IsNull()) return tasks;
  const std::string field = yaml::Join(path, "tasks");
  if (node.IsMap()) {
    GS_ASSIGN_OR_RETURN(scale::TaskDemand demand, ReadDemand(node, field));
    tasks.push_back(std::move(demand));
    return tasks;
  }
  if (!node.IsSequence()) {
    return yaml::FieldError(node, field, "expected {queued, running} or a list of them");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    GS_ASSIGN_OR_RETURN(scale::TaskDemand demand, ReadDemand(node[i], yaml::Index(field, i)));
    tasks.push_back(std::move(demand));
  }
  return tasks;
}

Result<std::optional<std::vector<scale::WorkerGroup>>> ReadGroups(const YAML::Node& parent,
                                                                  const std::string& path) {
  const YAML::Node node = parent["groups"];
  if (!node.IsDefined() || node.IsNull()) return std::optional<std::vector<scale::WorkerGroup>>();
  const std::string field = yaml::Join(path, "groups");
  if (!node.IsSequence()) return yaml::FieldError(node, field, "expected a list of groups");
  std::vector<scale::WorkerGroup> groups;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string p = yaml::Index(field, i);
    GS_RETURN_IF_ERROR(
        yaml::CheckKnownKeys(node[i], p, {"id", "adapter", "capabilities", "workers"}));
    scale::WorkerGroup g;
    GS_ASSIGN_OR_RETURN(g.id, yaml::ReadString(node[i], "id", p, fmt::format("group-{}", i + 1)));
    GS_ASSIGN_OR_RETURN(g.adapter, yaml::ReadString(node[i], "adapter", p, std::string()));
    GS_ASSIGN_OR_RETURN(g.capabilities, ReadCapabilities(node[i], p));
    GS_ASSIGN_OR_RETURN(g.workers, yaml::ReadInt(node[i], "workers", p, 1));
    if (g.workers < 0) {
      return yaml::FieldError(node[i]["workers"], yaml::Join(p, "workers"), "must be >= 0");
    }
    groups.push_back(std::move(g));
  }
  return std::optional(std::move(groups));
}

Result<std::optional<std::vector<scale::AdapterCapacity>>> ReadAdapters(const YAML::Node& parent,
                                                                        const std::string& path) {
  const YAML::Node node = parent["adapters"];
  if (!node.IsDefined() || node.IsNull()) {
    return std::optional<std::vector<scale::AdapterCapacity>>();
  }
  const std::string field = yaml::Join(path, "adapters");
  if (!node.IsSequence()) return yaml::FieldError(node, field, "expected a list of adapters");
  std::vector<scale::AdapterCapacity> adapters;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string p = yaml::Index(field, i);
    GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
        node[i], p, {"name", "max_worker_groups", "workers_per_group", "capabilities"}));
    scale::AdapterCapacity a;
    GS_ASSIGN_OR_RETURN(a.name, yaml::ReadString(node[i], "name", p));
    GS_ASSIGN_OR_RETURN(a.max_worker_groups, yaml::ReadInt(node[i], "max_worker_groups", p));
    GS_ASSIGN_OR_RETURN(a.workers_per_group, yaml::ReadInt(node[i], "workers_per_group", p, 1));
    GS_ASSIGN_OR_RETURN(a.capabilities, ReadCapabilities(node[i], p));
    if (a.max_worker_groups < 1) {
      return yaml::FieldError(node[i]["max_worker_groups"], yaml::Join(p, "max_worker_groups"),
                              "must be >= 1");
    }
    if (a.workers_per_group < 1) {
      return yaml::FieldError(node[i]["workers_per_group"], yaml::Join(p, "workers_per_group"),
                              "must be >= 1");
    }
    adapters.push_back(std::move(a));
  }
  return std::optional(std::move(adapters));
}

Result<EvalStep> ReadStep(const YAML::Node& node, const std::string& path) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, path,
                                          {"t", "metrics", "replicas", "ready_replicas", "tasks",
                                           "metrics_error", "groups", "adapters"}));
  EvalStep step;
  GS_ASSIGN_OR_RETURN(step.t, yaml::ReadDouble(node, "t", path));
  GS_ASSIGN_OR_RETURN(step.metrics, ReadMetrics(node, path));
  for (const char* key : {"replicas", "ready_replicas"}) {
    if (!node[key].IsDefined() || node[key].IsNull()) continue;
    GS_ASSIGN_OR_RETURN(int value, yaml::ReadInt(node, key, path));
    if (value < 0) return yaml::FieldError(node[key], yaml::Join(path, key), "must be >= 0");
    (std::string_view(key) == "replicas" ? step.replicas : step.ready_replicas) = value;
  }
  GS_ASSIGN_OR_RETURN(step.tasks, ReadTasks(node, path));
  GS_ASSIGN_OR_RETURN(step.groups, ReadGroups(node, path));
  GS_ASSIGN_OR_RETURN(step.adapters, ReadAdapters(node, path));
  GS_ASSIGN_OR_RETURN(step.metrics_error, yaml::ReadBool(node, "metrics_error", path, false));
  return step;
}

Result<EvalInput> ParseEvalInput(const YAML::Node& root) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(root, "", {"replicas", "groups", "adapters", "steps"}));
  EvalInput input;
  GS_ASSIGN_OR_RETURN(input.replicas, yaml::ReadInt(root, "replicas", ""));
  if (input.replicas < 0) return yaml::FieldError(root["replicas"], "replicas", "must be >= 0");
  GS_ASSIGN_OR_RETURN(input.groups, ReadGroups(root, ""));
  GS_ASSIGN_OR_RETURN(auto adapters, ReadAdapters(root, ""));
  input.adapters = adapters.value_or(std::vector<scale::AdapterCapacity>{});
  const YAML::Node steps = root["steps"];
  if (!steps.IsDefined() || !steps.IsSequence() || steps.size() == 0) {
    return yaml::FieldError(steps.IsDefined() ? steps : root, "steps",
                            "expected a non-empty list of steps");
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    GS_ASSIGN_OR_RETURN(EvalStep step, ReadStep(steps[i], yaml::Index("steps", i)));
    if (!input.steps.empty() && step.t < input.steps.back().t) {
      return yaml::FieldError(
          steps[i]["t"], yaml::Join(yaml::Index("steps", i), "t"),
          fmt::format("must not go back in time (previous step is at {})", input.steps.back().t));
    }
    input.steps.push_back(std::move(step));
  }
  return input;
}

// --- replaying ---

// Families that decide in worker groups (explicit start/shutdown actions) rather than a count.
bool DecidesInGroups(std::string_view family) {
  return family == "capability" || family == "fixed_elastic";
}

// What the orchestrator would do with the actions: started groups appear (named
// <adapter>-<n>), shut-down groups disappear.
void ApplyActions(const scale::Decision& decision,
                  const std::vector<scale::AdapterCapacity>& adapters,
                  std::vector<scale::WorkerGroup>& groups, int& started) {
  for (const scale::GroupAction& action : decision.actions) {
    if (action.kind == scale::GroupAction::Kind::kShutdown) {
      std::erase_if(groups, [&](const scale::WorkerGroup& g) { return g.id == action.group_id; });
      continue;
    }
    scale::WorkerGroup group{fmt::format("{}-{}", action.adapter, ++started), action.adapter,
                             action.capabilities, 1};
    for (const scale::AdapterCapacity& a : adapters) {
      if (a.name != action.adapter) continue;
      group.workers = a.workers_per_group;
      group.capabilities.insert(a.capabilities.begin(), a.capabilities.end());
    }
    groups.push_back(std::move(group));
  }
}

// Groups standing in for `replicas` when the input lists none.
std::vector<scale::WorkerGroup> DeriveGroups(int replicas) {
  std::vector<scale::WorkerGroup> groups;
  for (int i = 0; i < replicas; ++i) groups.push_back({fmt::format("group-{}", i + 1), "", {}, 1});
  return groups;
}

// Feeds the steps to the policy; the replica count (or group list) carries over from each
// decision to the next step unless the step overrides it. Longer than 40 lines because the
// carry-over rules are one piece and read best in one place.
std::vector<EvalRow> Replay(const EvalInput& input, const config::PolicySpec& spec,
                            std::set<std::string>& warnings) {
  const bool in_groups = DecidesInGroups(spec.policy->Family());
  int replicas = input.replicas;
  std::vector<scale::WorkerGroup> groups = input.groups.value_or(DeriveGroups(replicas));
  std::vector<scale::AdapterCapacity> adapters = input.adapters;
  int started = 0;
  std::vector<EvalRow> rows;
  for (const EvalStep& step : input.steps) {
    if (step.adapters) adapters = *step.adapters;
    if (step.groups) groups = *step.groups;
    if (step.replicas) {
      replicas = *step.replicas;
      if (in_groups && !step.groups) groups = DeriveGroups(replicas);
    }
    if (in_groups) replicas = static_cast<int>(groups.size());
    scale::ScalingInput in;
    in.now = Seconds{step.t};
    in.current_replicas = replicas;
    in.ready_replicas = step.ready_replicas.value_or(replicas);
    in.metrics = step.metrics;
    in.tasks = step.tasks;
    in.metrics_error = step.metrics_error;
    if (in_groups) {
      in.groups = groups;
      in.adapters = adapters;
    }
    const scale::Decision decision = spec.policy->Evaluate(in);
    for (const std::string& d : decision.details) {
      if (d.starts_with("warning: ")) warnings.insert(d.substr(9));
    }
    EvalRow row{step.t, replicas, decision.desired_replicas, decision.reason, std::nullopt};
    if (spec.node_plan) row.plan = scale::PlanNodes(decision.desired_replicas, *spec.node_plan);
    rows.push_back(std::move(row));
    if (in_groups) {
      ApplyActions(decision, adapters, groups, started);
      replicas = static_cast<int>(groups.size());
    } else {
      replicas = decision.desired_replicas;
    }
  }
  return rows;
}

// --- printing ---

json TimeJson(double t) {
  if (std::floor(t) == t && std::fabs(t) < 9e15) return static_cast<int64_t>(t);
  return t;
}

void PrintJson(const std::vector<EvalRow>& rows, std::ostream& out) {
  json steps = json::array();
  for (const EvalRow& row : rows) {
    json step{{"t", TimeJson(row.t)},
              {"replicas", row.replicas},
              {"desired", row.desired},
              {"reason", row.reason}};
    if (row.plan) {
      step["nodes"] = row.plan->nodes;
      step["pending"] = row.plan->replicas_pending;
    }
    steps.push_back(std::move(step));
  }
  out << json{{"steps", std::move(steps)}}.dump(2) << "\n";
}

void PrintTable(const std::vector<EvalRow>& rows, bool with_nodes, std::ostream& out) {
  out << fmt::format("{:>8} {:>8} {:>8} ", "T", "REPLICAS", "DESIRED");
  if (with_nodes) out << fmt::format("{:>6} {:>8} ", "NODES", "PENDING");
  out << "REASON\n";
  for (const EvalRow& row : rows) {
    out << fmt::format("{:>8} {:>8} {:>8} ", fmt::format("{:g}", row.t), row.replicas, row.desired);
    if (with_nodes) {
      out << fmt::format("{:>6} {:>8} ", row.plan ? row.plan->nodes : 0,
                         row.plan ? row.plan->replicas_pending : 0);
    }
    out << row.reason << "\n";
  }
}

struct EvalArgs {
  std::string policy_path;
  std::string recipe_path;
  std::string input_path;
  OutputFormat format = OutputFormat::kTable;
};

int RunEval(const EvalArgs& args, CommandContext& ctx) {
  Result<config::PolicySpec> spec = args.policy_path.empty()
                                        ? config::LoadCorrinoRecipeFile(args.recipe_path)
                                        : config::LoadPolicyFile(args.policy_path);
  if (!spec) return ctx.Fail(spec.error());
  Result<YAML::Node> root = yaml::LoadYamlFile(args.input_path);
  if (!root) return ctx.Fail(root.error());
  Result<EvalInput> input = ParseEvalInput(*root);
  if (!input) return ctx.Fail(input.error());
  std::set<std::string> warnings;
  const std::vector<EvalRow> rows = Replay(*input, *spec, warnings);
  for (const std::string& w : warnings) ctx.err << "warning: " << w << "\n";
  if (args.format == OutputFormat::kJson) {
    PrintJson(rows, ctx.out);
  } else {
    PrintTable(rows, spec->node_plan.has_value(), ctx.out);
  }
  return kExitOk;
}

}  // namespace

void AddPolicyCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* policy = app.add_subcommand("policy", "Work with autoscaling policies");
  policy->require_subcommand(1);
  auto args = std::make_shared<EvalArgs>();
  CLI::App* eval = policy->add_subcommand(
      "eval",
      "Replay an input of metric/task steps through a policy file or Corrino recipe and print "
      "each step's desired replicas and the reason (docs/policies.md).");
  auto* policy_opt = eval->add_option("--policy", args->policy_path, "Policy YAML file");
  auto* recipe_opt = eval->add_option("--recipe", args->recipe_path,
                                      "Corrino recipe JSON (pod + node autoscaling params)");
  policy_opt->excludes(recipe_opt);
  eval->add_option("--input", args->input_path, "Input steps (JSON or YAML)")->required();
  AddOutputOption(eval, args->format);
  eval->callback([args, &ctx] {
    if (args->policy_path.empty() && args->recipe_path.empty()) {
      throw CLI::RequiredError("--policy or --recipe");
    }
    RunEval(*args, ctx);
  });
}

}  // namespace gpuscale::cli
