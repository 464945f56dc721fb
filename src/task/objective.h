// Objectives: which experiment of a task is best (TaskDefinition::objective). Only
// succeeded experiments with a benchmark report and at least one completed request compete;
// ties go to the lower experiment index (deterministic).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "task/task_types.h"

namespace gpuscale::task {

// Errors: kInvalidArgument naming "objective.<field>" (unknown latency metric, percentile
// other than 50/90/99, negative floor/ceiling, kMaxThroughputUnderLatency without a ceiling).
Status ValidateObjective(const Objective& objective);

// The objective's latency figure of a report, seconds (e.g. ttft p90).
double LatencyOf(const loadgen::BenchReport& report, const Objective& objective);

// The best experiment's id, or nullopt when none qualifies (none succeeded, or none meets
// the floor/ceiling).
std::optional<int64_t> BestExperiment(const Objective& objective,
                                      const std::vector<ExperimentRecord>& experiments);

// One line for people: "max output tokens/s", "min ttft p90 with >= 5 req/s", ...
std::string DescribeObjective(const Objective& objective);

}  // namespace gpuscale::task
