#include "workload/priority_report.h"

#include <algorithm>

#include "workload/bench_report.h"

namespace gpuscale::loadgen {
namespace {

// Rows are ordered by this key: the priorities in their order, then none.
int ClassKey(const std::optional<route::Priority>& priority) {
  return priority ? static_cast<int>(*priority) : route::kPriorityCount;
}

}  // namespace

bool WithinSlo(const RequestOutcome& outcome, const BenchSlo& slo) {
  if (!outcome.ok) return false;
  if (slo.ttft_seconds > 0 && outcome.ttft_seconds > slo.ttft_seconds) return false;
  if (slo.tpot_seconds > 0 && outcome.output_tokens > 1) {
    const double tpot = (outcome.e2e_seconds - outcome.ttft_seconds) / (outcome.output_tokens - 1);
    if (tpot > slo.tpot_seconds) return false;
  }
  return true;
}

std::vector<PriorityClassReport> ReportByPriority(const std::vector<RequestOutcome>& outcomes,
                                                  const BenchSlo& slo) {
  const bool classed = std::any_of(outcomes.begin(), outcomes.end(), [](const auto& o) {
    return o.priority.has_value() || !o.tenant.empty();
  });
  if (!classed) return {};
  std::map<int, PriorityClassReport> rows;
  for (const RequestOutcome& o : outcomes) {
    PriorityClassReport& row = rows[ClassKey(o.priority)];
    row.priority = o.priority;
    ++row.sent;
    if (o.ok) {
      ++(WithinSlo(o, slo) ? row.within_slo : row.late);
      ++row.completed_by_tenant[o.tenant];
    } else {
      ++(o.error_kind == "http_429" ? row.shed : row.failed);
    }
  }
  std::vector<PriorityClassReport> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  return out;
}

std::string_view PriorityClassName(const PriorityClassReport& row) {
  return row.priority ? route::PriorityName(*row.priority) : "none";
}

}  // namespace gpuscale::loadgen
