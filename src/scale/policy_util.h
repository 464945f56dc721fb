// Helpers shared by the policy families: reading a metric into one number (with the
// "never scale down on missing data" rule made explicit), counting tasks, clamping to the
// replica bounds, and formatting numbers for reasons.
//
// Pure functions on values; thread-compatible.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scale/policy.h"

namespace gpuscale::scale {

// One metric as a policy sees it this tick.
struct MetricReading {
  // The aggregated value of the usable samples; nullopt when there is none.
  std::optional<double> value;
  // True when the value rests on complete data: the service value, or a valid sample from
  // every ready replica, and no metrics error this tick. Scale-in needs complete data.
  bool complete = false;
  // Why the reading is missing or incomplete ("metric absent", "2 of 3 ready replicas
  // reported", ...); empty when complete.
  std::string problem;
};

// A sample is usable when finite and not negative: the metrics policies scale on (queue
// lengths, utilization, latency, throughput) are never negative, so a negative value is a
// broken exporter, not a signal.
bool IsUsableSample(double value);

// Reads `name` from input.metrics. A service_value wins over per-replica samples; unusable
// samples are dropped (and make the reading incomplete).
MetricReading ReadMetric(const ScalingInput& input, const std::string& name,
                         Aggregation aggregation);

// Sum of queued + running over all demands. `valid` is false when a count is negative
// (treated as 0 and reported as missing data).
struct TaskTotal {
  long long tasks = 0;
  bool valid = true;
};
TaskTotal CountTasks(const std::vector<TaskDemand>& demands);
long long CountTasks(const TaskDemand& demand);  // queued + running, negatives as 0

// Clamps `desired` into [min_replicas, max_replicas]. Parsers reject min > max; should such
// bounds arrive anyway, min wins (availability before cost) and negatives count as 0.
int ClampReplicas(int desired, int min_replicas, int max_replicas);

// "{a, b}" for a capability set, "{}" when empty.
std::string FormatCapabilities(const CapabilitySet& capabilities);

// Shortest readable form of a number: 12.5, 10, 0.333.
std::string FormatNumber(double value);

// "scale out 2 -> 3", "scale in 3 -> 2" or "hold at 3".
std::string FormatChange(int current, int desired);

// FormatChange for group-based policies: "rebalance at 3" when actions keep the count.
std::string FormatGroupChange(int current, int desired, bool has_actions);

// "1 task", "3 tasks": counts in reasons read as sentences.
std::string CountOf(long long count, std::string_view noun);

// Appending forms of the formatters above: the same text, written into `out` without
// temporaries or format-string parsing. A fleet-wide tick builds ~10,000 reasons
// (bench/policy_tick_bench.cc), so policies assemble each sentence in one buffer.
void AppendNumber(std::string& out, double value);  // FormatNumber's text
void AppendCapabilities(std::string& out, const CapabilitySet& capabilities);
void AppendCountOf(std::string& out, long long count, std::string_view noun);
void AppendGroupChange(std::string& out, int current, int desired, bool has_actions);

// Capacity reserved up front for a reason sentence: most fit (bench reasons are ~110
// characters), so building one costs one allocation.
inline constexpr size_t kReasonCapacity = 192;

// A number that StrAppend writes as FormatNumber does (a plain double would be ambiguous
// with the integer parts, which are written in full).
struct Num {
  double value;
};

namespace internal {
inline void AppendPart(std::string& out, std::string_view text) { out.append(text); }
inline void AppendPart(std::string& out, char c) { out.push_back(c); }
void AppendPart(std::string& out, long long value);
inline void AppendPart(std::string& out, int value) {
  AppendPart(out, static_cast<long long>(value));
}
inline void AppendPart(std::string& out, Num number) { AppendNumber(out, number.value); }
inline void AppendPart(std::string& out, const CapabilitySet& capabilities) {
  AppendCapabilities(out, capabilities);
}
}  // namespace internal

// Appends every part in order: text as-is, integers in decimal, Num as FormatNumber,
// capability sets as FormatCapabilities.
template <typename... Parts>
void StrAppend(std::string& out, const Parts&... parts) {
  (internal::AppendPart(out, parts), ...);
}

// Tasks per worker; +inf when tasks exist and no worker does, 0 when neither exists.
double TaskRatio(long long tasks, long long workers);

// True when every capability in `need` is in `have` (Scaler's scaling policies: a worker
// serves a task when the task's set is a subset of the worker's).
bool IsSubset(const CapabilitySet& need, const CapabilitySet& have);

// A working view of the worker groups that an adapter-aware policy (capability,
// fixed_elastic) edits while it decides: a start appends a pending group, a shutdown
// removes a running one, and each edit is recorded as a GroupAction for the Decision.
// Groups and adapters point into the ScalingInput and the policy's own adapters, which must
// outlive the plan (one Evaluate call); nothing is copied until an action is recorded.
class GroupPlan {
 public:
  struct Group {
    std::string_view id;  // empty for a pending start
    std::string_view adapter;
    const CapabilitySet* capabilities = nullptr;  // never null
    int workers = 1;
    bool pending = false;  // started by this plan
  };
  struct Adapter {
    const AdapterCapacity* capacity = nullptr;  // never null
    bool any_capability = false;  // an implicit adapter that provides whatever is asked
  };

  GroupPlan(const std::vector<WorkerGroup>& groups, std::vector<Adapter> adapters);

  int size() const { return static_cast<int>(groups_.size()); }
  const std::vector<Group>& groups() const { return groups_; }
  const std::vector<Adapter>& adapters() const { return adapters_; }
  long long Workers() const;
  // Workers of groups able to serve `need`, leaving out the group at `excluded`.
  long long CapableWorkers(const CapabilitySet& need,
                           std::optional<size_t> excluded = std::nullopt) const;
  int GroupsOn(std::string_view adapter) const;
  bool HasRoom(const Adapter& adapter) const;
  // The first adapter with room that provides `need`; nullptr when none.
  const Adapter* AdapterFor(const CapabilitySet& need) const;
  // REQUIRES: HasRoom(adapter).
  void Start(const Adapter& adapter, const CapabilitySet& need);
  // REQUIRES: index < size() and the group is not pending.
  void Shutdown(size_t index);
  // The last running (non-pending) group matching `keep`; nullopt when none.
  template <typename Pred>
  std::optional<size_t> LastRunning(Pred keep) const {
    for (size_t i = groups_.size(); i-- > 0;) {
      if (!groups_[i].pending && keep(groups_[i])) return i;
    }
    return std::nullopt;
  }
  std::vector<GroupAction> TakeActions() { return std::move(actions_); }

 private:
  std::vector<Group> groups_;
  std::vector<Adapter> adapters_;
  std::vector<GroupAction> actions_;
  // Pointer-stable storage for merged start sets; a list, because an empty std::deque
  // still allocates and most ticks start nothing.
  std::list<CapabilitySet> started_capabilities_;
};

}  // namespace gpuscale::scale
