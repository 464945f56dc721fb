#include "scale/fixed_elastic_policy.h"

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

// What a start or shutdown answers; written into whichever sentence ends up needing it.
enum class Trigger { kAboveUpper, kBelowLower, kBelowMin };

// One tick's working state: the plan, the observed task ratio and the sentences that
// explain the outcome, appended straight to where the Decision carries them.
struct ElasticTick {
  GroupPlan plan;
  const FixedElasticPolicyConfig& config;
  std::string changes;  // one clause per action, "; "-joined into the reason
  std::vector<std::string> notes;
  const GroupPlan::Adapter* primary = nullptr;
  const GroupPlan::Adapter* secondary = nullptr;
  long long tasks = 0;
  long long workers = 0;  // over all groups, once the primary start is planned
  double ratio = 0;

  bool IsSecondaryGroup(const GroupPlan::Group& g) const {
    return primary == nullptr || g.adapter != primary->capacity->name;
  }
  std::string& NextChange() {
    if (changes.empty()) {
      changes.reserve(kReasonCapacity);
    } else {
      changes.append("; ");
    }
    return changes;
  }
  // "28 tasks on 5 workers = 5.6 tasks per worker"
  void AppendObserved(std::string& out) const {
    AppendCountOf(out, tasks, "task");
    out.append(" on ");
    AppendCountOf(out, workers, "worker");
    StrAppend(out, " = ", Num{ratio}, " tasks per worker");
  }
  void AppendTrigger(std::string& out, Trigger trigger) const {
    if (trigger == Trigger::kBelowMin) {
      StrAppend(out, "below min_replicas ", config.min_replicas);
      return;
    }
    AppendObserved(out);
    if (trigger == Trigger::kAboveUpper) {
      StrAppend(out, " > upper_task_ratio ", Num{config.upper_task_ratio});
    } else {
      StrAppend(out, " < lower_task_ratio ", Num{config.lower_task_ratio});
    }
  }
};

// Starts one secondary group; false (with a note) when there is no room.
bool StartSecondary(ElasticTick& tick, Trigger trigger) {
  const GroupPlan::Adapter* secondary = tick.secondary;
  if (secondary != nullptr && tick.plan.HasRoom(*secondary) &&
      tick.plan.size() < tick.config.max_replicas) {
    std::string& change = tick.NextChange();
    StrAppend(change, "start a secondary group on '", secondary->capacity->name, "' (");
    tick.AppendTrigger(change, trigger);
    change.push_back(')');
    tick.plan.Start(*secondary, secondary->capacity->capabilities);
    return true;
  }
  std::string& note = tick.notes.emplace_back();
  tick.AppendTrigger(note, trigger);
  if (secondary == nullptr) {
    note.append(", but no secondary adapter (max_worker_groups > 1) is reported");
  } else if (!tick.plan.HasRoom(*secondary)) {
    StrAppend(note, ", but secondary adapter '", secondary->capacity->name,
              "' runs its max_worker_groups ", secondary->capacity->max_worker_groups);
  } else {
    StrAppend(note, ", but max_replicas ", tick.config.max_replicas, " is reached");
  }
  return false;
}

// Shuts down the last secondary group when the ratio is low and the data can be trusted.
void ScaleIn(ElasticTick& tick, bool trusted) {
  auto index =
      tick.plan.LastRunning([&](const GroupPlan::Group& g) { return tick.IsSecondaryGroup(g); });
  if (!index) return;  // only the primary (or nothing) runs: nothing may shut down
  const GroupPlan::Group& group = tick.plan.groups()[*index];
  const double after = TaskRatio(tick.tasks, tick.plan.Workers() - group.workers);
  const FixedElasticPolicyConfig& config = tick.config;
  if (trusted && tick.plan.size() > config.min_replicas && !(after > config.upper_task_ratio)) {
    std::string& change = tick.NextChange();
    StrAppend(change, "shut down secondary group '", group.id, "' (");
    tick.AppendTrigger(change, Trigger::kBelowLower);
    change.push_back(')');
    tick.plan.Shutdown(*index);
    return;
  }
  std::string& note = tick.notes.emplace_back();
  tick.AppendTrigger(note, Trigger::kBelowLower);
  if (!trusted) {
    note.append(", but task counts are incomplete this tick, so no scale-in");
  } else if (tick.plan.size() <= config.min_replicas) {
    StrAppend(note, ", but min_replicas is ", config.min_replicas);
  } else {
    StrAppend(note, ", but removing a secondary group would give ", Num{after},
              " > upper_task_ratio ", Num{config.upper_task_ratio});
  }
}

void EnforceBounds(ElasticTick& tick) {
  const FixedElasticPolicyConfig& config = tick.config;
  while (tick.plan.size() < config.min_replicas && StartSecondary(tick, Trigger::kBelowMin)) {
  }
  while (tick.plan.size() > std::max(config.max_replicas, config.min_replicas)) {
    auto index =
        tick.plan.LastRunning([&](const GroupPlan::Group& g) { return tick.IsSecondaryGroup(g); });
    if (!index) return;
    StrAppend(tick.NextChange(), "shut down secondary group '", tick.plan.groups()[*index].id,
              "' to respect max_replicas ", config.max_replicas);
    tick.plan.Shutdown(*index);
  }
}

Decision Finish(ElasticTick& tick, int current) {
  Decision decision;
  decision.desired_replicas = tick.plan.size();
  decision.actions = tick.plan.TakeActions();
  decision.details = std::move(tick.notes);
  std::string& reason = decision.reason;
  reason.reserve(kReasonCapacity + tick.changes.size());
  AppendGroupChange(reason, current, decision.desired_replicas, !decision.actions.empty());
  reason.append(": ");
  if (!tick.changes.empty()) {
    reason.append(tick.changes);
  } else if (!decision.details.empty()) {
    reason.append(decision.details.front());
  } else {
    tick.AppendObserved(reason);
    StrAppend(reason, ", within [lower_task_ratio ", Num{tick.config.lower_task_ratio},
              ", upper_task_ratio ", Num{tick.config.upper_task_ratio}, "]");
  }
  return decision;
}

// Requests the primary group at most once per policy instance ("started once").
void StartPrimaryOnce(ElasticTick& tick, bool& requested) {
  if (tick.primary == nullptr) {
    tick.notes.emplace_back("no primary adapter (max_worker_groups == 1) is reported");
  } else if (tick.plan.GroupsOn(tick.primary->capacity->name) > 0) {
    requested = true;
  } else if (!requested && tick.plan.size() < tick.config.max_replicas) {
    StrAppend(tick.NextChange(), "start the primary group on '", tick.primary->capacity->name,
              "' (started once, never shut down)");
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
  ElasticTick tick{
      GroupPlan(input.groups, EffectiveAdapters(input, implicit_adapters_)), config_, {}, {}};
  tick.primary = FindAdapter(tick.plan, true);
  tick.secondary = FindAdapter(tick.plan, false);
  StartPrimaryOnce(tick, primary_requested_);
  const TaskTotal total = CountTasks(input.tasks);
  tick.tasks = total.tasks;
  tick.workers = tick.plan.Workers();
  tick.ratio = TaskRatio(tick.tasks, tick.workers);
  if (tick.ratio > config_.upper_task_ratio) {
    StartSecondary(tick, Trigger::kAboveUpper);
  } else if (tick.ratio < config_.lower_task_ratio) {
    ScaleIn(tick, !input.metrics_error && total.valid);
  }
  EnforceBounds(tick);
  return Finish(tick, static_cast<int>(input.groups.size()));
}

}  // namespace gpuscale::scale
