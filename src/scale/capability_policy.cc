#include "scale/capability_policy.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scale/policy_util.h"

namespace gpuscale::scale {

namespace {

// Tasks per required set, sorted by set so that decisions do not depend on input order.
// Points into the input's demands (no set is copied).
using Demand = std::vector<std::pair<const CapabilitySet*, long long>>;

Demand GroupTasks(const std::vector<TaskDemand>& tasks) {
  Demand demand;
  for (const TaskDemand& t : tasks) {
    auto same = std::find_if(demand.begin(), demand.end(),
                             [&](const auto& d) { return *d.first == t.capabilities; });
    if (same == demand.end()) {
      demand.emplace_back(&t.capabilities, CountTasks(t));
    } else {
      same->second += CountTasks(t);
    }
  }
  std::sort(demand.begin(), demand.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  return demand;
}

std::vector<GroupPlan::Adapter> EffectiveAdapters(const ScalingInput& input,
                                                  const AdapterCapacity& implicit) {
  std::vector<GroupPlan::Adapter> adapters;
  adapters.reserve(std::max<size_t>(input.adapters.size(), 1));
  for (const AdapterCapacity& a : input.adapters) adapters.push_back({&a, false});
  if (adapters.empty()) adapters.push_back({&implicit, true});
  return adapters;
}

// True when some other provided set strictly inside `have` also serves `need`: such tasks
// belong to the less specialised groups, so an idle GPU group is not kept alive by CPU
// tasks that CPU groups can run (Scaler's scaling policies: idle GPU workers can go without
// affecting CPU work). The shutdown guards still protect the last capable group.
bool ServedByLessSpecialized(const std::vector<const CapabilitySet*>& provided,
                             const CapabilitySet& need, const CapabilitySet& have) {
  for (const CapabilitySet* other : provided) {
    if (*other != have && IsSubset(*other, have) && IsSubset(need, *other)) return true;
  }
  return false;
}

// One tick's working state: the plan plus the sentences that explain it. Each sentence is
// appended straight to where the Decision carries it, once the outcome it explains is known.
struct Tick {
  GroupPlan plan;
  Demand demand;
  std::string changes;             // one clause per action, "; "-joined into the reason
  std::vector<std::string> notes;  // held-back changes, into details (first explains a hold)

  std::string& NextChange() {
    if (changes.empty()) {
      changes.reserve(kReasonCapacity);
    } else {
      changes.append("; ");
    }
    return changes;
  }
};

// Why a set needs another group: "28 tasks need {} and 5 capable workers give 5.6 tasks
// per worker > upper_task_ratio 5".
void AppendNeed(std::string& out, long long tasks, const CapabilitySet& need, long long capable,
                double ratio, double upper) {
  AppendCountOf(out, tasks, "task");
  StrAppend(out, " need ", need, " and ");
  if (capable == 0) {
    out.append("no group can serve them");
    return;
  }
  AppendCountOf(out, capable, "capable worker");
  StrAppend(out, " give ", Num{ratio}, " tasks per worker > upper_task_ratio ", Num{upper});
}

// What keeps a group alive although its own ratio is low: some pending set would be left
// without (ratio_after unset) or above upper_task_ratio with it gone.
struct Blocker {
  const CapabilitySet* need = nullptr;
  long long tasks = 0;
  std::optional<double> ratio_after;
};

class Planner {
 public:
  Planner(const CapabilityPolicyConfig& config, Tick& tick) : config_(config), tick_(tick) {}
  void ScaleUp();
  void ScaleDown();
  void EnforceBounds();

 private:
  std::optional<Blocker> ShutdownBlocker(size_t index) const;
  void AppendBlocker(std::string& out, const Blocker& blocker) const;
  void ConsiderShutdown(const CapabilitySet& have,
                        const std::vector<const CapabilitySet*>& provided);

  const CapabilityPolicyConfig& config_;
  Tick& tick_;
};

void Planner::ScaleUp() {
  for (const auto& [need_set, tasks] : tick_.demand) {
    const CapabilitySet& need = *need_set;
    if (tasks == 0) continue;
    const long long capable = tick_.plan.CapableWorkers(need);
    const double ratio = TaskRatio(tasks, capable);
    if (ratio <= config_.upper_task_ratio) continue;
    if (tick_.plan.size() >= config_.max_replicas) {
      std::string& note = tick_.notes.emplace_back();
      AppendNeed(note, tasks, need, capable, ratio, config_.upper_task_ratio);
      StrAppend(note, ", but max_replicas ", config_.max_replicas, " is reached");
      continue;
    }
    const GroupPlan::Adapter* adapter = tick_.plan.AdapterFor(need);
    if (adapter == nullptr) {
      std::string& note = tick_.notes.emplace_back();
      AppendNeed(note, tasks, need, capable, ratio, config_.upper_task_ratio);
      StrAppend(note, ", but no adapter with room provides ", need);
      continue;
    }
    std::string& change = tick_.NextChange();
    StrAppend(change, "start a ", need, " group on adapter '", adapter->capacity->name, "' (");
    AppendNeed(change, tasks, need, capable, ratio, config_.upper_task_ratio);
    change.push_back(')');
    tick_.plan.Start(*adapter, need);
  }
}

std::optional<Blocker> Planner::ShutdownBlocker(size_t index) const {
  const GroupPlan::Group& group = tick_.plan.groups()[index];
  for (const auto& [need_set, tasks] : tick_.demand) {
    const CapabilitySet& need = *need_set;
    if (tasks == 0 || !IsSubset(need, *group.capabilities)) continue;
    const long long after = tick_.plan.CapableWorkers(need, index);
    if (after == 0) return Blocker{&need, tasks, std::nullopt};
    const double ratio = TaskRatio(tasks, after);
    if (ratio > config_.upper_task_ratio) return Blocker{&need, tasks, ratio};
  }
  return std::nullopt;
}

void Planner::AppendBlocker(std::string& out, const Blocker& blocker) const {
  if (!blocker.ratio_after) {
    StrAppend(out, "it is the last group able to serve ", blocker.tasks, " pending ", *blocker.need,
              blocker.tasks == 1 ? " task" : " tasks");
    return;
  }
  StrAppend(out, "without it ", *blocker.need, " tasks would get ", Num{*blocker.ratio_after},
            " tasks per worker > upper_task_ratio ", Num{config_.upper_task_ratio},
            ", an immediate scale-up");
}

// Judges the groups that provide exactly `have`: their share of tasks per worker below
// lower_task_ratio shuts down their last running group, unless a guard objects.
// A little over 40 lines: the outcome is settled before its sentence is written.
void Planner::ConsiderShutdown(const CapabilitySet& have,
                               const std::vector<const CapabilitySet*>& provided) {
  long long workers = 0;
  for (const GroupPlan::Group& g : tick_.plan.groups()) {
    if (*g.capabilities == have) workers += g.workers;
  }
  long long tasks = 0;
  for (const auto& [need, count] : tick_.demand) {
    if (IsSubset(*need, have) && !ServedByLessSpecialized(provided, *need, have)) tasks += count;
  }
  const double ratio = TaskRatio(tasks, workers);
  if (ratio >= config_.lower_task_ratio) return;
  auto index =
      tick_.plan.LastRunning([&](const GroupPlan::Group& g) { return *g.capabilities == have; });
  if (!index) return;
  const std::string_view id = tick_.plan.groups()[*index].id;
  const bool at_min = tick_.plan.size() <= config_.min_replicas;
  const std::optional<Blocker> blocker = at_min ? std::nullopt : ShutdownBlocker(*index);
  const bool shut_down = !at_min && !blocker;
  std::string& out = shut_down ? tick_.NextChange() : tick_.notes.emplace_back();
  StrAppend(out, shut_down ? "shut down group '" : "kept group '", id, shut_down ? "' (" : "': ");
  AppendCountOf(out, tasks, "task");
  out.append(" for ");
  AppendCountOf(out, workers, "worker");
  StrAppend(out, " providing ", have, " = ", Num{ratio}, " < lower_task_ratio ",
            Num{config_.lower_task_ratio});
  if (at_min) {
    StrAppend(out, ", but min_replicas is ", config_.min_replicas);
  } else if (blocker) {
    out.append(", but ");
    AppendBlocker(out, *blocker);
  } else {
    out.push_back(')');
    tick_.plan.Shutdown(*index);
  }
}

// Each provided set is judged once per tick, so at most one group per set shuts down.
void Planner::ScaleDown() {
  std::vector<const CapabilitySet*> provided;
  for (const GroupPlan::Group& g : tick_.plan.groups()) {
    const bool seen = std::any_of(provided.begin(), provided.end(),
                                  [&](const CapabilitySet* p) { return *p == *g.capabilities; });
    if (!g.pending && !seen) provided.push_back(g.capabilities);
  }
  for (const CapabilitySet* have : provided) ConsiderShutdown(*have, provided);
}

void Planner::EnforceBounds() {
  while (tick_.plan.size() < config_.min_replicas) {
    const GroupPlan::Adapter* adapter = tick_.plan.AdapterFor({});
    if (adapter == nullptr) {
      StrAppend(tick_.notes.emplace_back(), "below min_replicas ", config_.min_replicas,
                ", but no adapter has room");
      return;
    }
    StrAppend(tick_.NextChange(), "start a group on adapter '", adapter->capacity->name,
              "' to reach min_replicas ", config_.min_replicas);
    tick_.plan.Start(*adapter, adapter->capacity->capabilities);
  }
  while (tick_.plan.size() > std::max(config_.max_replicas, config_.min_replicas)) {
    auto index = tick_.plan.LastRunning([](const GroupPlan::Group&) { return true; });
    if (!index) return;
    StrAppend(tick_.NextChange(), "shut down group '", tick_.plan.groups()[*index].id,
              "' to respect max_replicas ", config_.max_replicas);
    tick_.plan.Shutdown(*index);
  }
}

}  // namespace

CapabilityPolicy::CapabilityPolicy(CapabilityPolicyConfig config)
    : config_(config), implicit_adapter_{"default", config.max_replicas, 1, {}} {}

Decision CapabilityPolicy::Evaluate(const ScalingInput& input) {
  Tick tick{GroupPlan(input.groups, EffectiveAdapters(input, implicit_adapter_)),
            GroupTasks(input.tasks),
            {},
            {}};
  Planner planner(config_, tick);
  planner.ScaleUp();
  if (input.metrics_error || !CountTasks(input.tasks).valid) {
    tick.notes.push_back(
        "task counts are incomplete this tick (metrics error or a negative count), so no "
        "group shuts down");
  } else {
    planner.ScaleDown();
  }
  planner.EnforceBounds();

  Decision decision;
  const int current = static_cast<int>(input.groups.size());
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
    StrAppend(reason, "every capability set is within [lower_task_ratio ",
              Num{config_.lower_task_ratio}, ", upper_task_ratio ", Num{config_.upper_task_ratio},
              "] tasks per worker");
  }
  return decision;
}

}  // namespace gpuscale::scale
