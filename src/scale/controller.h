// The controller: one service's control loop step, shared by the daemon and the simulator.
// Each Tick reads the replicas from the orchestrator, completes the ScalingInput (time and
// replica counts; metrics come from the caller's metric windows), asks the policy for a
// Decision, clamps it to the policy's bounds, plans the difference with PlanReconcile and
// applies the actions through the orchestrator. Action failures are reported, not fatal:
// the next tick re-plans from what actually exists, which is how the loop recovers from a
// crashed replica or a failed start.
//
// Group actions (capability / fixed_elastic policies) are not executed here: those policies
// also set desired_replicas, which is what the controller reconciles.
//
// Ownership: owns the policy; borrows the orchestrator, which must outlive the controller.
// Thread-safety: not thread-safe; one control loop thread calls Tick.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "scale/policy.h"
#include "scale/reconciler.h"
#include "scale/replica_orchestrator.h"

namespace gpuscale::scale {

struct ControllerConfig {
  ReconcilerConfig reconciler;
};

// What one tick saw, decided and did (the daemon stores these as events).
struct ControllerTick {
  Seconds now{0};
  int current_replicas = 0;  // pending + starting + ready (not draining) before the tick
  int ready_replicas = 0;
  Decision decision;                   // as the policy returned it
  int desired_replicas = 0;            // after clamping to [MinReplicas, MaxReplicas]
  std::vector<ReplicaAction> actions;  // attempted, in order
  std::vector<std::string> errors;     // "stop r3: not_found: ..." per failed action
  int started = 0;                     // replicas created this tick (placed or pending)
  int stopped = 0;  // replicas stopped this tick (cancelled, drained or timed out)
};

class Controller {
 public:
  // REQUIRES: policy != nullptr.
  Controller(std::unique_ptr<Policy> policy, ReplicaOrchestrator& orchestrator,
             ControllerConfig config = {});

  // One control step at `now`. `observed` carries metrics, tasks and metric errors; its
  // now/current_replicas/ready_replicas are overwritten from the orchestrator.
  // REQUIRES: `now` does not go backwards between calls.
  ControllerTick Tick(Seconds now, ScalingInput observed);

  Policy& policy() { return *policy_; }

 private:
  void Apply(const ReplicaAction& action, Seconds now, ControllerTick& tick);

  std::unique_ptr<Policy> policy_;
  ReplicaOrchestrator& orchestrator_;
  ControllerConfig config_;
};

}  // namespace gpuscale::scale
