#include "scale/target_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

namespace gpuscale::scale {

TargetPolicy::TargetPolicy(TargetPolicyConfig config)
    : config_(std::move(config)),
      limiter_(config_.behavior),
      consecutive_failures_(config_.metrics.size(), 0) {}

std::vector<std::string> TargetPolicy::MetricNames() const {
  std::vector<std::string> names;
  for (const TargetMetric& m : config_.metrics) names.push_back(m.name);
  return names;
}

std::vector<std::pair<std::string, std::string>> TargetPolicy::PromQueries() const {
  std::vector<std::pair<std::string, std::string>> queries;
  for (const TargetMetric& m : config_.metrics) {
    if (!m.query.empty()) queries.emplace_back(m.name, m.query);
  }
  return queries;
}

Decision TargetPolicy::Evaluate(const ScalingInput& input) {
  const int current = std::max(0, input.current_replicas);
  Readings readings = ReadAll(input, current);
  if (readings.any_active) last_active_seconds_ = input.now.count();
  Decision decision;
  if (std::optional<Decision> zero = ScaleToOrFromZero(input, current, readings)) {
    decision = std::move(*zero);
  } else {
    decision = RunHpa(input, current, readings);
  }
  // Defensive bounds: a config with min > max (rejected by the parser) keeps max.
  const int hi = std::max(0, config_.max_replicas);
  const int lo = std::min(std::max(0, config_.min_replicas), hi);
  decision.desired_replicas = std::clamp(decision.desired_replicas, lo, hi);
  for (size_t i = 0; i < readings.metrics.size(); ++i) {
    TargetReading& r = readings.metrics[i];
    std::optional<double> value;
    if (r.status == TargetReading::Status::kOk) value = r.value;
    decision.inputs.push_back({config_.metrics[i].name, value, config_.metrics[i].target});
    decision.details.push_back(std::move(r.note));
  }
  return decision;
}

TargetPolicy::Readings TargetPolicy::ReadAll(const ScalingInput& input, int current) {
  Readings out;
  for (size_t i = 0; i < config_.metrics.size(); ++i) {
    const TargetMetric& metric = config_.metrics[i];
    const auto it = input.metrics.find(metric.name);
    TargetReading r = ReadMetric(metric, it == input.metrics.end() ? nullptr : &it->second, current,
                                 config_.tolerance);
    if (r.status == TargetReading::Status::kOk) {
      consecutive_failures_[i] = 0;
      out.any_active = out.any_active || r.value > metric.activation_threshold;
    } else if (r.status == TargetReading::Status::kFailed) {
      ++consecutive_failures_[i];
      // KEDA pkg/fallback: the fallback applies once failures exceed the threshold.
      if (config_.fallback && consecutive_failures_[i] > config_.fallback->failure_threshold) {
        r.status = TargetReading::Status::kOk;
        r.proposal = config_.fallback->replicas;
        r.note += fmt::format(
            "; {} consecutive failures > failure_threshold {}: fallback "
            "replicas {}",
            consecutive_failures_[i], config_.fallback->failure_threshold,
            config_.fallback->replicas);
        out.fallback_active = true;
      } else {
        out.any_missing = true;
      }
    } else {
      out.any_missing = true;
    }
    out.metrics.push_back(std::move(r));
    const TargetReading& last = out.metrics.back();
    if (last.status == TargetReading::Status::kOk &&
        (out.winner < 0 || last.proposal > out.metrics[out.winner].proposal)) {
      out.winner = static_cast<int>(i);
    }
  }
  return out;
}

// KEDA's scale executor (keda pkg/scaling/executor): it alone moves a service between zero
// and one replica; HPA never sees zero. Returns nullopt when the HPA part should decide.
std::optional<Decision> TargetPolicy::ScaleToOrFromZero(const ScalingInput& input, int current,
                                                        const Readings& readings) {
  if (config_.min_replicas > 0) return std::nullopt;
  const double now = input.now.count();
  const bool poll_due =
      !last_poll_seconds_ || now - *last_poll_seconds_ >= config_.polling_interval_seconds;
  if (poll_due) last_poll_seconds_ = now;
  if (current == 0) return FromZero(now, poll_due, readings);
  if (!poll_due || readings.any_active || readings.any_missing || readings.fallback_active ||
      input.metrics_error) {
    return std::nullopt;
  }
  const double idle_seconds =
      last_active_seconds_ ? now - *last_active_seconds_ : std::numeric_limits<double>::infinity();
  if (idle_seconds < config_.cooldown_period_seconds) return std::nullopt;
  Decision d;
  d.desired_replicas = 0;
  d.reason = last_active_seconds_
                 ? fmt::format(
                       "scale {} -> 0: every metric at or below its "
                       "activation_threshold for {:g} s (cooldown_period_seconds {:g})",
                       current, idle_seconds, config_.cooldown_period_seconds)
                 : fmt::format(
                       "scale {} -> 0: no metric has been above its "
                       "activation_threshold since the policy started",
                       current);
  return d;
}

Decision TargetPolicy::FromZero(double now, bool poll_due, const Readings& readings) const {
  const int hi = std::max(0, config_.max_replicas);
  Decision d;
  if (!poll_due) {
    d.reason = fmt::format(
        "stay at 0: next activation check in {:g} s "
        "(polling_interval_seconds {:g})",
        *last_poll_seconds_ + config_.polling_interval_seconds - now,
        config_.polling_interval_seconds);
  } else if (readings.any_active) {
    d.desired_replicas = std::min(1, hi);
    d.reason = fmt::format("activate 0 -> {}: {} is above its activation_threshold",
                           d.desired_replicas, readings.metrics[readings.winner].note);
  } else if (readings.fallback_active) {
    d.desired_replicas = std::min(config_.fallback->replicas, hi);
    d.reason = fmt::format("scale 0 -> {}: metrics keep failing, using fallback replicas",
                           d.desired_replicas);
  } else {
    d.reason = "stay at 0: no metric is above its activation_threshold";
  }
  return d;
}

// Why a tick with failed or missing metrics does not scale down. A fallback's count does not
// lower the count on a tick with metrics_error either, and in the daemon every failed read
// sets it: the message says so, since the fallback's note shows its lower count.
std::string TargetPolicy::HeldByMissingMetrics(const Readings& readings, bool metrics_error) const {
  if (readings.any_missing) return "a metric is missing or failed, so no scale-down";
  if (metrics_error && readings.fallback_active) {
    return fmt::format(
        "metrics could not be read this tick, so no scale-down: while reads fail, fallback "
        "replicas {} only raise the count",
        config_.fallback->replicas);
  }
  return "metrics could not be read this tick, so no scale-down";
}

// HPA reconcileAutoscaler: bounds first, then metrics -> behavior.
Decision TargetPolicy::RunHpa(const ScalingInput& input, int current, const Readings& readings) {
  const int hi = std::max(0, config_.max_replicas);
  // KEDA runs the HPA with minReplicas max(min_replicas, 1).
  const int hpa_min = std::min(std::max(config_.min_replicas, 1), hi);
  Decision d;
  if (current > hi) {
    d.desired_replicas = hi;
    d.reason = fmt::format("scale {} -> {}: above max_replicas {}", current, hi, hi);
  } else if (current < hpa_min) {
    d.desired_replicas = hpa_min;
    d.reason = fmt::format("scale {} -> {}: below min_replicas {}", current, hpa_min, hpa_min);
  } else if (readings.winner < 0) {
    d.desired_replicas = current;
    d.reason = fmt::format("hold at {}: no usable metric this tick", current);
    return d;  // HPA skips the tick on metric errors: no recommendation is recorded
  } else {
    const std::string& why = readings.metrics[readings.winner].note;
    int recommendation = readings.metrics[readings.winner].proposal;
    std::string held_by;
    if ((readings.any_missing || input.metrics_error) && recommendation < current) {
      recommendation = current;  // HPA: invalid metrics veto a scale-down
      held_by = HeldByMissingMetrics(readings, input.metrics_error);
    }
    const BehaviorOutcome out = limiter_.Normalize(input.now, current, recommendation, hpa_min, hi);
    if (held_by.empty()) held_by = out.limit;
    d.desired_replicas = out.replicas;
    d.reason = d.desired_replicas == current
                   ? fmt::format("hold at {}: {}", current, why)
                   : fmt::format("scale {} -> {}: {}", current, d.desired_replicas, why);
    if (!held_by.empty()) d.reason += "; " + held_by;
  }
  if (d.desired_replicas != current) limiter_.RecordScale(input.now, current, d.desired_replicas);
  return d;
}

}  // namespace gpuscale::scale
