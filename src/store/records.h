// The rows the state store keeps, as small domain structs (no JSON, no SQLite): services,
// scaling rules, replicas, GPU leases, controller decisions and events. Times are seconds
// since the Unix epoch (the daemon's Clock); list-valued fields are stored as JSON text
// columns inside store/, which callers never see.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace gpuscale::store {

// A service the daemon manages. `spec` is the service's configuration as the daemon wrote it
// (YAML or JSON text); the store keeps it opaque.
struct ServiceRow {
  std::string name;  // primary key, e.g. "chat"
  std::string spec;
  bool paused = false;  // the control loop leaves a paused service's replicas alone
  Seconds created_at{0};  // kept from the first Put
  Seconds updated_at{0};
  // Deleted, but some replicas may still run: the row (and the spec, which says how to reach
  // the replicas' engine) stays until they are gone, so a restarted daemon can finish the stop.
  bool deleting = false;
  std::optional<int> manual_replicas;  // the API's override of the desired count; none = policy

  bool operator==(const ServiceRow&) const = default;
};

// A live service's row (not deleting, no manual override).
inline ServiceRow MakeServiceRow(std::string name, std::string spec, Seconds created_at,
                                 Seconds updated_at) {
  ServiceRow row;
  row.name = std::move(name);
  row.spec = std::move(spec);
  row.created_at = created_at;
  row.updated_at = updated_at;
  return row;
}

// One scaling rule of a service (the `rules` policy family; names as in rules_policy.h).
struct RuleRow {
  int64_t id = 0;  // assigned by Add
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

  bool operator==(const RuleRow&) const = default;
};

// A replica as the orchestrator last persisted it (what adoption after a restart reads).
struct ReplicaRow {
  std::string id;  // primary key, e.g. "chat-3"
  std::string service;
  std::string phase;  // "pending", "starting", "ready", "draining"
  int64_t pid = 0;    // 0 when no process runs
  int port = 0;
  std::vector<int> gpus;               // device indices
  std::vector<std::string> gpu_keys;   // lease keys (uuid or "<node>#<index>")
  std::string lease_owner;             // e.g. "replica/chat-3"
  std::vector<std::string> argv;       // expanded command line of the running process
  std::string log_path;
  int restarts = 0;
  Seconds started_at{0};  // start of the current process
  Seconds phase_since{0};
  Seconds updated_at{0};
  std::string host = "127.0.0.1";  // where the replica serves (a Slurm node's address)
  std::string engine_id;           // the engine's id (Slurm job id); "" for local processes

  bool operator==(const ReplicaRow&) const = default;
};

// A GPU lease (alloc::Lease) as persisted.
struct LeaseRow {
  std::string key;  // primary key
  int gpu_index = 0;
  std::string node;
  std::string owner;
  Seconds acquired_at{0};

  bool operator==(const LeaseRow&) const = default;
};

// One controller tick's decision for a service.
struct DecisionRow {
  int64_t id = 0;  // assigned by Append; increases with time
  std::string service;
  Seconds at{0};
  std::string policy;  // family, e.g. "target"
  int current_replicas = 0;
  int ready_replicas = 0;
  int desired_replicas = 0;
  std::string reason;
  std::vector<std::string> details;
  std::vector<std::string> actions;  // "start", "drain chat-2: ...", ...

  bool operator==(const DecisionRow&) const = default;
};

// Something that happened (a decision, an action, a replica crash...). `data` is optional
// opaque text (the daemon may put JSON there).
struct EventRow {
  int64_t id = 0;  // assigned by Append; strictly increasing
  Seconds at{0};
  std::string service;  // "" for daemon-wide events
  std::string kind;     // e.g. "decision", "replica_started", "replica_crashed"
  std::string replica;  // "" when not about one replica
  std::string message;
  std::string data;

  bool operator==(const EventRow&) const = default;
};

// A task of the tasks/experiments feature (task/task_types.h holds the domain view; the
// daemon converts). `source_text` is the task as submitted; re-parsing it gives the
// definition back after a restart.
struct TaskRow {
  int64_t id = 0;  // assigned by Add
  std::string name;
  std::string source_text;
  std::string status;  // task::TaskStatusName
  int priority = 0;
  int experiments_total = 0;
  int experiments_done = 0;
  std::optional<int64_t> best_experiment_id;
  std::string message;
  Seconds created_at{0};
  std::optional<Seconds> finished_at;

  bool operator==(const TaskRow&) const = default;
};

// One experiment of a task. `parameters` and `results` are JSON text (task/task_codec.h);
// the store keeps them opaque.
struct ExperimentRow {
  int64_t id = 0;  // assigned by Add; unique across tasks
  int64_t task_id = 0;
  int index = 0;       // grid position (column idx)
  std::string status;  // task::ExperimentStatusName
  std::string parameters;  // JSON object
  int gpus_required = 1;
  int64_t memory_mb_per_gpu = 0;
  std::string results = "{}";  // JSON object: bench, gpu_info, gpu_monitoring
  std::vector<std::string> server_argv;
  int64_t pid = 0;
  int port = 0;
  std::string lease_owner;
  std::string log_path;
  std::string message;
  Seconds queued_at{0};
  std::optional<Seconds> started_at;
  std::optional<Seconds> finished_at;

  bool operator==(const ExperimentRow&) const = default;
};

// Filter for EventRepository::Query; empty strings match everything.
struct EventQuery {
  int64_t since_id = 0;  // only events with id > since_id
  std::string service;
  std::string kind;
  int limit = 100;  // 1..10000
};

}  // namespace gpuscale::store
