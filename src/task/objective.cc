#include "task/objective.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

namespace gpuscale::task {
namespace {

constexpr std::array<std::string_view, 4> kLatencyMetrics = {"ttft", "tpot", "itl", "e2e"};

const loadgen::LatencySummary& SummaryOf(const loadgen::BenchReport& report,
                                         std::string_view metric) {
  if (metric == "tpot") return report.time_per_output_token_seconds;
  if (metric == "itl") return report.inter_token_latency_seconds;
  if (metric == "e2e") return report.e2e_latency_seconds;
  return report.ttft_seconds;
}

bool Competes(const ExperimentRecord& e) {
  return e.status == ExperimentStatus::kSucceeded && e.bench && e.bench->requests_completed > 0;
}

// Higher is better; nullopt when the experiment misses the floor/ceiling.
std::optional<double> Score(const Objective& objective, const loadgen::BenchReport& report) {
  switch (objective.kind) {
    case ObjectiveKind::kMaxThroughput:
      return report.output_token_throughput_per_second;
    case ObjectiveKind::kMinLatency:
      if (report.request_throughput_per_second < objective.throughput_floor_rps) {
        return std::nullopt;
      }
      // A latency with no sample (count 0) cannot be judged.
      if (SummaryOf(report, objective.latency_metric).count == 0) return std::nullopt;
      return -LatencyOf(report, objective);
    case ObjectiveKind::kMaxThroughputUnderLatency:
      if (SummaryOf(report, objective.latency_metric).count == 0 ||
          LatencyOf(report, objective) > objective.latency_ceiling_seconds) {
        return std::nullopt;
      }
      return report.output_token_throughput_per_second;
  }
  return std::nullopt;
}

}  // namespace

Status ValidateObjective(const Objective& objective) {
  bool known = false;
  for (std::string_view metric : kLatencyMetrics)
    known = known || metric == objective.latency_metric;
  if (!known) {
    return InvalidArgument(fmt::format("unknown latency metric '{}'; expected "
                                       "ttft, tpot, itl or e2e",
                                       objective.latency_metric),
                           "objective.latency_metric");
  }
  const double q = objective.percentile;
  if (q != 50 && q != 90 && q != 99) {
    return InvalidArgument(fmt::format("expected 50, 90 or 99, got {}", q), "objective.percentile");
  }
  if (!(objective.throughput_floor_rps >= 0)) {
    return InvalidArgument("expected a number >= 0", "objective.throughput_floor_rps");
  }
  if (!(objective.latency_ceiling_seconds >= 0)) {
    return InvalidArgument("expected a number >= 0", "objective.latency_ceiling_seconds");
  }
  if (objective.kind == ObjectiveKind::kMaxThroughputUnderLatency &&
      objective.latency_ceiling_seconds <= 0) {
    return InvalidArgument(
        "maximizing throughput under a latency ceiling "
        "needs a positive ceiling in seconds",
        "objective.latency_ceiling_seconds");
  }
  return OkStatus();
}

double LatencyOf(const loadgen::BenchReport& report, const Objective& objective) {
  const loadgen::LatencySummary& s = SummaryOf(report, objective.latency_metric);
  if (objective.percentile == 50) return s.p50;
  if (objective.percentile == 99) return s.p99;
  return s.p90;
}

std::optional<int64_t> BestExperiment(const Objective& objective,
                                      const std::vector<ExperimentRecord>& experiments) {
  const ExperimentRecord* best = nullptr;
  double best_score = 0;
  for (const ExperimentRecord& e : experiments) {
    if (!Competes(e)) continue;
    std::optional<double> score = Score(objective, *e.bench);
    if (!score) continue;
    // Strictly better wins; a tie goes to the lower index whatever the input order.
    if (best == nullptr || *score > best_score || (*score == best_score && e.index < best->index)) {
      best = &e;
      best_score = *score;
    }
  }
  if (best == nullptr) return std::nullopt;
  return best->id;
}

std::string DescribeObjective(const Objective& objective) {
  const std::string latency = fmt::format("{} p{}", objective.latency_metric, objective.percentile);
  switch (objective.kind) {
    case ObjectiveKind::kMaxThroughput:
      return "max output tokens/s";
    case ObjectiveKind::kMinLatency:
      if (objective.throughput_floor_rps > 0) {
        return fmt::format("min {} with >= {} req/s", latency, objective.throughput_floor_rps);
      }
      return fmt::format("min {}", latency);
    case ObjectiveKind::kMaxThroughputUnderLatency:
      return fmt::format("max output tokens/s with {} <= {} s", latency,
                         objective.latency_ceiling_seconds);
  }
  return "";
}

}  // namespace gpuscale::task
