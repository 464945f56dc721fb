#include "scale/overridable_policy.h"

#include <fmt/format.h>

namespace gpuscale::scale {

Decision OverridablePolicy::Evaluate(const ScalingInput& input) {
  Decision decision = inner_->Evaluate(input);
  if (manual_) return Overridden(std::move(decision));
  return Activated(std::move(decision), input.requests_waiting_without_replica);
}

Decision OverridablePolicy::Overridden(Decision decision) const {
  Decision manual;
  manual.desired_replicas = *manual_;
  manual.reason = fmt::format(
      "manual override: {} replicas (set with PUT /replicas; the {} "
      "policy would choose {})",
      *manual_, inner_->Family(), decision.desired_replicas);
  manual.details.push_back("policy: " + decision.reason);
  // What the policy read and its targets stay recorded (history, dashboard) under the
  // override: the policy still runs, only its count is set aside.
  manual.inputs = std::move(decision.inputs);
  return manual;
}

// Requests waiting for a service the policy holds at zero are demand the policy cannot see
// yet: no replica reports them.
Decision OverridablePolicy::Activated(Decision decision, int waiting) const {
  if (waiting <= 0 || decision.desired_replicas > 0) return decision;
  Decision woken;
  woken.desired_replicas = 1;
  woken.reason = fmt::format(
      "activator: {} request{} wait at the gateway for a ready replica (the {} policy "
      "chose 0)",
      waiting, waiting == 1 ? "" : "s", inner_->Family());
  woken.details.push_back("policy: " + decision.reason);
  woken.inputs = std::move(decision.inputs);
  return woken;
}

}  // namespace gpuscale::scale
