// The autoscaling policy interface: at time `now` a Policy sees a ScalingInput and returns a
// Decision. Every policy family (rules, ratio, capability, fixed_elastic, target, kpa, slo, disagg)
// implements it; the daemon's control loop, `gpuscale policy eval` and the simulator all call
// the same code.
//
// Pure: no I/O, no clock reads (time is `input.now`), deterministic. A policy may keep state
// between calls (windows, cooldowns, last trigger times), so one instance serves one service.
// Thread-safety: not thread-safe; the controller calls each policy from one thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace gpuscale::scale {

// Where a metric comes from (the metric sources of Backend.AI's model-service autoscaling
// rules).
enum class MetricSource {
  kInferenceFramework,  // replicas' scraped /metrics (vLLM names)
  kKernel,              // per-replica GPU/process metrics (utilization, memory, power)
  kPrometheus,          // a Prometheus server query result (service-level)
  kGateway,             // what gpuscale's gateway measured at the door (service-level)
};

// How per-replica samples become one value (rules, target metrics). Backend.AI's
// model-service autoscaling rules use the average over replicas. Names: scale/enum_names.h.
enum class Aggregation { kAverage, kMax, kMin, kSum };

// One metric as observed at `now`.
struct MetricValue {
  MetricSource source = MetricSource::kInferenceFramework;
  // One value per ready replica; may be empty when only a service-level value exists.
  std::vector<double> per_replica;
  // A service-level value (e.g. a PromQL result). When set, policies use it as-is.
  std::optional<double> service_value;
};

// A set of capability names a task needs or a worker group provides (Scaler's scaling
// policies).
using CapabilitySet = std::set<std::string>;

// Tasks waiting or running that need a given capability set.
struct TaskDemand {
  CapabilitySet capabilities;  // empty = any worker can serve it
  int queued = 0;
  int running = 0;
};

// A running worker group (a replica, in gpuscale's terms) as the adapters report it.
struct WorkerGroup {
  std::string id;
  std::string adapter;  // which adapter started it
  CapabilitySet capabilities;
  int workers = 1;
};

// What an adapter (orchestrator) can provide (Scaler's worker adapter heartbeat).
struct AdapterCapacity {
  std::string name;
  int max_worker_groups = 0;  // 1 marks the fixed primary of fixed_elastic
  int workers_per_group = 1;
  CapabilitySet capabilities;
};

struct ScalingInput {
  Seconds now{0};
  int current_replicas = 0;  // replicas that exist (starting or ready)
  int ready_replicas = 0;
  // A mixed fleet (issue 47): the same replicas counted by their capacity relative to the
  // service's reference replica (ReplicaStatus::capacity summed), the unit a desired count is
  // in. Unset: every replica counts 1 (a single-shape fleet, where the sums equal the counts).
  std::optional<double> current_capacity;
  std::optional<double> ready_capacity;
  std::map<std::string, MetricValue> metrics;  // by metric name
  // Task counts for ratio/capability/fixed_elastic: per capability set. The ratio policy
  // uses the sum over all demands (queued + running).
  std::vector<TaskDemand> tasks;
  std::vector<WorkerGroup> groups;
  std::vector<AdapterCapacity> adapters;
  // Requests waiting at the service's door because no replica is ready to take them: the
  // gateway's activator queue live, the simulator's router queue simulated. Policies do not
  // read it (no replica reports these requests); OverridablePolicy's activator rule does.
  int requests_waiting_without_replica = 0;
  // True when reading metrics failed this tick (scrape or query error); details in
  // metric_errors. Policies never scale down on missing data.
  bool metrics_error = false;
  std::vector<std::string> metric_errors;
};

// An explicit worker-group command for adapter-aware policies (capability, fixed_elastic).
struct GroupAction {
  enum class Kind { kStart, kShutdown };
  Kind kind = Kind::kStart;
  std::string adapter;
  CapabilitySet capabilities;  // for kStart
  std::string group_id;        // for kShutdown
};

// A value a decision read and what the policy compared it with, for "metric against target"
// history: `value` is absent when the metric had no data this tick, `target` when the policy
// has no single number to compare with.
struct DecisionInput {
  std::string metric;  // a name a user recognizes, e.g. "vllm:num_requests_waiting"
  std::optional<double> value;
  std::optional<double> target;

  friend bool operator==(const DecisionInput&, const DecisionInput&) = default;
};

struct Decision {
  int desired_replicas = 0;
  // One sentence a user understands: which metric, which value, which threshold, which
  // window held the change back.
  std::string reason;
  std::vector<std::string> details;  // warnings and per-rule/per-metric notes
  std::vector<GroupAction> actions;  // empty for policies that only set a count
  std::vector<DecisionInput> inputs;  // what Evaluate read (empty for families that read none)
};

class Policy {
 public:
  virtual ~Policy() = default;
  // Family name as written in config: "rules", "ratio", "target", ...
  virtual std::string_view Family() const = 0;
  virtual int MinReplicas() const = 0;
  virtual int MaxReplicas() const = 0;
  // REQUIRES: input.now does not go backwards between calls on the same instance.
  virtual Decision Evaluate(const ScalingInput& input) = 0;
  // The ScalingInput::metrics names Evaluate reads, so that whoever fills the input can
  // report a name no source provides by name, where the policy alone would only see "no
  // data". Default: none (families that read tasks, groups and adapters only).
  virtual std::vector<std::string> MetricNames() const { return {}; }
  // The PromQL queries Evaluate reads, as {metric name, query}: a daemon with a Prometheus
  // server sends each one every tick and fills the metric with the result. Default: none.
  virtual std::vector<std::pair<std::string, std::string>> PromQueries() const { return {}; }
};

}  // namespace gpuscale::scale
