#include "scale/rules_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace gpuscale::scale {

std::string_view ComparatorName(Comparator comparator) {
  switch (comparator) {
    case Comparator::kLessThan:
      return "LESS_THAN";
    case Comparator::kLessThanOrEqual:
      return "LESS_THAN_OR_EQUAL";
    case Comparator::kGreaterThan:
      return "GREATER_THAN";
    case Comparator::kGreaterThanOrEqual:
      return "GREATER_THAN_OR_EQUAL";
  }
  return "GREATER_THAN";
}

std::string_view ComparatorSymbol(Comparator comparator) {
  switch (comparator) {
    case Comparator::kLessThan:
      return "<";
    case Comparator::kLessThanOrEqual:
      return "<=";
    case Comparator::kGreaterThan:
      return ">";
    case Comparator::kGreaterThanOrEqual:
      return ">=";
  }
  return ">";
}

bool Compare(double value, Comparator comparator, double threshold) {
  switch (comparator) {
    case Comparator::kLessThan:
      return value < threshold;
    case Comparator::kLessThanOrEqual:
      return value <= threshold;
    case Comparator::kGreaterThan:
      return value > threshold;
    case Comparator::kGreaterThanOrEqual:
      return value >= threshold;
  }
  return false;
}

namespace {

// The metric values for which a rule's condition holds, intersected with [0, inf) because
// unusable (negative) samples never reach a comparison.
struct ValueInterval {
  double lo = 0;
  double hi = std::numeric_limits<double>::infinity();
  bool lo_closed = true;
  bool hi_closed = false;
};

ValueInterval ConditionInterval(const ScalingRule& rule) {
  ValueInterval v;
  const double t = rule.threshold;
  const bool greater = rule.comparator == Comparator::kGreaterThan ||
                       rule.comparator == Comparator::kGreaterThanOrEqual;
  const bool closed = rule.comparator == Comparator::kGreaterThanOrEqual ||
                      rule.comparator == Comparator::kLessThanOrEqual;
  if (greater && t >= v.lo) {
    v.lo = t;
    v.lo_closed = closed;
  } else if (!greater) {
    v.hi = t;
    v.hi_closed = closed;
  }
  return v;
}

// Intersection of two intervals; nullopt when empty.
std::optional<ValueInterval> Intersect(const ValueInterval& a, const ValueInterval& b) {
  ValueInterval r;
  r.lo = std::max(a.lo, b.lo);
  r.lo_closed = (a.lo != r.lo || a.lo_closed) && (b.lo != r.lo || b.lo_closed);
  r.hi = std::min(a.hi, b.hi);
  r.hi_closed = (a.hi != r.hi || a.hi_closed) && (b.hi != r.hi || b.hi_closed);
  if (r.lo < r.hi || (r.lo == r.hi && r.lo_closed && r.hi_closed)) return r;
  return std::nullopt;
}

std::string DescribeInterval(const ValueInterval& v, const std::string& metric) {
  const std::string lo = fmt::format("{} {} ", FormatNumber(v.lo), v.lo_closed ? "<=" : "<");
  if (std::isinf(v.hi)) return fmt::format("{}{}", lo, metric);
  if (v.lo == v.hi) return fmt::format("{} = {}", metric, FormatNumber(v.lo));
  return fmt::format("{}{} {} {}", lo, metric, v.hi_closed ? "<=" : "<", FormatNumber(v.hi));
}

// Replica counts at which `rule` may fire: current + step stays inside its bounds.
std::pair<int, int> FiringCounts(const ScalingRule& rule, const RulesPolicyConfig& config) {
  const int lo = std::max(rule.min_replicas, config.min_replicas);
  const int hi = std::min(rule.max_replicas, config.max_replicas);
  return {lo - rule.step_size, hi - rule.step_size};
}

std::string DescribeRule(const ScalingRule& rule) {
  return fmt::format("'{}' ({} {} {} {}, step {:+d})", rule.name, rule.metric,
                     AggregationName(rule.aggregation), ComparatorSymbol(rule.comparator),
                     FormatNumber(rule.threshold), rule.step_size);
}

}  // namespace

std::vector<std::string> FindContradictions(const RulesPolicyConfig& config) {
  std::vector<std::string> warnings;
  for (const ScalingRule& out : config.rules) {
    if (out.step_size <= 0) continue;
    for (const ScalingRule& in : config.rules) {
      if (in.step_size >= 0 || in.metric != out.metric || in.source != out.source ||
          in.aggregation != out.aggregation) {
        continue;
      }
      auto overlap = Intersect(ConditionInterval(out), ConditionInterval(in));
      const auto [out_lo, out_hi] = FiringCounts(out, config);
      const auto [in_lo, in_hi] = FiringCounts(in, config);
      if (!overlap || std::max(out_lo, in_lo) > std::min(out_hi, in_hi)) continue;
      warnings.push_back(fmt::format(
          "warning: rules {} and {} contradict each other: both hold when {}; while both "
          "fire the scale-out wins, so the scale-in never applies there",
          DescribeRule(out), DescribeRule(in), DescribeInterval(*overlap, out.metric)));
    }
  }
  return warnings;
}

RulesPolicy::RulesPolicy(RulesPolicyConfig config)
    : config_(std::move(config)),
      last_trigger_(config_.rules.size()),
      warnings_(FindContradictions(config_)) {}

