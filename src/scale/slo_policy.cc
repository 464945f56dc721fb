#include "scale/slo_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "scale/metric_names.h"
#include "scale/policy_util.h"

namespace gpuscale::scale {
namespace {

namespace names = metric_names;

// The short rate window (30 s) and the long one (2 min) are centred 45 s apart.
constexpr double kTrendBaseSeconds = 45;
constexpr double kBacklogDrainSeconds = 30;
constexpr double kBurstWindowSeconds = 30;
// A violation ratio this many times the allowed share means overload, not noise.
constexpr double kOverloadFactor = 3;
constexpr Seconds kCutCooldown{120};

std::optional<double> ServiceValue(const ScalingInput& input, std::string_view name) {
  auto it = input.metrics.find(std::string(name));
  if (it == input.metrics.end() || !it->second.service_value) return std::nullopt;
  double v = *it->second.service_value;
  return IsUsableSample(v) ? std::optional<double>(v) : std::nullopt;
}

std::optional<double> SumPerReplica(const ScalingInput& input, std::string_view name) {
  MetricReading r = ReadMetric(input, std::string(name), Aggregation::kSum);
  return r.value;
}

}  // namespace

SloPolicy::SloPolicy(SloPolicyConfig config)
    : config_(config), capacity_rps_(std::max(config.initial_capacity_rps, 1e-3)) {}

std::optional<SloPolicy::Observation> SloPolicy::Observe(const ScalingInput& input) {
  if (input.metrics_error) return std::nullopt;
  auto waiting = SumPerReplica(input, names::kWaiting);
  auto running = SumPerReplica(input, names::kRunning);
  if (!waiting || !running) return std::nullopt;
  Observation obs;
  obs.waiting = *waiting;
  obs.in_system = *waiting + *running;
  if (last_in_system_ && input.now > last_in_system_->first) {
    double growth =
        (obs.in_system - last_in_system_->second) / (input.now - last_in_system_->first).count();
    growth_rps_ = 0.5 * growth_rps_ + 0.5 * growth;
  }
  last_in_system_ = {input.now, obs.in_system};
  // What arrives either finishes or piles up in the system.
  if (auto done = ServiceValue(input, names::kSuccessRate30s)) {
    obs.rate_short = std::max(0.0, *done + growth_rps_);
  }
  if (auto done = ServiceValue(input, names::kSuccessRate2m)) obs.rate_long = *done;
  auto ttft = ServiceValue(input, names::kTtftViolationRatio);
  auto tpot = ServiceValue(input, names::kTpotViolationRatio);
  if (ttft || tpot) obs.violation = std::max(ttft.value_or(0), tpot.value_or(0));
  return obs;
}

void SloPolicy::LearnCapacity(const Observation& obs, int ready, Seconds now) {
  if (!config_.learn_capacity || ready <= 0 || !obs.rate_short || !obs.violation) return;
  double per_replica = *obs.rate_short / ready;
  double allowed = 1 - config_.target_attainment;
  bool cooled = !last_cut_ || now - *last_cut_ >= kCutCooldown;
  if (*obs.violation > kOverloadFactor * allowed) {
    // Only load near capacity explains a violation; at light load it is a transient
    // (cold-start backlog) and must not teach a low capacity. One cut per cooldown: the
    // violation window lags the cut by a minute.
    if (cooled && per_replica >= 0.6 * capacity_rps_) {
      capacity_rps_ = std::max(0.9 * capacity_rps_, 0.25 * config_.initial_capacity_rps);
      last_cut_ = now;
    }
  } else if (*obs.violation <= allowed / 4 && cooled) {
    // The SLO held at this load: the capacity is at least that, and probably a bit more.
    if (per_replica > capacity_rps_)
      capacity_rps_ = per_replica;
    else if (per_replica > 0.7 * capacity_rps_)
      capacity_rps_ *= 1.005;
  }
}

int SloPolicy::Need(const Observation& obs, double* forecast) const {
  double short_rate = *obs.rate_short;
  double long_rate = obs.rate_long.value_or(short_rate);
  double base = std::max(short_rate, long_rate);
  double trend = std::max(0.0, (short_rate - long_rate) / kTrendBaseSeconds);
  double f = base + trend * config_.forecast_horizon.count() +
             config_.burst_z * std::sqrt(base / kBurstWindowSeconds) +
             obs.waiting / kBacklogDrainSeconds;
  *forecast = f;
  double per_replica = capacity_rps_ * config_.target_utilization;
  return static_cast<int>(std::ceil(f / per_replica - 1e-9));
}

Decision SloPolicy::Evaluate(const ScalingInput& input) {
  const int current = input.current_replicas;
  auto clamp = [&](int n) { return ClampReplicas(n, config_.min_replicas, config_.max_replicas); };
  auto obs = Observe(input);
  if (!obs || !obs->rate_short) {
    return {clamp(current),
            fmt::format(
                "hold at {}: {}", current,
                input.metrics_error ? "metrics unavailable this tick" : "no arrival-rate data yet"),
            input.metric_errors,
            {}};
  }
  LearnCapacity(*obs, input.ready_replicas, input.now);
  double forecast = 0;
  int need = Need(*obs, &forecast);
  double allowed = 1 - config_.target_attainment;
  bool violating = obs->violation && *obs->violation > allowed;
  if (violating && obs->waiting > 0 && current == input.ready_replicas) {
    need = std::max(need, input.ready_replicas + 1);
  }
  need = clamp(need);
  while (!recent_needs_.empty() &&
         input.now - recent_needs_.front().first > config_.scale_down_delay) {
    recent_needs_.pop_front();
  }
  recent_needs_.emplace_back(input.now, need);
  std::string why = fmt::format(
      "forecast {} req/s over {} s (now {}), capacity {} req/s per replica at the SLO, "
      "violations {}",
      FormatNumber(forecast), FormatNumber(config_.forecast_horizon.count()),
      FormatNumber(*obs->rate_short), FormatNumber(capacity_rps_),
      obs->violation ? FormatNumber(*obs->violation) : std::string("n/a"));
  if (need >= current) {
    return {need, fmt::format("{}: {} -> need {}", FormatChange(current, need), why, need), {}, {}};
  }
  return ScaleDown(input, need, why);
}

Decision SloPolicy::ScaleDown(const ScalingInput& input, int need, std::string why) {
  const int current = input.current_replicas;
  int held = need;
  for (const auto& [t, n] : recent_needs_) held = std::max(held, n);
  int desired = std::max(held, current - std::max(config_.max_scale_down_step, 1));
  desired = std::min(desired, current);
  std::string reason =
      desired == current
          ? fmt::format("hold at {}: need {} now, but {} within the last {} s ({})", current, need,
                        held, FormatNumber(config_.scale_down_delay.count()), why)
          : fmt::format("{}: {} -> need {}", FormatChange(current, desired), why, need);
  return {ClampReplicas(desired, config_.min_replicas, config_.max_replicas), reason, {}, {}};
}

}  // namespace gpuscale::scale
