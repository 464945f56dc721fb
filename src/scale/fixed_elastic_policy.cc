#include "scale/fixed_elastic_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "scale/policy_util.h"

namespace gpuscale::scale {

namespace {

std::vector<GroupPlan::Adapter> EffectiveAdapters(const ScalingInput& input,
                                                  const std::vector<AdapterCapacity>& implicit) {
  const std::vector<AdapterCapacity>& source = input.adapters.empty() ? implicit : input.adapters;
  std::vector<GroupPlan::Adapter> adapters;
  adapters.reserve(source.size());
  for (const AdapterCapacity& a : source) adapters.push_back({&a, false});
  return adapters;
}

const GroupPlan::Adapter* FindAdapter(const GroupPlan& plan, bool primary) {
  for (const GroupPlan::Adapter& a : plan.adapters()) {
    const int max_groups = a.capacity->max_worker_groups;
    if (primary ? max_groups == 1 : max_groups > 1) return &a;
  }
  return nullptr;
}

struct Tick {
  GroupPlan plan;
  const GroupPlan::Adapter* primary = nullptr;
  const GroupPlan::Adapter* secondary = nullptr;
  std::vector<std::string> changes;
  std::vector<std::string> notes;

  bool IsSecondaryGroup(const GroupPlan::Group& g) const {
    return primary == nullptr || g.adapter != primary->capacity->name;
  }
};

// Starts one secondary group; false (with a note) when there is no room.
bool StartSecondary(Tick& tick, int max_replicas, const std::string& why) {
  if (tick.secondary == nullptr) {
    tick.notes.push_back(
        fmt::format("{}, but no secondary adapter (max_worker_groups > 1) "
                    "is reported",
                    why));
  } else if (!tick.plan.HasRoom(*tick.secondary)) {
    tick.notes.push_back(fmt::format(
        "{}, but secondary adapter '{}' runs its "
        "max_worker_groups {}",
        why, tick.secondary->capacity->name, tick.secondary->capacity->max_worker_groups));
  } else if (tick.plan.size() >= max_replicas) {
    tick.notes.push_back(fmt::format("{}, but max_replicas {} is reached", why, max_replicas));
  } else {
    tick.changes.push_back(
        fmt::format("start a secondary group on '{}' ({})", tick.secondary->capacity->name, why));
    tick.plan.Start(*tick.secondary, tick.secondary->capacity->capabilities);
    return true;
  }
  return false;
}

// Shuts down the last secondary group when the ratio is low and the data can be trusted.
void ScaleIn(Tick& tick, const FixedElasticPolicyConfig& config, long long tasks, bool trusted,
             const std::string& why) {
  auto index =
      tick.plan.LastRunning([&](const GroupPlan::Group& g) { return tick.IsSecondaryGroup(g); });
  if (!index) return;  // only the primary (or nothing) runs: nothing may shut down
  const GroupPlan::Group& group = tick.plan.groups()[*index];
  const double after = TaskRatio(tasks, tick.plan.Workers() - group.workers);
  if (!trusted) {
    tick.notes.push_back(why + ", but task counts are incomplete this tick, so no scale-in");
  } else if (tick.plan.size() <= config.min_replicas) {
    tick.notes.push_back(fmt::format("{}, but min_replicas is {}", why, config.min_replicas));
  } else if (after > config.upper_task_ratio) {
    tick.notes.push_back(
        fmt::format("{}, but removing a secondary group would give {} > "
                    "upper_task_ratio {}",
                    why, FormatNumber(after), FormatNumber(config.upper_task_ratio)));
  } else {
    tick.changes.push_back(fmt::format("shut down secondary group '{}' ({})", group.id, why));
    tick.plan.Shutdown(*index);
  }
}

void EnforceBounds(Tick& tick, const FixedElasticPolicyConfig& config) {
  while (tick.plan.size() < config.min_replicas &&
         StartSecondary(tick, config.max_replicas,
                        fmt::format("below min_replicas {}", config.min_replicas))) {
  }
  while (tick.plan.size() > std::max(config.max_replicas, config.min_replicas)) {
    auto index =
        tick.plan.LastRunning([&](const GroupPlan::Group& g) { return tick.IsSecondaryGroup(g); });
    if (!index) return;
    tick.changes.push_back(
        fmt::format("shut down secondary group '{}' to respect "
                    "max_replicas {}",
                    tick.plan.groups()[*index].id, config.max_replicas));
    tick.plan.Shutdown(*index);
  }
}

Decision Finish(Tick& tick, int current, const std::string& hold_reason) {
  Decision decision;
  decision.desired_replicas = tick.plan.size();
  decision.actions = tick.plan.TakeActions();
  decision.details = tick.notes;
  const std::string why = !tick.changes.empty() ? fmt::format("{}", fmt::join(tick.changes, "; "))
                          : !tick.notes.empty() ? tick.notes.front()
                                                : hold_reason;
  decision.reason = fmt::format(
      "{}: {}", FormatGroupChange(current, decision.desired_replicas, !decision.actions.empty()),
      why);
  return decision;
}

// Requests the primary group at most once per policy instance ("started once").
void StartPrimaryOnce(Tick& tick, int max_replicas, bool& requested) {
  if (tick.primary == nullptr) {
    tick.notes.push_back("no primary adapter (max_worker_groups == 1) is reported");
  } else if (tick.plan.GroupsOn(tick.primary->capacity->name) > 0) {
    requested = true;
  } else if (!requested && tick.plan.size() < max_replicas) {
    tick.changes.push_back(
        fmt::format("start the primary group on '{}' (started once, never "
                    "shut down)",
                    tick.primary->capacity->name));
    tick.plan.Start(*tick.primary, tick.primary->capacity->capabilities);
    requested = true;
  }
}

}  // namespace

FixedElasticPolicy::FixedElasticPolicy(FixedElasticPolicyConfig config)
    : config_(config),
      implicit_adapters_{{"primary", 1, 1, {}},
                         {"secondary", std::max(2, config.max_replicas - 1), 1, {}}} {}

Decision FixedElasticPolicy::Evaluate(const ScalingInput& input) {
  Tick tick{GroupPlan(input.groups, EffectiveAdapters(input, implicit_adapters_)),
            nullptr,
            nullptr,
            {},
            {}};
  tick.primary = FindAdapter(tick.plan, true);
  tick.secondary = FindAdapter(tick.plan, false);
  StartPrimaryOnce(tick, config_.max_replicas, primary_requested_);
  const TaskTotal total = CountTasks(input.tasks);
  const long long workers = tick.plan.Workers();
  const double ratio = TaskRatio(total.tasks, workers);
  const std::string observed =
      fmt::format("{} on {} = {} tasks per worker", CountOf(total.tasks, "task"),
                  CountOf(workers, "worker"), FormatNumber(ratio));
  if (ratio > config_.upper_task_ratio) {
    StartSecondary(
        tick, config_.max_replicas,
        fmt::format("{} > upper_task_ratio {}", observed, FormatNumber(config_.upper_task_ratio)));
  } else if (ratio < config_.lower_task_ratio) {
    ScaleIn(
        tick, config_, total.tasks, !input.metrics_error && total.valid,
        fmt::format("{} < lower_task_ratio {}", observed, FormatNumber(config_.lower_task_ratio)));
  }
  EnforceBounds(tick, config_);
  return Finish(
      tick, static_cast<int>(input.groups.size()),
      fmt::format("{}, within [lower_task_ratio {}, upper_task_ratio {}]", observed,
                  FormatNumber(config_.lower_task_ratio), FormatNumber(config_.upper_task_ratio)));
}

}  // namespace gpuscale::scale
