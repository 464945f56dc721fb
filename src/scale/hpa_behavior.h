// HPA scaling behavior: the stabilization windows and rate policies of Kubernetes'
// HorizontalPodAutoscaler (autoscaling/v2 `spec.behavior`), re-implemented after the upstream
// controller (kubernetes pkg/controller/podautoscaler/horizontal.go:
// stabilizeRecommendationWithBehaviors, convertDesiredReplicasWithBehaviorRate,
// calculateScaleUp/DownLimit...).
//
// BehaviorLimiter turns a raw recommendation (what the metrics ask for) into the replica count
// to apply: first the stabilization windows (scale-up takes the lowest recommendation of its
// window, scale-down the highest of its window), then the rate policies (`Pods` / `Percent`
// per period, combined by select_policy), then min/max. It remembers past recommendations and
// the scale events it allowed, so one instance serves one service.
//
// Pure (time is a parameter), not thread-safe; owned by the policy that uses it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace gpuscale::scale {

enum class ScalingPolicyType { kPods, kPercent };
// How several rate policies combine: kMax allows the largest change, kMin the smallest,
// kDisabled forbids changes in that direction (HPA's selectPolicy).
enum class SelectPolicy { kMax, kMin, kDisabled };

struct ScalingPolicy {
  ScalingPolicyType type = ScalingPolicyType::kPods;
  int value = 1;               // pods, or percent of the replicas at the period's start; > 0
  double period_seconds = 15;  // the window the change is counted over; > 0
};

struct ScalingRules {
  double stabilization_window_seconds = 0;  // >= 0
  SelectPolicy select_policy = SelectPolicy::kMax;
  std::vector<ScalingPolicy> policies;  // empty together with kDisabled only
};

struct Behavior {
  ScalingRules scale_up;
  ScalingRules scale_down;
};

// HPA defaults (Kubernetes docs, "Default Behavior"): scale-up without stabilization, at most
// max(+100 %, +4 pods) per 15 s; scale-down with a 300 s stabilization window, up to -100 %
// per 15 s.
ScalingRules DefaultScaleUpRules();
ScalingRules DefaultScaleDownRules();
Behavior DefaultBehavior();

// What Normalize decided and why, for the Decision's reason.
struct BehaviorOutcome {
  int replicas = 0;
  int stabilized = 0;  // the recommendation after the windows, before rates and bounds
  std::string limit;   // empty, or which rule held the change back (one phrase)
};

class BehaviorLimiter {
 public:
  explicit BehaviorLimiter(Behavior behavior) : behavior_(std::move(behavior)) {}

  // REQUIRES: 0 <= min_replicas <= max_replicas; now never decreases between calls.
  // Records `recommendation` in the window history and returns the count to apply.
  BehaviorOutcome Normalize(Seconds now, int current, int recommendation, int min_replicas,
                            int max_replicas);

  // Remembers an applied change so the rate policies count it (HPA's storeScaleEvent).
  void RecordScale(Seconds now, int from, int to);

  const Behavior& behavior() const { return behavior_; }

 private:
  struct TimedValue {
    double at_seconds;
    int value;
  };

  int Stabilize(double now, int current, int recommendation, std::string* limit);
  int ScaleUpLimit(double now, int current) const;
  int ScaleDownLimit(double now, int current) const;
  int ChangeWithin(const std::vector<TimedValue>& events, double now, double period_seconds) const;
  void Prune(double now);

  Behavior behavior_;
  bool initialized_ = false;
  std::vector<TimedValue> recommendations_;
  std::vector<TimedValue> scale_up_events_;    // replicas added, by time
  std::vector<TimedValue> scale_down_events_;  // replicas removed, by time
};

}  // namespace gpuscale::scale
