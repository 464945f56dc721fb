#include "scale/ratio_policy.h"

#include <algorithm>
#include <string>

#include "scale/policy_util.h"

namespace gpuscale::scale {

namespace {

// What the task ratio says this tick. The decision is made first and the sentence built
// once from it, straight into the reason (a fleet tick evaluates 10,000 policies).
enum class Verdict { kAbove, kBelow, kBelowUntrusted, kBelowWouldFlap, kWithin };

struct Observation {
  long long tasks = 0;
  long long workers = 0;
  double ratio = 0;
  double after = 0;  // the ratio after removing a group; set for the kBelow* verdicts
};

void AppendWhy(std::string& out, Verdict verdict, const Observation& seen,
               const RatioPolicyConfig& config) {
  out.append(": ");
  AppendCountOf(out, seen.tasks, "task");
  out.append(" on ");
  AppendCountOf(out, seen.workers, "worker");
  StrAppend(out, " = ", Num{seen.ratio}, " tasks per worker");
  const Num upper{config.upper_task_ratio};
  switch (verdict) {
    case Verdict::kAbove:
      StrAppend(out, " > upper_task_ratio ", upper);
      break;
    case Verdict::kWithin:
      StrAppend(out, ", within [lower_task_ratio ", Num{config.lower_task_ratio},
                ", upper_task_ratio ", upper, "]");
      break;
    default:
      StrAppend(out, " < lower_task_ratio ", Num{config.lower_task_ratio});
      if (verdict == Verdict::kBelowUntrusted) {
        out.append(" but task counts are incomplete this tick, so no scale-in");
      } else if (verdict == Verdict::kBelowWouldFlap) {
        StrAppend(out, " but removing a group would give ", Num{seen.after}, " > upper_task_ratio ",
                  upper);
      }
      break;
  }
}

}  // namespace

Decision RatioPolicy::Evaluate(const ScalingInput& input) {
  const int current = input.current_replicas;
  Observation seen;
  long long per_group = config_.workers_per_group;
  if (input.groups.empty()) {
    seen.workers = static_cast<long long>(std::max(current, 0)) * config_.workers_per_group;
  } else {
    for (const WorkerGroup& g : input.groups) seen.workers += std::max(g.workers, 0);
    per_group = seen.workers / static_cast<long long>(input.groups.size());
  }
  const TaskTotal total = CountTasks(input.tasks);
  seen.tasks = total.tasks;
  seen.ratio = TaskRatio(total.tasks, seen.workers);
  Verdict verdict = Verdict::kWithin;
  if (seen.ratio > config_.upper_task_ratio) {
    verdict = Verdict::kAbove;
  } else if (seen.ratio < config_.lower_task_ratio && current > 0) {
    seen.after = TaskRatio(total.tasks, seen.workers - per_group);
    verdict = input.metrics_error || !total.valid     ? Verdict::kBelowUntrusted
              : seen.after > config_.upper_task_ratio ? Verdict::kBelowWouldFlap
                                                      : Verdict::kBelow;
  }
  const int step = verdict == Verdict::kAbove ? 1 : verdict == Verdict::kBelow ? -1 : 0;
  Decision decision;
  if (!total.valid) decision.details.push_back("a task count is negative; counted as 0");
  const int unclamped = current + step;
  decision.desired_replicas = ClampReplicas(unclamped, config_.min_replicas, config_.max_replicas);
  std::string& reason = decision.reason;
  reason.reserve(kReasonCapacity);
  AppendGroupChange(reason, current, decision.desired_replicas, false);
  AppendWhy(reason, verdict, seen, config_);
  if (decision.desired_replicas > unclamped) {
    StrAppend(reason, " (clamped to min_replicas ", config_.min_replicas, ')');
  } else if (decision.desired_replicas < unclamped) {
    StrAppend(reason, " (clamped to max_replicas ", config_.max_replicas, ')');
  }
  return decision;
}

}  // namespace gpuscale::scale
