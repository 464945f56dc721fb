#include "profile/point_summary.h"

#include "sim/report.h"

namespace gpuscale::profile {

CurvePoint SummarizePoint(double rate_rps, const std::vector<RequestLatency>& requests,
                          const sim::SloSpec& slo) {
  CurvePoint point;
  point.rate_rps = rate_rps;
  point.requests = static_cast<int64_t>(requests.size());
  std::vector<double> ttft, tpot;
  int64_t met = 0;
  for (const RequestLatency& r : requests) {
    if (!r.completed) continue;
    ttft.push_back(r.ttft_seconds);
    if (r.tpot_seconds >= 0) tpot.push_back(r.tpot_seconds);
    met += r.ttft_seconds <= slo.ttft_seconds && r.tpot_seconds <= slo.tpot_seconds;
  }
  point.attainment =
      requests.empty() ? 0 : static_cast<double>(met) / static_cast<double>(requests.size());
  const sim::Percentiles t = sim::ComputePercentiles(ttft);
  const sim::Percentiles p = sim::ComputePercentiles(tpot);
  point.ttft_p50_seconds = t.p50;
  point.ttft_p99_seconds = t.p99;
  point.tpot_p50_seconds = p.p50;
  point.tpot_p99_seconds = p.p99;
  return point;
}

std::vector<RequestLatency> LatenciesOf(const std::vector<loadgen::RequestOutcome>& outcomes) {
  std::vector<RequestLatency> latencies;
  latencies.reserve(outcomes.size());
  for (const loadgen::RequestOutcome& o : outcomes) {
    RequestLatency r;
    r.completed = o.ok;
    // From the arrival's due time: one held in the client while every --max-in-flight slot
    // was busy waited as a user arriving then would have.
    r.ttft_seconds = o.queued_seconds + o.ttft_seconds;
    if (o.output_tokens > 1)
      r.tpot_seconds = (o.e2e_seconds - o.ttft_seconds) / (o.output_tokens - 1);
    latencies.push_back(r);
  }
  return latencies;
}

}  // namespace gpuscale::profile
