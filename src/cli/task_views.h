// Readable views of the tasks API's JSON (docs/api.md "Tasks and experiments") for
// `gpuscale task ...` and `gpuscale experiment show`: the task list, one task with its
// experiments table, one experiment, and the one-line progress of `task submit --wait`.
// They read the API's JSON (not domain types) so that the CLI shows exactly what the daemon
// serves; absent or null values print as "-".
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace gpuscale::cli {

using TaskJsonView = nlohmann::ordered_json;

// {"tasks": [...]} -> one row per task.
void PrintTaskList(const TaskJsonView& list, std::ostream& out);
// A full task: its fields, then one row per experiment (index, id, status, parameters, GPUs,
// throughput, TTFT p90, TPOT p90, monitoring), the best marked with '*'.
void PrintTask(const TaskJsonView& task, std::ostream& out);
void PrintExperiment(const TaskJsonView& experiment, std::ostream& out);
// "experiments 3/6 done, 2 running, best #7 (412.3 tok/s)" (plus ", 1 failed" when some
// failed, and the objective's latency for latency objectives).
std::string ProgressLine(const TaskJsonView& task);

}  // namespace gpuscale::cli
