// The `rules` family: user-written metric rules in the style of Backend.AI's model-service
// autoscaling rules. Each rule compares one live metric (the average over the replicas unless
// `aggregation` says otherwise) with a threshold and, when it holds, moves the replica count by
// a signed step. A rule is silent inside its cooldown after its last trigger and when its step
// would leave the rule's [min, max] (intersected with the policy's bounds).
//
// Several rules firing in one tick combine as "the largest step wins" (like the HPA picking the
// highest recommendation): any scale-out beats every scale-in, the biggest scale-out is taken,
// and among scale-ins only the smallest one is taken. Only the applied rule's cooldown
// restarts. Pairs of rules that can hold at once and point in opposite directions are reported
// as warnings in every Decision's details (Backend.AI's rules leave that to the user).
//
// Ownership: owns its config and per-rule trigger times. Not thread-safe (see Policy).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scale/policy.h"
#include "scale/policy_util.h"

namespace gpuscale::scale {

enum class Comparator { kLessThan, kLessThanOrEqual, kGreaterThan, kGreaterThanOrEqual };

std::string_view ComparatorSymbol(Comparator comparator);  // ">"
bool Compare(double value, Comparator comparator, double threshold);

struct ScalingRule {
  std::string name;  // shown in reasons; the parser defaults it to "rules[i]"
  MetricSource source = MetricSource::kInferenceFramework;
  std::string metric;  // e.g. "vllm:num_requests_waiting"
  Aggregation aggregation = Aggregation::kAverage;
  Comparator comparator = Comparator::kGreaterThan;
  double threshold = 0;
  int step_size = 1;     // > 0 scales out, < 0 scales in; never 0
  Seconds cooldown{0};   // time after the rule's last trigger during which it is silent
  int min_replicas = 0;  // the rule does not fire when current + step < min_replicas
  int max_replicas = 0;  // ... or > max_replicas
};

struct RulesPolicyConfig {
  int min_replicas = 1;
  int max_replicas = 1;
  std::vector<ScalingRule> rules;
};

// Warnings for pairs of rules (one scaling out, one in) on the same metric, source and
// aggregation whose conditions overlap for some value and some replica count at which both
// steps stay inside their bounds. Exposed for tests.
std::vector<std::string> FindContradictions(const RulesPolicyConfig& config);

class RulesPolicy final : public Policy {
 public:
  explicit RulesPolicy(RulesPolicyConfig config);

  std::string_view Family() const override { return "rules"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  Decision Evaluate(const ScalingInput& input) override;
  std::vector<std::string> MetricNames() const override;  // every rule's metric, once
  // Rules whose source is prometheus: the metric is the query.
  std::vector<std::pair<std::string, std::string>> PromQueries() const override;

  const RulesPolicyConfig& config() const { return config_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  // What one rule made of this tick, in order of how much it explains a hold.
  enum class Outcome { kNoMatch, kNoData, kMissingDataForScaleIn, kOutOfBounds, kCooldown, kFired };
  struct RuleCheck {
    Outcome outcome = Outcome::kNoMatch;
    MetricReading reading;
    int detail = -1;  // index of this rule's explanation in Decision::details, if any
  };

  // Judging is cheap; the sentence is built only for rules a Decision talks about (a
  // fleet-wide tick evaluates 10,000 policies, bench/policy_tick_bench.cc), appended to
  // one buffer, and reused from the details when the reason repeats it.
  RuleCheck CheckRule(size_t index, const ScalingInput& input) const;
  void AppendExplanation(std::string& out, size_t index, const RuleCheck& check,
                         const ScalingInput& input) const;
  // `best` is the check of rule `best_index`, the first that came closest to firing
  // (best_index < 0 when there are no rules).
  void AppendHoldReason(std::string& out, int current, int desired, int best_index,
                        const RuleCheck& best, const std::vector<std::string>& details,
                        const ScalingInput& input) const;

  RulesPolicyConfig config_;
  std::vector<std::optional<Seconds>> last_trigger_;  // per rule
  std::vector<std::string> warnings_;
};

}  // namespace gpuscale::scale
