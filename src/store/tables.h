// Internal to store/: the one mapping between each row struct (records.h) and its table
// (migrations.cc holds the schema). Every repository's SQL column lists, placeholders, binds
// and reads come from these arrays (columns.h); a new column is one line here plus its
// migration, and columns_test.cc checks every table here against the migrated schema.
//
// Thread-safety: constexpr values.
#pragma once

#include "store/columns.h"
#include "store/records.h"

namespace gpuscale::store {

inline constexpr Column<ServiceRow> kServiceColumns[] = {
    {"name", &ServiceRow::name, Written::kOnInsert},
    {"spec", &ServiceRow::spec},
    {"paused", &ServiceRow::paused},
    {"created_at", &ServiceRow::created_at, Written::kOnInsert},  // kept from the first Put
    {"updated_at", &ServiceRow::updated_at},
    {"deleting", &ServiceRow::deleting},
    {"manual_replicas", &ServiceRow::manual_replicas},
};
inline constexpr Table<ServiceRow> kServices{"services", kServiceColumns};

inline constexpr Column<RuleRow> kRuleColumns[] = {
    {"id", &RuleRow::id, Written::kNever},
    {"service", &RuleRow::service},
    {"name", &RuleRow::name},
    {"source", &RuleRow::source},
    {"metric", &RuleRow::metric},
    {"aggregation", &RuleRow::aggregation},
    {"comparator", &RuleRow::comparator},
    {"threshold", &RuleRow::threshold},
    {"step_size", &RuleRow::step_size},
    {"cooldown_seconds", &RuleRow::cooldown},
    {"min_replicas", &RuleRow::min_replicas},
    {"max_replicas", &RuleRow::max_replicas},
    {"enabled", &RuleRow::enabled},
    {"created_at", &RuleRow::created_at, Written::kOnInsert},
};
inline constexpr Table<RuleRow> kRules{"rules", kRuleColumns};

inline constexpr Column<ReplicaRow> kReplicaColumns[] = {
    {"id", &ReplicaRow::id, Written::kOnInsert},
    {"service", &ReplicaRow::service},
    {"phase", &ReplicaRow::phase},
    {"pid", &ReplicaRow::pid},
    {"port", &ReplicaRow::port},
    {"gpus", &ReplicaRow::gpus},
    {"gpu_keys", &ReplicaRow::gpu_keys},
    {"lease_owner", &ReplicaRow::lease_owner},
    {"argv", &ReplicaRow::argv},
    {"log_path", &ReplicaRow::log_path},
    {"restarts", &ReplicaRow::restarts},
    {"started_at", &ReplicaRow::started_at},
    {"phase_since", &ReplicaRow::phase_since},
    {"updated_at", &ReplicaRow::updated_at},
    {"host", &ReplicaRow::host},
    {"engine_id", &ReplicaRow::engine_id},
};
inline constexpr Table<ReplicaRow> kReplicas{"replicas", kReplicaColumns};

inline constexpr Column<LeaseRow> kLeaseColumns[] = {
    {"key", &LeaseRow::key, Written::kOnInsert},
    {"gpu_index", &LeaseRow::gpu_index},
    {"node", &LeaseRow::node},
    {"owner", &LeaseRow::owner},
    {"acquired_at", &LeaseRow::acquired_at},
};
inline constexpr Table<LeaseRow> kLeases{"leases", kLeaseColumns};

inline constexpr Column<DecisionRow> kDecisionColumns[] = {
    {"id", &DecisionRow::id, Written::kNever},
    {"service", &DecisionRow::service},
    {"at", &DecisionRow::at},
    {"policy", &DecisionRow::policy},
    {"current_replicas", &DecisionRow::current_replicas},
    {"ready_replicas", &DecisionRow::ready_replicas},
    {"desired_replicas", &DecisionRow::desired_replicas},
    {"reason", &DecisionRow::reason},
    {"details", &DecisionRow::details},
    {"actions", &DecisionRow::actions},
};
inline constexpr Table<DecisionRow> kDecisions{"decisions", kDecisionColumns};

inline constexpr Column<EventRow> kEventColumns[] = {
    {"id", &EventRow::id, Written::kNever},
    {"at", &EventRow::at},
    {"service", &EventRow::service},
    {"kind", &EventRow::kind},
    {"replica", &EventRow::replica},
    {"message", &EventRow::message},
    {"data", &EventRow::data},
};
inline constexpr Table<EventRow> kEvents{"events", kEventColumns};

inline constexpr Column<TaskRow> kTaskColumns[] = {
    {"id", &TaskRow::id, Written::kNever},
    {"name", &TaskRow::name},
    {"source_text", &TaskRow::source_text},
    {"status", &TaskRow::status},
    {"priority", &TaskRow::priority},
    {"experiments_total", &TaskRow::experiments_total},
    {"experiments_done", &TaskRow::experiments_done},
    {"best_experiment_id", &TaskRow::best_experiment_id},
    {"message", &TaskRow::message},
    {"created_at", &TaskRow::created_at},  // UpdateTask rewrites it too (task_repository.h)
    {"finished_at", &TaskRow::finished_at},
};
inline constexpr Table<TaskRow> kTasks{"tasks", kTaskColumns};

inline constexpr Column<ExperimentRow> kExperimentColumns[] = {
    {"id", &ExperimentRow::id, Written::kNever},
    {"task_id", &ExperimentRow::task_id, Written::kOnInsert},
    {"idx", &ExperimentRow::index, Written::kOnInsert},
    {"status", &ExperimentRow::status},
    {"parameters", &ExperimentRow::parameters},
    {"gpus_required", &ExperimentRow::gpus_required},
    {"memory_mb_per_gpu", &ExperimentRow::memory_mb_per_gpu},
    {"results", &ExperimentRow::results},
    {"server_argv", &ExperimentRow::server_argv},
    {"pid", &ExperimentRow::pid},
    {"port", &ExperimentRow::port},
    {"lease_owner", &ExperimentRow::lease_owner},
    {"log_path", &ExperimentRow::log_path},
    {"message", &ExperimentRow::message},
    {"queued_at", &ExperimentRow::queued_at},
    {"started_at", &ExperimentRow::started_at},
    {"finished_at", &ExperimentRow::finished_at},
};
inline constexpr Table<ExperimentRow> kExperiments{"experiments", kExperimentColumns};

}  // namespace gpuscale::store
