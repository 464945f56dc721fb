// The narrow port through which the controller changes a service's replicas: list them,
// start one on free GPUs (or leave it pending when none are free), drain one (no new
// requests; in-flight ones finish), and stop one (frees its GPUs). Implemented by the
// simulator (sim::SimOrchestrator) and, live, by the orch/ adapters (local processes and
// Slurm jobs; on Kubernetes the HPA scales, driven through KEDA's external scaler in k8s/).
//
// Ownership: the orchestrator owns its replicas; callers see copies (ReplicaStatus).
// Thread-safety: implementations are driven by one control loop thread; they need not lock.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::scale {

enum class ReplicaPhase {
  kPending,   // wanted, but no GPUs were free to place it; holds no GPUs
  kStarting,  // placed on GPUs, loading (cold start); holds GPUs, serves nothing
  kReady,     // serving requests
  kDraining,  // takes no new requests; finishes in-flight ones, then gets stopped
};

std::string_view ReplicaPhaseName(ReplicaPhase phase);  // "pending", "starting", ...

struct ReplicaStatus {
  std::string id;
  ReplicaPhase phase = ReplicaPhase::kPending;
  Seconds phase_since{0};        // when the replica entered `phase`
  int outstanding_requests = 0;  // waiting + running on the replica
  // A mixed fleet (replicas of several variants, issue 47): the replica's capacity relative
  // to the service's reference replica, which the policy's desired count is in units of; and
  // how early it should go when the service shrinks (higher first: its price per capacity).
  // A single-shape fleet leaves 1 and 0, and the reconciler counts replicas.
  double capacity = 1;
  double drain_rank = 0;
};

class ReplicaOrchestrator {
 public:
  virtual ~ReplicaOrchestrator() = default;

  // Every replica that exists (any phase), in a stable order (creation order).
  virtual std::vector<ReplicaStatus> ListReplicas() const = 0;

  // Creates a replica and tries to place it. Returns its status: kStarting when placed,
  // kPending when no GPUs are free (not an error: the reconciler retries with Place).
  // Errors: kUnavailable when the backend cannot be reached.
  virtual Result<ReplicaStatus> Start(Seconds now) = 0;

  // Retries placement of a pending replica. Errors: kNotFound for an unknown id,
  // kFailedPrecondition when it is not pending, kResourceExhausted when still no GPUs.
  virtual Status Place(const std::string& id, Seconds now) = 0;

  // Stops routing new requests to a ready replica. Errors: kNotFound, kFailedPrecondition
  // when the replica is not ready.
  virtual Status Drain(const std::string& id, Seconds now) = 0;

  // Returns a draining replica to service (cheaper than starting a new one).
  // Errors: kNotFound, kFailedPrecondition when it is not draining.
  virtual Status Resume(const std::string& id, Seconds now) = 0;

  // Removes a replica and frees its GPUs; in-flight requests are aborted.
  // Errors: kNotFound for an unknown id.
  virtual Status Stop(const std::string& id, Seconds now) = 0;
};

}  // namespace gpuscale::scale
