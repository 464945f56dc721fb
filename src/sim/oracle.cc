#include "sim/oracle.h"

#include <algorithm>
#include <cmath>

#include "sim/report.h"
#include "sim/sim_replica.h"

namespace gpuscale::sim {
namespace {

// Requests per calibration run: enough for a stable 1 % tail, cheap to bisect over.
constexpr size_t kCalibrationRequests = 20000;
constexpr int kBisectionSteps = 14;

}  // namespace

WorkWeights ComputeWorkWeights(const ReplicaModel& model, const Trace& trace) {
  double chunk = std::max(model.MaxBatchedTokens(), 1);
  double context = 0;
  for (const auto& r : trace.requests) context += r.input_tokens + r.output_tokens / 2.0;
  context /= std::max<size_t>(trace.requests.size(), 1);
  constexpr int kBatch = 64;
  WorkWeights w;
  w.per_input_token = model.PrefillSeconds(static_cast<int64_t>(chunk)) / chunk;
  w.per_output_token =
      model.DecodeStepSeconds(kBatch, static_cast<int64_t>(kBatch * context)) / kBatch;
  return w;
}

double SingleReplicaAttainment(const ReplicaModel& model,
                               const std::vector<TraceRequest>& requests, const SloSpec& slo) {
  std::vector<RequestRecord> records(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    records[i].arrival_s = requests[i].arrival_s;
    records[i].input_tokens = std::max(requests[i].input_tokens, 0);
    records[i].output_tokens = std::max(requests[i].output_tokens, 1);
  }
  SimReplica replica(model, records);
  size_t next = 0;
  while (next < records.size() || replica.NextEventTime() < SimReplica::kNever) {
    double t_arrival = next < records.size() ? records[next].arrival_s : SimReplica::kNever;
    if (replica.NextEventTime() <= t_arrival) {
      replica.FinishSegment(replica.NextEventTime());
    } else {
      replica.Enqueue(static_cast<uint32_t>(next++), t_arrival);
    }
  }
  return SummarizeRequests(records, slo, {}).attainment;
}

Result<OracleBound> ComputeOracleBound(const SimulationConfig& config, const ReplicaModel& model,
                                       const Trace& trace, double end_s) {
  if (trace.requests.empty()) return InvalidArgument("the trace has no requests", "trace");
  if (!(end_s > 0)) return InvalidArgument("must be > 0", "end_s");
  WorkWeights w = ComputeWorkWeights(model, trace);
  auto work = [&](const TraceRequest& r) {
    return r.input_tokens * w.per_input_token + r.output_tokens * w.per_output_token;
  };
  // A sample spread over the whole trace, so the mix matches the trace's.
  std::vector<TraceRequest> sample;
  size_t stride = std::max<size_t>(1, trace.requests.size() / kCalibrationRequests);
  double sample_work = 0;
  for (size_t i = 0; i < trace.requests.size(); i += stride) {
    sample.push_back(trace.requests[i]);
    sample_work += work(trace.requests[i]);
  }
  double mean_work = sample_work / static_cast<double>(sample.size());
  auto meets = [&](double rps) {
    for (size_t i = 0; i < sample.size(); ++i) sample[i].arrival_s = i / rps;
    return SingleReplicaAttainment(model, sample, config.slo) >= config.slo.target_ratio;
  };
  double lo = 0, hi = 1;
  while (meets(hi) && hi < 1e6) {
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < kBisectionSteps; ++i) {
    double mid = (lo + hi) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  OracleBound bound;
  // The upper end of the bracket: never underestimates capacity (keeps the bound low).
  bound.capacity_rps = hi;
  bound.capacity_work_per_s = hi * mean_work;
  bound.bucket_s = std::max(config.oracle_bucket.count(), 1e-3);
  size_t buckets = static_cast<size_t>(std::ceil(end_s / bound.bucket_s));
  std::vector<double> load(buckets, 0.0);
  for (const auto& r : trace.requests) {
    size_t b = std::min(static_cast<size_t>(r.arrival_s / bound.bucket_s), buckets - 1);
    load[b] += work(r);
  }
  double replica_seconds = 0;
  for (size_t b = 0; b < buckets; ++b) {
    double len = std::min(bound.bucket_s, end_s - b * bound.bucket_s);
    double n = std::max<double>(config.service.min_replicas,
                                load[b] / (bound.capacity_work_per_s * len));
    bound.replicas.push_back(n);
    replica_seconds += n * len;
  }
  bound.gpu_hours = replica_seconds * config.service.gpus_per_replica / 3600.0;
  return bound;
}

}  // namespace gpuscale::sim
