// The pair's oracle bound (sim/disagg.h): one oracle bound per pool, each on the part of the
// work its pool does, each relaxed so that the sum stays a lower bound:
//  - prefill: every request with its prompt and one output token, against the whole TTFT
//    target (the transfer that follows costs it nothing) and no TPOT target;
//  - decode: every request's remaining output tokens with no prompt (its KV neither read by
//    the decode steps nor reserved: fewer seconds per step and more sequences per replica than
//    the real decode pool gets), against the TPOT target and no TTFT target.
// Each pool may miss the pair's whole violation budget, where the pair's misses are shared.
#include <limits>

#include "sim/disagg.h"
#include "sim/oracle.h"

namespace gpuscale::sim {
namespace {

constexpr double kNoTarget = std::numeric_limits<double>::max();

Trace RoleTrace(const Trace& trace, bool prefill) {
  Trace out;
  out.requests.reserve(trace.requests.size());
  for (const TraceRequest& r : trace.requests) {
    out.requests.push_back(prefill
                               ? TraceRequest{r.arrival_s, r.input_tokens, 1}
                               : TraceRequest{r.arrival_s, 0, std::max(r.output_tokens - 1, 1)});
  }
  return out;
}

SimulationConfig RoleConfig(const SimulationConfig& config, bool prefill) {
  SimulationConfig c = config;
  c.disaggregated.reset();
  c.service = prefill ? config.disaggregated->prefill : config.disaggregated->decode;
  (prefill ? c.slo.tpot_seconds : c.slo.ttft_seconds) = kNoTarget;
  return c;
}

}  // namespace

Status ComputeDisaggOracle(const SimulationConfig& config, const DisaggModels& models,
                           const Trace& trace, DisaggReport& report,
                           const OracleParallelFor& parallel_for) {
  GS_RETURN_IF_ERROR(ValidateDisaggConfig(config));
  const double end_s = std::max(report.total.duration_s, 1.0);
  GS_ASSIGN_OR_RETURN(OracleBound prefill,
                      ComputeOracleBound(RoleConfig(config, true), *models.prefill,
                                         RoleTrace(trace, true), end_s, {}, parallel_for));
  GS_ASSIGN_OR_RETURN(OracleBound decode,
                      ComputeOracleBound(RoleConfig(config, false), *models.decode,
                                         RoleTrace(trace, false), end_s, {}, parallel_for));
  report.prefill.oracle_gpu_hours = prefill.gpu_hours;
  report.decode.oracle_gpu_hours = decode.gpu_hours;
  report.oracle_gpu_hours = prefill.gpu_hours + decode.gpu_hours;
  return OkStatus();
}

}  // namespace gpuscale::sim
