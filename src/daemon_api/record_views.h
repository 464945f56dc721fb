// The daemon's records as the API shows them: replicas, stored scaling rules and events, and
// the filter an event query takes. Plain values that DaemonApi returns, so that api/ and k8s/
// read them without the orchestrators' and the store's types (the daemon converts:
// daemon/api_views.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "events/event_kind.h"
#include "scale/replica_orchestrator.h"

namespace gpuscale::daemon {

// One replica of a service (orch::ReplicaInfo's fields).
struct ReplicaView {
  std::string id;
  scale::ReplicaPhase phase = scale::ReplicaPhase::kPending;
  // Finer than phase: "pending", "starting", "ready", "draining", "restarting" (waiting out
  // a backoff), "stopping" (SIGTERM sent).
  std::string state;
  Seconds phase_since{0};
  std::string host = "127.0.0.1";
  int port = 0;                       // 0 while no process runs
  std::vector<int> gpus;              // device indices (CUDA_VISIBLE_DEVICES)
  std::vector<std::string> gpu_keys;  // lease keys
  std::string lease_owner;
  int pid = 0;
  std::string log_path;
  int restarts = 0;
  Seconds started_at{0};  // of the current process
  Seconds uptime{0};      // now - started_at while a process runs
  int outstanding_requests = 0;
  bool adopted = false;
  bool serving = true;     // false while the replica's readiness probes fail
  std::string last_error;  // pending reason, last crash, ...
  // Why the replica's last attempt to start a process failed; "" once a process runs, and
  // for engines that do not say.
  std::string start_error;
  // A mixed fleet's replica: its variant and relative capacity ("" and 1 otherwise), and
  // while a spot notice drains it, when it is stopped at the latest.
  std::string variant = {};
  double capacity = 1;
  std::optional<Seconds> preempt_deadline = {};

  friend bool operator==(const ReplicaView&, const ReplicaView&) = default;
};

// A scaling rule of a `rules`-policy service, its fields spelled as in Backend.AI's
// model-service autoscaling rules (scale/rules_policy.h reads them).
struct RuleView {
  int64_t id = 0;  // assigned when stored
  std::string service;
  std::string name;
  std::string source = "inference_framework";  // metric source
  std::string metric;                          // e.g. "vllm:num_requests_waiting"
  std::string aggregation = "average";
  std::string comparator;  // e.g. "GREATER_THAN"
  double threshold = 0;
  int step_size = 1;
  Seconds cooldown{0};
  int min_replicas = 0;
  int max_replicas = 0;
  bool enabled = true;
  Seconds created_at{0};

  friend bool operator==(const RuleView&, const RuleView&) = default;
};

// Something that happened (a decision, an action, a replica crash...).
struct EventView {
  int64_t id = 0;  // strictly increasing
  Seconds at{0};
  std::string service;  // "" for daemon-wide events
  // The stored wire name (events::EventKindName), e.g. "decision", "replica_crashed"; kept as
  // text, so that a kind written by another version of the daemon still shows.
  std::string kind;
  std::string replica;  // "" when not about one replica
  std::string message;
  std::string data;  // optional opaque text (JSON for some kinds)

  friend bool operator==(const EventView&, const EventView&) = default;
};

// Which events DaemonApi::Events returns; an empty service and no kind match everything.
struct EventQuery {
  int64_t since_id = 0;  // only events with id > since_id
  std::string service;
  std::optional<events::EventKind> kind;
  int limit = 100;  // 1..10000
};

}  // namespace gpuscale::daemon
