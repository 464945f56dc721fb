#include "scale/kpa_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "scale/policy_util.h"

namespace gpuscale::scale {
namespace {

// ceil() that ignores floating-point dust (70.0000001 / 7 must stay 10).
int CeilCount(double x) {
  if (!(x > 0)) return 0;
  const double c = std::ceil(x - 1e-9);
  return c >= 1e9 ? 1'000'000'000 : static_cast<int>(c);
}

}  // namespace

std::optional<double> KpaPolicy::ReadConcurrency(const ScalingInput& input,
                                                 std::string* why) const {
  double total = 0;
  for (const std::string& name : config_.concurrency_metrics) {
    const auto it = input.metrics.find(name);
    if (it == input.metrics.end()) {
      *why = fmt::format("{} was not reported", name);
      return std::nullopt;
    }
    const MetricValue& value = it->second;
    if (value.service_value) {
      if (!IsUsableSample(*value.service_value)) {
        *why = fmt::format("{} has invalid value {}", name, *value.service_value);
        return std::nullopt;
      }
      total += *value.service_value;
      continue;
    }
    // Replicas that exist but report nothing are missing data, not zero demand.
    if (value.per_replica.empty() && input.current_replicas > 0) {
      *why = fmt::format("{}: no ready replica reported a value", name);
      return std::nullopt;
    }
    int usable = 0;
    for (double v : value.per_replica) {
      if (IsUsableSample(v)) total += v, ++usable;
    }
    if (usable == 0 && !value.per_replica.empty()) {
      *why = fmt::format("{}: every per-replica value is invalid", name);
      return std::nullopt;
    }
  }
  return total;
}

// Knative averages per-second buckets over the window; we average the ticks that fall in
// (now - window, now], which is the same for evenly spaced ticks.
double KpaPolicy::WindowAverage(double now, double window_seconds) const {
  double sum = 0;
  int n = 0;
  for (const Sample& s : samples_) {
    if (s.at_seconds > now - window_seconds) sum += s.concurrency, ++n;
  }
  return n > 0 ? sum / n : samples_.back().concurrency;
}

// Knative autoscaler.Scale's panic bookkeeping. Returns the pod count to ask for.
int KpaPolicy::UpdatePanic(double now, int ready, int stable_pods, int panic_pods,
                           double panic_demand) {
  const bool over = panic_demand / ready >= config_.panic_threshold_percentage / 100.0;
  if (over) {
    panic_since_seconds_ = now;  // entering, or extending, panic mode
  } else if (panic_since_seconds_ && *panic_since_seconds_ + config_.stable_window_seconds < now) {
    panic_since_seconds_.reset();  // the surge has reached the stable window
    max_panic_pods_ = 0;
  }
  if (!panic_since_seconds_) return stable_pods;
  // In panic the larger window wins and the count never goes down.
  max_panic_pods_ = std::max({max_panic_pods_, stable_pods, panic_pods});
  return max_panic_pods_;
}

int KpaPolicy::ApplyScaleToZero(double now, int current, int desired, std::string* reason) {
  if (desired > 0 || config_.min_replicas > 0 || current == 0) {
    zero_since_seconds_.reset();
    return desired;
  }
  if (!zero_since_seconds_) zero_since_seconds_ = now;
  const double waited = now - *zero_since_seconds_;
  if (waited >= config_.scale_to_zero_grace_period_seconds) return 0;
  *reason += fmt::format(
      "; keeping 1 replica for {:g} s more (scale_to_zero_grace_period_"
      "seconds {:g})",
      config_.scale_to_zero_grace_period_seconds - waited,
      config_.scale_to_zero_grace_period_seconds);
  return 1;
}

// Knative autoscaler.Scale without the metric plumbing: the window averages -> pod count.
int KpaPolicy::Recommend(double now, int ready_replicas, std::string* load) {
  const double panic_window =
      config_.stable_window_seconds * config_.panic_window_percentage / 100.0;
  const double stable = WindowAverage(now, config_.stable_window_seconds);
  const double panic = WindowAverage(now, panic_window);
  const int ready = std::max(1, ready_replicas);  // Knative: at least one, even from zero
  const double target = config_.target_concurrency * config_.target_utilization_percentage / 100.0;
  const int max_up = CeilCount(config_.max_scale_up_rate * ready);
  const int max_down = static_cast<int>(std::floor(ready / config_.max_scale_down_rate));
  const int panic_demand = CeilCount(panic / target);
  const int stable_pods = std::clamp(CeilCount(stable / target), max_down, max_up);
  const int panic_pods = std::clamp(panic_demand, max_down, max_up);
  *load = fmt::format(
      "concurrency {:.3g} over the {:g} s stable window, {:.3g} over the {:g} s panic window, "
      "target {:g} per replica",
      stable, config_.stable_window_seconds, panic, panic_window, target);
  return UpdatePanic(now, ready, stable_pods, panic_pods, panic_demand);
}

Decision KpaPolicy::Evaluate(const ScalingInput& input) {
  const double now = input.now.count();
  const int current = std::max(0, input.current_replicas);
  const int hi = std::max(0, config_.max_replicas);
  const int lo = std::min(std::max(0, config_.min_replicas), hi);
  Decision d;
  std::string why;
  const std::optional<double> concurrency = ReadConcurrency(input, &why);
  // Per ready replica, against the concurrency each replica is meant to carry.
  const double per_replica_target =
      config_.target_concurrency * config_.target_utilization_percentage / 100;
  d.inputs.push_back({"concurrency per replica", std::nullopt, per_replica_target});
  if (!concurrency) {
    d.desired_replicas = std::clamp(current, lo, hi);
    d.reason = fmt::format("hold at {}: no concurrency data ({})", current, why);
    return d;
  }
  samples_.push_back({now, *concurrency});
  while (samples_.front().at_seconds <= now - config_.stable_window_seconds) samples_.pop_front();
  std::string load;
  const int recommended = Recommend(now, input.ready_replicas, &load);
  std::string zero_note;
  const int desired = ApplyScaleToZero(now, current, recommended, &zero_note);
  d.desired_replicas = std::clamp(desired, lo, hi);
  const std::string head = d.desired_replicas == current
                               ? fmt::format("hold at {}", current)
                               : fmt::format("scale {} -> {}", current, d.desired_replicas);
  d.reason = panicking() ? fmt::format("{} (panic mode: no scale-down): {}", head, load)
                         : fmt::format("{}: {}", head, load);
  d.reason += zero_note;
  d.inputs.back().value = *concurrency / std::max(1, input.ready_replicas);
  if (d.desired_replicas != desired) {
    d.details.push_back(fmt::format("recommendation {} clamped to [{}, {}]", desired, lo, hi));
  }
  return d;
}

}  // namespace gpuscale::scale
