// Building a service's scaling policy: from its spec's `policy:` block (SpecPolicy,
// serve_config/spec_policy.h), or, when the spec has no policy, a `rules` policy from the
// service's enabled rules in the store (the rule API of Backend.AI's model-service
// autoscaling rules).
// Also the conversion of stored rule rows (strings, as the API and SQLite spell them) into
// scale::ScalingRule with field-named errors, and the list of PromQL queries a policy needs
// the daemon to run against a Prometheus server.
//
// Pure: no I/O. Thread-safety: free functions on values.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "scale/policy.h"
#include "scale/rules_policy.h"
#include "serve_config/daemon_config.h"
#include "store/records.h"

namespace gpuscale::daemon {

// One stored rule -> a policy rule. Accepted spellings: source inference_framework | kernel |
// prometheus (metric is then a PromQL query); aggregation average | max | min | sum;
// comparator LESS_THAN | LESS_THAN_OR_EQUAL | GREATER_THAN | GREATER_THAN_OR_EQUAL.
// min_replicas/max_replicas of 0/0 mean "the service's bounds".
// Errors: kInvalidArgument naming the field (name, metric, source, aggregation, comparator,
// step_size, cooldown_seconds, min_replicas, max_replicas, threshold).
Result<scale::ScalingRule> RuleFromRow(const store::RuleRow& row, const ServiceConfig& service);

// The policy of `service`: its policy_yaml when set, else a RulesPolicy of the enabled
// `rules` (disabled ones are skipped; a rule that fails RuleFromRow fails the build).
// Errors: kInvalidArgument from config::ParsePolicy (field path prefixed with "policy.")
// or RuleFromRow.
Result<std::unique_ptr<scale::Policy>> BuildServicePolicy(const ServiceConfig& service,
                                                          const std::vector<store::RuleRow>& rules);

// A metric the daemon obtains from the Prometheus server: `key` is the ScalingInput metric
// name the policy reads, `promql` the query sent to /api/v1/query.
struct PromQuery {
  std::string key;
  std::string promql;
};

// Queries `policy` needs: target metrics with a `query`, and rules whose source is
// prometheus (their metric is the query). Metrics that ServiceMetricView computes locally
// from scrapes (the success-rate, SLO-violation and e2e ratio names of
// scale/metric_names.h) are not listed: they never need a server.
std::vector<PromQuery> PromQueriesOf(const scale::Policy& policy);

}  // namespace gpuscale::daemon
