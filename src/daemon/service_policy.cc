// Service policies: spec block or stored rules -> scale::Policy (service_policy.h).
#include "daemon/service_policy.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string_view>
#include <utility>

#include "scale/enum_names.h"
#include "scale/metric_names.h"
#include "scale/policy_util.h"
#include "serve_config/spec_policy.h"

namespace gpuscale::daemon {

namespace {

// A rule row's text field as the enum it spells (scale/enum_names.h's tables).
template <typename E>
Result<E> Lookup(scale::Spellings<E> table, const std::string& text, std::string_view field) {
  if (std::optional<E> value = ValueIn(table, text)) return *value;
  return InvalidArgument(fmt::format("expected one of {}, got '{}'", NamesIn(table), text),
                         std::string(field));
}

// Names ServiceMetricView computes from scrapes (no Prometheus server needed).
bool ComputedLocally(std::string_view name) {
  namespace mn = scale::metric_names;
  return name == mn::kSuccessRate30s || name == mn::kSuccessRate2m ||
         name == mn::kPromptTokensRate30s || name == mn::kGenerationTokensRate30s ||
         name == mn::kTtftViolationRatio || name == mn::kTpotViolationRatio ||
         name == mn::kE2eOver5sRatio || name.starts_with(mn::kGatewayPrefix);
}

Status CheckRuleBounds(const store::RuleRow& row, const ServiceConfig& service,
                       scale::ScalingRule& rule) {
  const bool service_bounds = row.min_replicas == 0 && row.max_replicas == 0;
  rule.min_replicas = service_bounds ? service.min_replicas : row.min_replicas;
  rule.max_replicas = service_bounds ? service.max_replicas : row.max_replicas;
  if (rule.min_replicas < 0) return InvalidArgument("must be >= 0", "min_replicas");
  if (rule.max_replicas < rule.min_replicas) {
    return InvalidArgument(
        fmt::format("must be >= min_replicas ({}), got {}", rule.min_replicas, rule.max_replicas),
        "max_replicas");
  }
  return OkStatus();
}

}  // namespace

Result<scale::ScalingRule> RuleFromRow(const store::RuleRow& row, const ServiceConfig& service) {
  scale::ScalingRule rule;
  if (row.name.empty()) return InvalidArgument("must not be empty", "name");
  rule.name = row.name;
  if (row.metric.empty()) return InvalidArgument("must not be empty", "metric");
  rule.metric = row.metric;
  GS_ASSIGN_OR_RETURN(rule.source, Lookup(scale::MetricSourceSpellings(), row.source, "source"));
  GS_ASSIGN_OR_RETURN(rule.aggregation,
                      Lookup(scale::AggregationSpellings(), row.aggregation, "aggregation"));
  GS_ASSIGN_OR_RETURN(rule.comparator,
                      Lookup(scale::ComparatorSpellings(), row.comparator, "comparator"));
  if (!std::isfinite(row.threshold)) return InvalidArgument("must be a finite number", "threshold");
  rule.threshold = row.threshold;
  if (row.step_size == 0) {
    return InvalidArgument("must not be 0 (positive scales out, negative scales in)", "step_size");
  }
  rule.step_size = row.step_size;
  if (row.cooldown.count() < 0 || !std::isfinite(row.cooldown.count())) {
    return InvalidArgument("must be >= 0", "cooldown_seconds");
  }
  rule.cooldown = row.cooldown;
  GS_RETURN_IF_ERROR(CheckRuleBounds(row, service, rule));
  return rule;
}

Result<std::unique_ptr<scale::Policy>> BuildServicePolicy(
    const ServiceConfig& service, const std::vector<store::RuleRow>& rules) {
  if (!service.policy_yaml.empty()) return SpecPolicy(service);
  scale::RulesPolicyConfig config;
  config.min_replicas = service.min_replicas;
  config.max_replicas = service.max_replicas;
  for (const store::RuleRow& row : rules) {
    if (!row.enabled) continue;
    Result<scale::ScalingRule> rule = RuleFromRow(row, service);
    if (!rule) {
      Error e = rule.error();
      e.field = fmt::format("rules[{}].{}", row.id, e.field);
      return Unexpected<Error>(std::move(e));
    }
    config.rules.push_back(std::move(*rule));
  }
  return std::unique_ptr<scale::Policy>(std::make_unique<scale::RulesPolicy>(std::move(config)));
}

std::vector<PromQuery> PromQueriesOf(const scale::Policy& policy) {
  std::vector<PromQuery> queries;
  auto add = [&queries](const std::string& key, const std::string& promql) {
    if (ComputedLocally(key)) return;
    for (const PromQuery& q : queries) {
      if (q.key == key) return;
    }
    queries.push_back({key, promql});
  };
  for (const auto& [key, promql] : policy.PromQueries()) add(key, promql);
  return queries;
}

}  // namespace gpuscale::daemon
