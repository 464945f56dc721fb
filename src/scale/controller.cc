#include "scale/controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace gpuscale::scale {

Controller::Controller(std::unique_ptr<Policy> policy, ReplicaOrchestrator& orchestrator,
                       ControllerConfig config)
    : policy_(std::move(policy)), orchestrator_(orchestrator), config_(config) {}

ControllerTick Controller::Tick(Seconds now, ScalingInput observed) {
  ControllerTick tick;
  tick.now = now;
  std::vector<ReplicaStatus> replicas = orchestrator_.ListReplicas();
  double current_capacity = 0, ready_capacity = 0;
  for (const auto& r : replicas) {
    // Pending replicas count as current: the policy reasons about the count it asked for,
    // and counting them avoids asking again for replicas that merely wait for GPUs.
    if (r.phase != ReplicaPhase::kDraining) {
      ++tick.current_replicas;
      current_capacity += r.capacity;
    }
    if (r.phase == ReplicaPhase::kReady) {
      ++tick.ready_replicas;
      ready_capacity += r.capacity;
    }
  }
  observed.now = now;
  observed.current_replicas = tick.current_replicas;
  observed.ready_replicas = tick.ready_replicas;
  observed.current_capacity = current_capacity;
  observed.ready_capacity = ready_capacity;
  tick.decision = policy_->Evaluate(observed);
  int lo = std::max(policy_->MinReplicas(), 0);
  int hi = std::max(policy_->MaxReplicas(), lo);
  tick.desired_replicas = std::clamp(tick.decision.desired_replicas, lo, hi);

  for (const auto& action :
       PlanReconcile(tick.desired_replicas, replicas, now, config_.reconciler)) {
    Apply(action, now, tick);
  }
  return tick;
}

void Controller::Apply(const ReplicaAction& action, Seconds now, ControllerTick& tick) {
  Status status = OkStatus();
  std::string id = action.replica_id;
  switch (action.kind) {
    case ReplicaAction::Kind::kStart: {
      auto started = orchestrator_.Start(now);
      if (started) {
        id = started->id;
        ++tick.started;
      } else {
        status = Unexpected<Error>(started.error());
      }
      break;
    }
    case ReplicaAction::Kind::kPlace:
      status = orchestrator_.Place(id, now);
      // Still no GPUs: the replica stays pending; that is a state, not an error.
      if (!status && status.error().code == ErrorCode::kResourceExhausted) status = OkStatus();
      break;
    case ReplicaAction::Kind::kDrain:
      status = orchestrator_.Drain(id, now);
      break;
    case ReplicaAction::Kind::kResume:
      status = orchestrator_.Resume(id, now);
      break;
    case ReplicaAction::Kind::kStop:
      status = orchestrator_.Stop(id, now);
      if (status) ++tick.stopped;
      break;
  }
  ReplicaAction done = action;
  done.replica_id = id;
  tick.actions.push_back(std::move(done));
  if (!status) {
    tick.errors.push_back(fmt::format("{} {}: {}: {}", ActionKindName(action.kind),
                                      id.empty() ? "(new)" : id, ErrorCodeName(status.error().code),
                                      status.error().ToString()));
  }
}

}  // namespace gpuscale::scale
