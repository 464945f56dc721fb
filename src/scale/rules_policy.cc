#include "scale/rules_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "scale/enum_names.h"

namespace gpuscale::scale {

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

namespace {

// fmt's "{:+d}": the sign is always written.
void AppendStep(std::string& out, int step) {
  if (step >= 0) out.push_back('+');
  StrAppend(out, step);
}

}  // namespace

void RulesPolicy::AppendExplanation(std::string& out, size_t index, const RuleCheck& check,
                                    const ScalingInput& input) const {
  const ScalingRule& rule = config_.rules[index];
  StrAppend(out, "rule '", rule.name, "': ", rule.metric);
  if (check.outcome == Outcome::kNoData) {
    StrAppend(out, " has no usable value (", check.reading.problem, ')');
    return;
  }
  StrAppend(out, ' ', AggregationName(rule.aggregation), ' ', Num{*check.reading.value}, ' ');
  if (check.outcome == Outcome::kNoMatch) out.append("is not ");
  StrAppend(out, ComparatorSymbol(rule.comparator), ' ', Num{rule.threshold});
  switch (check.outcome) {
    case Outcome::kNoMatch:
      break;
    case Outcome::kMissingDataForScaleIn:
      StrAppend(out, " but ", check.reading.problem,
                ", and gpuscale never scales in on incomplete data");
      break;
    case Outcome::kOutOfBounds:
      out.append(" but step ");
      AppendStep(out, rule.step_size);
      StrAppend(out, " would give ", input.current_replicas + rule.step_size,
                " replicas, outside the rule's bounds [",
                std::max(rule.min_replicas, config_.min_replicas), ", ",
                std::min(rule.max_replicas, config_.max_replicas), ']');
      break;
    case Outcome::kCooldown:
      StrAppend(out, " but the rule's ", Num{rule.cooldown.count()},
                "s cooldown holds it for another ",
                Num{(rule.cooldown - (input.now - *last_trigger_[index])).count()}, 's');
      break;
    default:
      out.append(" (step ");
      AppendStep(out, rule.step_size);
      out.push_back(')');
      break;
  }
}

void RulesPolicy::AppendHoldReason(std::string& out, int current, int desired, int best_index,
                                   const RuleCheck& best, const std::vector<std::string>& details,
                                   const ScalingInput& input) const {
  AppendGroupChange(out, current, desired, false);
  if (desired > current) {
    StrAppend(out, ": raised to min_replicas ", desired);
  } else if (desired < current) {
    StrAppend(out, ": lowered to max_replicas ", desired);
  } else if (best_index < 0) {
    out.append(": no rules configured");
  } else {
    // The rule that came closest to firing explains the hold best.
    out.append(best.outcome == Outcome::kNoMatch ? ": no rule matched; " : ": ");
    if (best.detail >= 0) {
      out.append(details[static_cast<size_t>(best.detail)]);
    } else {
      AppendExplanation(out, static_cast<size_t>(best_index), best, input);
    }
  }
}

// Longer than 40 lines: the combine step, the opposite-direction note and the reason are
// one decision and read best together.
std::vector<std::string> RulesPolicy::MetricNames() const {
  std::vector<std::string> names;
  for (const ScalingRule& rule : config_.rules) {
    if (std::find(names.begin(), names.end(), rule.metric) == names.end()) {
      names.push_back(rule.metric);
    }
  }
  return names;
}

std::vector<std::pair<std::string, std::string>> RulesPolicy::PromQueries() const {
  std::vector<std::pair<std::string, std::string>> queries;
  for (const ScalingRule& rule : config_.rules) {
    if (rule.source == MetricSource::kPrometheus) queries.emplace_back(rule.metric, rule.metric);
  }
  return queries;
}

Decision RulesPolicy::Evaluate(const ScalingInput& input) {
  Decision decision;
  decision.details = warnings_;
  const int current = input.current_replicas;
  RuleCheck best;  // of the first rule that came closest to firing, for a hold's reason
  int best_index = -1;
  int chosen = -1;
  int chosen_detail = -1;
  int fired = 0;
  const ScalingRule* first_out = nullptr;
  const ScalingRule* first_in = nullptr;
  for (size_t i = 0; i < config_.rules.size(); ++i) {
    RuleCheck check = CheckRule(i, input);
    decision.inputs.push_back({fmt::format("{} ({})", config_.rules[i].metric, config_.rules[i].name),
                               check.reading.value, config_.rules[i].threshold});
    // Rules whose condition held (or could not be judged) are worth a note; silent ones not.
    if (check.outcome != Outcome::kNoMatch) {
      check.detail = static_cast<int>(decision.details.size());
      AppendExplanation(decision.details.emplace_back(), i, check, input);
    }
    const ScalingRule& rule = config_.rules[i];
    if (check.outcome == Outcome::kFired) {
      ++fired;
      if (rule.step_size > 0 && first_out == nullptr) first_out = &rule;
      if (rule.step_size < 0 && first_in == nullptr) first_in = &rule;
      if (chosen < 0 || rule.step_size > config_.rules[chosen].step_size) {
        chosen = static_cast<int>(i);
        chosen_detail = check.detail;
      }
    }
    if (best_index < 0 || check.outcome > best.outcome) {
      best = std::move(check);
      best_index = static_cast<int>(i);
    }
  }
  if (first_out && first_in) {
    StrAppend(decision.details.emplace_back(), "warning: rules '", first_out->name,
              "' (scale out) and '", first_in->name,
              "' (scale in) fired in the same tick; the largest step wins");
  }
  std::string& reason = decision.reason;
  reason.reserve(kReasonCapacity);
  if (chosen < 0) {
    decision.desired_replicas = ClampReplicas(current, config_.min_replicas, config_.max_replicas);
    AppendHoldReason(reason, current, decision.desired_replicas, best_index, best, decision.details,
                     input);
    return decision;
  }
  decision.desired_replicas = ClampReplicas(current + config_.rules[chosen].step_size,
                                            config_.min_replicas, config_.max_replicas);
  AppendGroupChange(reason, current, decision.desired_replicas, false);
  StrAppend(reason, ": ", decision.details[static_cast<size_t>(chosen_detail)]);
  if (fired > 1) StrAppend(reason, "; largest step of ", fired, " fired rules");
  last_trigger_[chosen] = input.now;
  return decision;
}

}  // namespace gpuscale::scale
