#include "scale/ratio_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

#include "scale/policy_util.h"

namespace gpuscale::scale {

// About 45 lines: counting, the three outcomes and the clamp note form one sentence.
Decision RatioPolicy::Evaluate(const ScalingInput& input) {
  const int current = input.current_replicas;
  long long workers = 0;
  long long per_group = config_.workers_per_group;
  if (input.groups.empty()) {
    workers = static_cast<long long>(std::max(current, 0)) * config_.workers_per_group;
  } else {
    for (const WorkerGroup& g : input.groups) workers += std::max(g.workers, 0);
    per_group = workers / static_cast<long long>(input.groups.size());
  }
  const TaskTotal total = CountTasks(input.tasks);
  const double ratio = TaskRatio(total.tasks, workers);
  const double upper = config_.upper_task_ratio;
  const double lower = config_.lower_task_ratio;
  // The sentence is assembled once the outcome is known (10,000 services per tick).
  std::string why = fmt::format("{} on {} = {} tasks per worker", CountOf(total.tasks, "task"),
                                CountOf(workers, "worker"), FormatNumber(ratio));
  int step = 0;
  if (ratio > upper) {
    step = 1;
    why += fmt::format(" > upper_task_ratio {}", FormatNumber(upper));
  } else if (ratio < lower && current > 0) {
    why += fmt::format(" < lower_task_ratio {}", FormatNumber(lower));
    const double after = TaskRatio(total.tasks, workers - per_group);
    if (input.metrics_error || !total.valid) {
      why += " but task counts are incomplete this tick, so no scale-in";
    } else if (after > upper) {
      why += fmt::format(" but removing a group would give {} > upper_task_ratio {}",
                         FormatNumber(after), FormatNumber(upper));
    } else {
      step = -1;
    }
  } else {
    why += fmt::format(", within [lower_task_ratio {}, upper_task_ratio {}]", FormatNumber(lower),
                       FormatNumber(upper));
  }
  Decision decision;
  if (!total.valid) decision.details.push_back("a task count is negative; counted as 0");
  const int unclamped = current + step;
  decision.desired_replicas = ClampReplicas(unclamped, config_.min_replicas, config_.max_replicas);
  if (decision.desired_replicas != unclamped) {
    why += decision.desired_replicas > unclamped
               ? fmt::format(" (clamped to min_replicas {})", config_.min_replicas)
               : fmt::format(" (clamped to max_replicas {})", config_.max_replicas);
  }
  decision.reason = fmt::format("{}: {}", FormatChange(current, decision.desired_replicas), why);
  return decision;
}

}  // namespace gpuscale::scale