RulesPolicy::RuleCheck RulesPolicy::CheckRule(size_t index, const ScalingInput& input) const {
  const ScalingRule& rule = config_.rules[index];
  RuleCheck check{Outcome::kNoData, ReadMetric(input, rule.metric, rule.aggregation)};
  if (!check.reading.value) return check;
  check.outcome = Outcome::kNoMatch;
  if (!Compare(*check.reading.value, rule.comparator, rule.threshold)) return check;
  const int lo = std::max(rule.min_replicas, config_.min_replicas);
  const int hi = std::min(rule.max_replicas, config_.max_replicas);
  const int candidate = input.current_replicas + rule.step_size;
  const auto& last = last_trigger_[index];
  if (rule.step_size < 0 && !check.reading.complete) {
    check.outcome = Outcome::kMissingDataForScaleIn;
  } else if (candidate < lo || candidate > hi) {
    check.outcome = Outcome::kOutOfBounds;
  } else if (last && input.now - *last < rule.cooldown) {
    check.outcome = Outcome::kCooldown;
  } else {
    check.outcome = Outcome::kFired;
  }
  return check;
}

std::string RulesPolicy::Explain(size_t index, const RuleCheck& check,
                                 const ScalingInput& input) const {
  const ScalingRule& rule = config_.rules[index];
  if (check.outcome == Outcome::kNoData) {
    return fmt::format("rule '{}': {} has no usable value ({})", rule.name, rule.metric,
                       check.reading.problem);
  }
  const std::string observed =
      fmt::format("rule '{}': {} {} {}", rule.name, rule.metric, AggregationName(rule.aggregation),
                  FormatNumber(*check.reading.value));
  const std::string_view symbol = ComparatorSymbol(rule.comparator);
  const std::string threshold = FormatNumber(rule.threshold);
  if (check.outcome == Outcome::kNoMatch) {
    return fmt::format("{} is not {} {}", observed, symbol, threshold);
  }
  const std::string held = fmt::format("{} {} {}", observed, symbol, threshold);
  switch (check.outcome) {
    case Outcome::kMissingDataForScaleIn:
      return fmt::format("{} but {}, and gpuscale never scales in on incomplete data", held,
                         check.reading.problem);
    case Outcome::kOutOfBounds:
      return fmt::format(
          "{} but step {:+d} would give {} replicas, outside the rule's bounds [{}, {}]", held,
          rule.step_size, input.current_replicas + rule.step_size,
          std::max(rule.min_replicas, config_.min_replicas),
          std::min(rule.max_replicas, config_.max_replicas));
    case Outcome::kCooldown:
      return fmt::format(
          "{} but the rule's {}s cooldown holds it for another {}s", held,
          FormatNumber(rule.cooldown.count()),
          FormatNumber((rule.cooldown - (input.now - *last_trigger_[index])).count()));
    default:
      return fmt::format("{} (step {:+d})", held, rule.step_size);
  }
}

std::string RulesPolicy::HoldReason(int current, int desired, const std::vector<RuleCheck>& checks,
                                    const ScalingInput& input) const {
  if (desired > current) {
    return fmt::format("{}: raised to min_replicas {}", FormatChange(current, desired), desired);
  }
  if (desired < current) {
    return fmt::format("{}: lowered to max_replicas {}", FormatChange(current, desired), desired);
  }
  // The rule that came closest to firing explains the hold best.
  auto best = std::max_element(
      checks.begin(), checks.end(),
      [](const RuleCheck& a, const RuleCheck& b) { return a.outcome < b.outcome; });
  if (best == checks.end()) {
    return fmt::format("{}: no rules configured", FormatChange(current, desired));
  }
  const char* prefix = best->outcome == Outcome::kNoMatch ? "no rule matched; " : "";
  return fmt::format("{}: {}{}", FormatChange(current, desired), prefix,
                     Explain(static_cast<size_t>(best - checks.begin()), *best, input));
}

// Longer than 40 lines by a little: the combine step, the opposite-direction note and the
// reason are one decision and read best together.
Decision RulesPolicy::Evaluate(const ScalingInput& input) {
  Decision decision;
  decision.details = warnings_;
  const int current = input.current_replicas;
  std::vector<RuleCheck> checks;
  checks.reserve(config_.rules.size());
  int chosen = -1;
  int fired = 0;
  const ScalingRule* first_out = nullptr;
  const ScalingRule* first_in = nullptr;
  for (size_t i = 0; i < config_.rules.size(); ++i) {
    checks.push_back(CheckRule(i, input));
    // Rules whose condition held (or could not be judged) are worth a note; silent ones not.
    if (checks.back().outcome == Outcome::kNoMatch) continue;
    decision.details.push_back(Explain(i, checks.back(), input));
    if (checks.back().outcome != Outcome::kFired) continue;
    const ScalingRule& rule = config_.rules[i];
    ++fired;
    if (rule.step_size > 0 && first_out == nullptr) first_out = &rule;
    if (rule.step_size < 0 && first_in == nullptr) first_in = &rule;
    if (chosen < 0 || rule.step_size > config_.rules[chosen].step_size) {
      chosen = static_cast<int>(i);
    }
  }
  if (first_out && first_in) {
    decision.details.push_back(fmt::format(
        "warning: rules '{}' (scale out) and '{}' (scale in) fired in the same tick; the "
        "largest step wins",
        first_out->name, first_in->name));
  }
  if (chosen < 0) {
    decision.desired_replicas = ClampReplicas(current, config_.min_replicas, config_.max_replicas);
    decision.reason = HoldReason(current, decision.desired_replicas, checks, input);
    return decision;
  }
  const ScalingRule& rule = config_.rules[chosen];
  decision.desired_replicas =
      ClampReplicas(current + rule.step_size, config_.min_replicas, config_.max_replicas);
  decision.reason = fmt::format(
      "{}: {}{}", FormatChange(current, decision.desired_replicas),
      Explain(static_cast<size_t>(chosen), checks[chosen], input),
      fired > 1 ? fmt::format("; largest step of {} fired rules", fired) : std::string());
  last_trigger_[chosen] = input.now;
  return decision;
}

}  // namespace gpuscale::scale
