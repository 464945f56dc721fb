#include "profile/sim_probe.h"

#include <fmt/format.h>

#include <cmath>

#include "profile/point_summary.h"
#include "sim/sim_replica.h"
#include "workload/workload.h"

namespace gpuscale::profile {
namespace {

// The arrivals of one point: Poisson at `rate`, every request of `mix`'s lengths.
std::vector<sim::RequestRecord> Arrivals(const Mix& mix, double rate, double span_s,
                                         uint64_t seed) {
  loadgen::WorkloadSpec spec;
  spec.mode = loadgen::ArrivalMode::kPoisson;
  spec.rate_per_second = rate;
  spec.input = {mix.prompt_tokens, 0};
  spec.output = {mix.output_tokens, 0};
  spec.seed = seed;
  spec.duration_seconds = span_s;
  loadgen::WorkloadGenerator generator(spec);
  std::vector<sim::RequestRecord> records;
  while (std::optional<loadgen::PlannedRequest> next = generator.Next()) {
    sim::RequestRecord r;
    r.arrival_s = next->send_at_seconds;
    r.input_tokens = next->input_tokens;
    r.output_tokens = next->output_tokens;
    records.push_back(r);
  }
  return records;
}

// Serves every request on one replica until all have finished.
void Serve(const sim::ReplicaModel& model, std::vector<sim::RequestRecord>& records) {
  sim::SimReplica replica(model, records);
  size_t next = 0;
  while (true) {
    const double t_segment = replica.NextEventTime();
    const double t_arrival =
        next < records.size() ? records[next].arrival_s : sim::SimReplica::kNever;
    if (t_segment == sim::SimReplica::kNever && t_arrival == sim::SimReplica::kNever) break;
    if (t_segment <= t_arrival) {
      replica.FinishSegment(t_segment);
    } else {
      replica.Enqueue(static_cast<uint32_t>(next++), t_arrival);
    }
  }
}

}  // namespace

SimReplicaProbe::SimReplicaProbe(const sim::ReplicaModel& model, const sim::SloSpec& slo,
                                 const SimProbeOptions& options)
    : model_(model), slo_(slo), options_(options) {}

Result<CurvePoint> SimReplicaProbe::Measure(const Mix& mix, double rate_rps) {
  if (!(rate_rps > 0) || !std::isfinite(rate_rps)) {
    return InvalidArgument(fmt::format("expected a rate > 0, got {}", rate_rps), "rate_rps");
  }
  if (mix.prompt_tokens < 1 || mix.output_tokens < 1) {
    return InvalidArgument(
        fmt::format("expected lengths >= 1, got {}:{}", mix.prompt_tokens, mix.output_tokens),
        "mix");
  }
  const double span_s = options_.warmup_seconds + options_.point_seconds;
  if (rate_rps * span_s > kMaxSimulatedRequests) {
    return InvalidArgument(fmt::format("{} req/s over {} s is more than {} simulated requests",
                                       rate_rps, span_s, kMaxSimulatedRequests),
                           "rate_rps");
  }
  std::vector<sim::RequestRecord> records = Arrivals(mix, rate_rps, span_s, options_.seed);
  Serve(model_, records);
  std::vector<RequestLatency> scored;
  for (const sim::RequestRecord& r : records) {
    if (r.arrival_s < options_.warmup_seconds) continue;
    RequestLatency latency;
    latency.completed = !r.aborted && r.finish_s >= 0;
    latency.ttft_seconds = r.first_token_s - r.arrival_s;
    if (r.output_tokens > 1) {
      latency.tpot_seconds = (r.finish_s - r.first_token_s) / (r.output_tokens - 1);
    }
    scored.push_back(latency);
  }
  return SummarizePoint(rate_rps, scored, slo_);
}

}  // namespace gpuscale::profile
