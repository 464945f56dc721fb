// JSON of tasks and experiments: the REST API's views (docs/api.md "Tasks"), `gpuscale task
// ... -o json`, and the store's JSON text columns (experiment parameters and results). One
// codec for all of them, so the API, the CLI and a restarted daemon agree on every key.
// Adapter-side header (includes nlohmann/json): used by api/, cli/ and experiments/ only.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>

#include "core/result.h"
#include "gpu/gpu_stats.h"
#include "task/task_types.h"
#include "workload/bench_report.h"

namespace gpuscale::task {

using Json = nlohmann::ordered_json;

// `gpuscale bench -o json`'s report keys (without the options echo).
Json BenchReportJson(const loadgen::BenchReport& report);
// `gpuscale monitor -o json`'s per-GPU object for one GPU's stats.
Json GpuStatsJson(const gpu::GpuStats& stats);
Json ParameterJson(const alloc::ParamScalar& value);
Json ParametersJson(const std::map<std::string, alloc::ParamScalar>& parameters);
Json ObjectiveJson(const Objective& objective);

// Views (docs/api.md "Tasks"). `best_id` marks is_best.
Json ExperimentJson(const ExperimentRecord& experiment, std::optional<int64_t> best_id);
// From the record alone experiments_failed and experiments_running are unknown (null); the
// overload with the task's experiments counts them (and experiments_done) from those.
Json TaskSummaryJson(const TaskRecord& task);
Json TaskSummaryJson(const TaskRecord& task, const std::vector<ExperimentRecord>& experiments);
// The summary plus the definition and every experiment.
Json TaskJson(const TaskRecord& task, const std::vector<ExperimentRecord>& experiments);

// Store columns. ExperimentResultsText writes {"bench":..,"gpu_info":..,"gpu_monitoring":..}
// (null members for unset fields); ReadExperimentResults sets those three fields of `into`.
std::string ExperimentParametersText(const std::map<std::string, alloc::ParamScalar>& parameters);
std::string ExperimentResultsText(const ExperimentRecord& experiment);
// Errors: kInternal naming `column` when the text is not what the writers above produce.
Result<std::map<std::string, alloc::ParamScalar>> ReadExperimentParameters(
    std::string_view text, std::string_view column);
Status ReadExperimentResults(std::string_view text, std::string_view column,
                             ExperimentRecord& into);

}  // namespace gpuscale::task
