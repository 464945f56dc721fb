// The target family's PromQL queries, for PromQueriesOf (service_policy.cc). Kept apart
// because scale/target_metric.h and scale/policy_util.h both declare scale::MetricReading.
#include <string>
#include <utility>
#include <vector>

#include "scale/target_policy.h"

namespace gpuscale::daemon::internal {

std::vector<std::pair<std::string, std::string>> TargetPolicyQueries(const scale::Policy& policy) {
  std::vector<std::pair<std::string, std::string>> queries;
  if (const auto* target = dynamic_cast<const scale::TargetPolicy*>(&policy)) {
    for (const scale::TargetMetric& m : target->config().metrics) {
      if (!m.query.empty()) queries.emplace_back(m.name, m.query);
    }
  }
  return queries;
}

}  // namespace gpuscale::daemon::internal
