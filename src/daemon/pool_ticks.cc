#include "daemon/pool_ticks.h"

#include <fmt/format.h>

namespace gpuscale::daemon {
namespace {

std::string WithRole(const std::string& role, const std::string& text) {
  const std::string prefix = role + ": ";
  return text.starts_with(prefix) ? text : prefix + text;
}

void AddPool(const std::string& role, const ServiceTickResult& pool, ServiceTickResult& out) {
  const scale::ControllerTick& t = pool.tick;
  scale::ControllerTick& sum = out.tick;
  sum.now = t.now;
  sum.current_replicas += t.current_replicas;
  sum.ready_replicas += t.ready_replicas;
  sum.desired_replicas += t.desired_replicas;
  sum.decision.desired_replicas += t.decision.desired_replicas;
  sum.started += t.started;
  sum.stopped += t.stopped;
  if (!sum.decision.reason.empty()) sum.decision.reason += "; ";
  sum.decision.reason += WithRole(role, t.decision.reason);
  for (const std::string& detail : t.decision.details) {
    sum.decision.details.push_back(WithRole(role, detail));
  }
  for (scale::DecisionInput input : t.decision.inputs) {
    input.metric = fmt::format("{}/{}", role, input.metric);
    sum.decision.inputs.push_back(std::move(input));
  }
  sum.actions.insert(sum.actions.end(), t.actions.begin(), t.actions.end());
  for (const std::string& error : t.errors) sum.errors.push_back(WithRole(role, error));
  for (const std::string& error : pool.metric_errors) {
    out.metric_errors.push_back(WithRole(role, error));
  }
  out.desired_changed = out.desired_changed || pool.desired_changed;
  out.scrape_errors += pool.scrape_errors;
  out.gateway = pool.gateway;
}

}  // namespace

ServiceTickResult CombinePoolTicks(const std::vector<PoolTick>& pools) {
  ServiceTickResult out;
  for (const PoolTick& pool : pools) AddPool(pool.role, *pool.result, out);
  return out;
}

}  // namespace gpuscale::daemon
