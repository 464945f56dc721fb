#include "scale/hpa_behavior.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

namespace gpuscale::scale {

ScalingRules DefaultScaleUpRules() {
  return ScalingRules{
      .stabilization_window_seconds = 0,
      .select_policy = SelectPolicy::kMax,
      .policies = {{ScalingPolicyType::kPercent, 100, 15}, {ScalingPolicyType::kPods, 4, 15}}};
}

ScalingRules DefaultScaleDownRules() {
  return ScalingRules{.stabilization_window_seconds = 300,
                      .select_policy = SelectPolicy::kMax,
                      .policies = {{ScalingPolicyType::kPercent, 100, 15}}};
}

Behavior DefaultBehavior() { return Behavior{DefaultScaleUpRules(), DefaultScaleDownRules()}; }

BehaviorOutcome BehaviorLimiter::Normalize(Seconds now, int current, int recommendation,
                                           int min_replicas, int max_replicas) {
  const double t = now.count();
  Prune(t);
  BehaviorOutcome out;
  out.stabilized = Stabilize(t, current, recommendation, &out.limit);
  int desired = out.stabilized;
  // Rate limits, then bounds (HPA convertDesiredReplicasWithBehaviorRate). A limit that
  // would move against the wanted direction is clamped to `current`.
  if (desired > current) {
    const int rate_limit = std::max(ScaleUpLimit(t, current), current);
    const int allowed = std::min(max_replicas, rate_limit);
    if (desired > allowed) {
      out.limit = rate_limit < max_replicas
                      ? fmt::format("scale-up rate policy allows at most {} now", allowed)
                      : fmt::format("max_replicas is {}", max_replicas);
      desired = allowed;
    }
  } else if (desired < current) {
    const int rate_limit = std::min(ScaleDownLimit(t, current), current);
    const int allowed = std::max(min_replicas, rate_limit);
    if (desired < allowed) {
      out.limit = rate_limit > min_replicas
                      ? fmt::format("scale-down rate policy allows at least {} now", allowed)
                      : fmt::format("min_replicas is {}", min_replicas);
      desired = allowed;
    }
  }
  out.replicas = desired;
  return out;
}

// HPA stabilizeRecommendationWithBehaviors: the result moves from `current` only as far as
// every recommendation of the scale-up window (lowest) or scale-down window (highest) agrees.
int BehaviorLimiter::Stabilize(double now, int current, int recommendation, std::string* limit) {
  if (!initialized_) {
    // HPA maybeInitScaleDownStabilizationWindow: a fresh controller treats the current count
    // as a recent recommendation, so it does not scale down before a full window.
    recommendations_.push_back({now, current});
    initialized_ = true;
  }
  const double up_cutoff = now - behavior_.scale_up.stabilization_window_seconds;
  const double down_cutoff = now - behavior_.scale_down.stabilization_window_seconds;
  int up_floor = recommendation;
  int down_ceiling = recommendation;
  for (const TimedValue& rec : recommendations_) {
    if (rec.at_seconds > up_cutoff) up_floor = std::min(up_floor, rec.value);
    if (rec.at_seconds > down_cutoff) down_ceiling = std::max(down_ceiling, rec.value);
  }
  const int result = std::min(std::max(current, up_floor), down_ceiling);
  recommendations_.push_back({now, recommendation});
  if (recommendation > current && result < recommendation) {
    *limit = fmt::format(
        "scale-up stabilization window ({:g} s) holds the lowest recent "
        "recommendation {}",
        behavior_.scale_up.stabilization_window_seconds, result);
  } else if (recommendation < current && result > recommendation) {
    *limit = fmt::format(
        "scale-down stabilization window ({:g} s) holds the highest recent "
        "recommendation {}",
        behavior_.scale_down.stabilization_window_seconds, result);
  }
  return result;
}

int BehaviorLimiter::ChangeWithin(const std::vector<TimedValue>& events, double now,
                                  double period_seconds) const {
  int change = 0;
  for (const TimedValue& e : events) {
    if (e.at_seconds > now - period_seconds) change += e.value;
  }
  return change;
}

// HPA calculateScaleUpLimitWithScalingRules. kMax picks the policy allowing the largest
// count, kMin the smallest; the period's starting count undoes changes made inside it.
int BehaviorLimiter::ScaleUpLimit(double now, int current) const {
  const ScalingRules& rules = behavior_.scale_up;
  if (rules.select_policy == SelectPolicy::kDisabled) return current;
  const bool pick_min = rules.select_policy == SelectPolicy::kMin;
  long long result = pick_min ? LLONG_MAX : LLONG_MIN;
  for (const ScalingPolicy& p : rules.policies) {
    const long long start = static_cast<long long>(current) -
                            ChangeWithin(scale_up_events_, now, p.period_seconds) +
                            ChangeWithin(scale_down_events_, now, p.period_seconds);
    // Percent rounds up so that a small service can always grow by at least one replica.
    const long long proposed = p.type == ScalingPolicyType::kPods
                                   ? start + p.value
                                   : static_cast<long long>(std::ceil(static_cast<double>(start) *
                                                                      (1.0 + p.value / 100.0)));
    result = pick_min ? std::min(result, proposed) : std::max(result, proposed);
  }
  return static_cast<int>(std::clamp<long long>(result, INT_MIN, INT_MAX));
}

// HPA calculateScaleDownLimitWithBehaviors: the mirror image; Percent truncates.
int BehaviorLimiter::ScaleDownLimit(double now, int current) const {
  const ScalingRules& rules = behavior_.scale_down;
  if (rules.select_policy == SelectPolicy::kDisabled) return current;
  const bool pick_min = rules.select_policy == SelectPolicy::kMin;
  long long result = pick_min ? LLONG_MIN : LLONG_MAX;
  for (const ScalingPolicy& p : rules.policies) {
    const long long start = static_cast<long long>(current) -
                            ChangeWithin(scale_up_events_, now, p.period_seconds) +
                            ChangeWithin(scale_down_events_, now, p.period_seconds);
    const long long proposed =
        p.type == ScalingPolicyType::kPods
            ? start - p.value
            : static_cast<long long>(static_cast<double>(start) * (1.0 - p.value / 100.0));
    result = pick_min ? std::max(result, proposed) : std::min(result, proposed);
  }
  return static_cast<int>(std::clamp<long long>(result, INT_MIN, INT_MAX));
}

void BehaviorLimiter::RecordScale(Seconds now, int from, int to) {
  if (to > from) scale_up_events_.push_back({now.count(), to - from});
  if (to < from) scale_down_events_.push_back({now.count(), from - to});
}

// Drops history no window or period can see any more, so memory stays bounded.
void BehaviorLimiter::Prune(double now) {
  double horizon = std::max(behavior_.scale_up.stabilization_window_seconds,
                            behavior_.scale_down.stabilization_window_seconds);
  for (const ScalingRules* rules : {&behavior_.scale_up, &behavior_.scale_down}) {
    for (const ScalingPolicy& p : rules->policies) horizon = std::max(horizon, p.period_seconds);
  }
  const auto old = [&](const TimedValue& v) { return v.at_seconds <= now - horizon; };
  std::erase_if(recommendations_, old);
  std::erase_if(scale_up_events_, old);
  std::erase_if(scale_down_events_, old);
}

}  // namespace gpuscale::scale
