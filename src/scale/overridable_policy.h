// OverridablePolicy: a service's policy under the two rules every service runs with, live
// (daemon::ServiceRuntime) and simulated (sim's engine and disaggregated pools), so that both
// make the same decision from the same input:
//  - the activator rule (Knative Serving's activator: a revision scaled to zero gets a pod
//    when requests arrive): while requests wait because no replica is ready
//    (ScalingInput::requests_waiting_without_replica) and the inner policy chose 0, the
//    decision is 1 replica, its reason says "activator: ...". The policy takes over once that
//    replica reports the demand it serves;
//  - the manual override (PUT /replicas in the daemon): a count that replaces the policy's.
//    The inner policy still runs under it, so its windows and cooldowns keep up with the live
//    metrics and handing control back does not start from stale state; the activator does
//    not apply under an override (the operator's count stands).
// Both decisions keep the inner decision's inputs (history and dashboard show what the
// policy read) and carry its reason as the detail "policy: <reason>".
//
// Pure: no I/O, time comes with the input. Ownership: owns the inner policy.
// Thread-safety: not thread-safe (one control loop calls it, as any Policy).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scale/policy.h"

namespace gpuscale::scale {

class OverridablePolicy final : public Policy {
 public:
  // REQUIRES: inner != nullptr.
  explicit OverridablePolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}

  std::string_view Family() const override { return inner_->Family(); }
  int MinReplicas() const override { return inner_->MinReplicas(); }
  int MaxReplicas() const override { return inner_->MaxReplicas(); }
  // The inner policy's decision, under the override or the activator rule (header comment).
  Decision Evaluate(const ScalingInput& input) override;
  std::vector<std::string> MetricNames() const override { return inner_->MetricNames(); }
  std::vector<std::pair<std::string, std::string>> PromQueries() const override {
    return inner_->PromQueries();
  }

  const Policy& inner() const { return *inner_; }
  // Swaps the inner policy (rules changed); the override stays. REQUIRES: inner != nullptr.
  void set_inner(std::unique_ptr<Policy> inner) { inner_ = std::move(inner); }
  // The manual count; nullopt hands control back to the policy. The caller checks bounds
  // (the controller clamps to [MinReplicas, MaxReplicas] in any case).
  std::optional<int> manual() const { return manual_; }
  void set_manual(std::optional<int> manual) { manual_ = manual; }

 private:
  Decision Overridden(Decision decision) const;
  Decision Activated(Decision decision, int waiting) const;

  std::unique_ptr<Policy> inner_;
  std::optional<int> manual_;
};

}  // namespace gpuscale::scale
