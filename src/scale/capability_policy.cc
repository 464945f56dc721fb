#include "scale/capability_policy.h"

#include <fmt/format.h>

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
// tasks that CPU groups can run (reference 002: idle GPU workers can go without affecting
// CPU work). The shutdown guards still protect the last capable group.
bool ServedByLessSpecialized(const std::vector<const CapabilitySet*>& provided,
                             const CapabilitySet& need, const CapabilitySet& have) {
  for (const CapabilitySet* other : provided) {
    if (*other != have && IsSubset(*other, have) && IsSubset(need, *other)) return true;
  }
  return false;
}

// One tick's working state: the plan plus the sentences that explain it.
struct Tick {
  GroupPlan plan;
  Demand demand;
  std::vector<std::string> changes;  // one per action, joined into the reason
  std::vector<std::string> notes;    // held-back changes, into details (first explains a hold)
};

class Planner {
 public:
  Planner(const CapabilityPolicyConfig& config, Tick& tick) : config_(config), tick_(tick) {}
  void ScaleUp();
  void ScaleDown();
  void EnforceBounds();

 private:
  std::optional<std::string> ShutdownBlocker(size_t index) const;
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
    const std::string why =
        capable == 0
            ? fmt::format("{} need {} and no group can serve them", CountOf(tasks, "task"),
                          FormatCapabilities(need))
            : fmt::format("{} need {} and {} give {} tasks per worker > upper_task_ratio {}",
                          CountOf(tasks, "task"), FormatCapabilities(need),
                          CountOf(capable, "capable worker"), FormatNumber(ratio),
                          FormatNumber(config_.upper_task_ratio));
    if (tick_.plan.size() >= config_.max_replicas) {
      tick_.notes.push_back(
          fmt::format("{}, but max_replicas {} is reached", why, config_.max_replicas));
      continue;
    }
    const GroupPlan::Adapter* adapter = tick_.plan.AdapterFor(need);
    if (adapter == nullptr) {
      tick_.notes.push_back(
          fmt::format("{}, but no adapter with room provides {}", why, FormatCapabilities(need)));
      continue;
    }
    tick_.changes.push_back(fmt::format("start a {} group on adapter '{}' ({})",
                                        FormatCapabilities(need), adapter->capacity->name, why));
    tick_.plan.Start(*adapter, need);
  }
}

std::optional<std::string> Planner::ShutdownBlocker(size_t index) const {
  const GroupPlan::Group& group = tick_.plan.groups()[index];
  for (const auto& [need_set, tasks] : tick_.demand) {
    const CapabilitySet& need = *need_set;
    if (tasks == 0 || !IsSubset(need, *group.capabilities)) continue;
    const long long after = tick_.plan.CapableWorkers(need, index);
    if (after == 0) {
      return fmt::format("it is the last group able to serve {} pending {} {}", tasks,
                         FormatCapabilities(need), tasks == 1 ? "task" : "tasks");
    }
    const double ratio = TaskRatio(tasks, after);
    if (ratio > config_.upper_task_ratio) {
      return fmt::format(
          "without it {} tasks would get {} tasks per worker > upper_task_ratio {}, an "
          "immediate scale-up",
          FormatCapabilities(need), FormatNumber(ratio), FormatNumber(config_.upper_task_ratio));
    }
  }
  return std::nullopt;
}

// Judges the groups that provide exactly `have`: their share of tasks per worker below
// lower_task_ratio shuts down their last running group, unless a guard objects.
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
  const std::string why =
      fmt::format("{} for {} providing {} = {} < lower_task_ratio {}", CountOf(tasks, "task"),
                  CountOf(workers, "worker"), FormatCapabilities(have), FormatNumber(ratio),
                  FormatNumber(config_.lower_task_ratio));
  const std::string_view id = tick_.plan.groups()[*index].id;
  if (tick_.plan.size() <= config_.min_replicas) {
    tick_.notes.push_back(
        fmt::format("kept group '{}': {}, but min_replicas is {}", id, why, config_.min_replicas));
  } else if (auto blocker = ShutdownBlocker(*index)) {
    tick_.notes.push_back(fmt::format("kept group '{}': {}, but {}", id, why, *blocker));
  } else {
    tick_.changes.push_back(fmt::format("shut down group '{}' ({})", id, why));
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
      tick_.notes.push_back(
          fmt::format("below min_replicas {}, but no adapter has room", config_.min_replicas));
      return;
    }
    tick_.changes.push_back(fmt::format("start a group on adapter '{}' to reach min_replicas {}",
                                        adapter->capacity->name, config_.min_replicas));
    tick_.plan.Start(*adapter, adapter->capacity->capabilities);
  }
  while (tick_.plan.size() > std::max(config_.max_replicas, config_.min_replicas)) {
    auto index = tick_.plan.LastRunning([](const GroupPlan::Group&) { return true; });
    if (!index) return;
    tick_.changes.push_back(fmt::format("shut down group '{}' to respect max_replicas {}",
                                        tick_.plan.groups()[*index].id, config_.max_replicas));
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
  std::string why;
  if (!tick.changes.empty()) {
    why = fmt::format("{}", fmt::join(tick.changes, "; "));
  } else if (!decision.details.empty()) {
    why = decision.details.front();
  } else {
    why = fmt::format(
        "every capability set is within [lower_task_ratio {}, upper_task_ratio {}] tasks per "
        "worker",
        FormatNumber(config_.lower_task_ratio), FormatNumber(config_.upper_task_ratio));
  }
  decision.reason = fmt::format(
      "{}: {}", FormatGroupChange(current, decision.desired_replicas, !decision.actions.empty()),
      why);
  return decision;
}

}  // namespace gpuscale::scale
