// Prefill/decode disaggregated serving in the simulator (issue 24): a service split into a
// prefill pool and a decode pool, sized apart by their own controllers and policies, on one
// shared GPU budget.
//
// A request goes to a prefill replica (route::Picker over the prefill pool), which prefills
// its prompt and makes its first token; its KV cache then crosses the link to a decode replica
// (route::Picker over the decode pool, picked when the transfer ends) in
//   transfer_s = prompt tokens x KV bytes per token (the model's layers x KV heads x head dim
//                x 2 (K, V) x 2 bytes) / link bytes per second,
// and the decode replica generates the remaining tokens. The user sees
//   TTFT = queue + prefill + transfer (the first token is streamed once decode holds the KV)
//   TPOT = (finish - TTFT's instant) / (output tokens - 1),
// so attainment means what it means in an aggregated run (sim::MeetsSlo).
//
// Both replica roles are the calibrated aggregated model (sim/replica_model.h, the same data)
// doing one kind of work: a prefill replica serves requests of one output token (prefill,
// never a decode batch); a decode replica admits requests whose prompt is already in KV (no
// prefill chunk) and runs decode steps, the KV of prompt + output reserved for each.
//
// Each pool is pool 0 (prefill) / 1 (decode) of an alloc::PoolBudget over gpu_budget GPUs of
// the cluster: a scale-up never exceeds the budget nor takes GPUs the other pool needs for its
// minimum (Dynamo #12428); the refused replica stays pending, as when a cluster is full.
//
// Pure and deterministic (see simulation.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "scale/policy.h"
#include "sim/oracle.h"
#include "sim/simulation.h"

namespace gpuscale::sim {

// `nvlink` (the GPU's NVLink bandwidth per direction, from the replica model's GPU facts:
// H100 450 GB/s = 3600 Gb/s), `rdma-100g`, `rdma-400g`, or a positive number of Gb/s.
// Errors: kInvalidArgument (field "link") naming the presets.
Result<LinkSpec> ParseLink(std::string_view text, std::string_view gpu);

// Seconds to move `prompt_tokens` tokens of KV cache over `link`.
double KvTransferSeconds(int64_t prompt_tokens, int64_t kv_bytes_per_token, const LinkSpec& link);

// One pool's share of a run. `attainment` is of the pool's own target: prefill, the requests
// whose queue + prefill + transfer met the TTFT target; decode, those that met the TPOT target
// (of the requests that reached it).
struct PoolReport {
  std::string role;    // "prefill" or "decode"
  std::string policy;  // family
  int64_t requests = 0;
  int64_t slo_met = 0;
  double attainment = 0;
  double gpu_hours = 0;
  int scale_ups = 0, scale_downs = 0;
  int replicas_started = 0, replicas_stopped = 0;
  int peak_replicas = 0;
  int64_t aborted = 0;
  int controller_errors = 0;
  double oracle_gpu_hours = -1;  // the pool's part of the pair's bound; < 0: not computed
};

struct DisaggReport {
  SimReport total;  // user-level: attainment, latencies, gpu_hours of both pools
  PoolReport prefill, decode;
  Percentiles transfer_s;
  int peak_gpus = 0;  // most GPUs both pools held at once (<= the budget)
  int gpu_budget = 0;
  double oracle_gpu_hours = -1;  // the pair's bound (sim/disagg_oracle.cc); < 0: not computed
};

struct DisaggResult {
  DisaggReport report;
  std::vector<TimelineRow> prefill_timeline, decode_timeline;
  std::vector<std::string> errors;  // "t=...: prefill: ..."
};

// The replica model of each pool: `base` with the pool's tensor parallel.
// REQUIRES: both non-null, outliving the run.
struct DisaggModels {
  const ReplicaModel* prefill = nullptr;
  const ReplicaModel* decode = nullptr;
  int64_t kv_bytes_per_token = 0;  // of the served model
};

// Errors: those of ValidateSimulationConfig for the shared sections; kInvalidArgument naming
// the field for a pool (`disaggregated.prefill.min_replicas`, ...) or a budget the minimums or
// one replica do not fit (`disaggregated.gpu_budget`). REQUIRES: config.disaggregated set.
Status ValidateDisaggConfig(const SimulationConfig& config);

// Runs `trace` through both pools. Errors: those of ValidateDisaggConfig, an empty trace,
// a trace spanning over kMaxSimulatedTicks ticks; kInvalidArgument ("policy") for a null
// policy.
Result<DisaggResult> RunDisaggSimulation(const SimulationConfig& config, const DisaggModels& models,
                                         std::unique_ptr<scale::Policy> prefill_policy,
                                         std::unique_ptr<scale::Policy> decode_policy,
                                         const Trace& trace, const SimOptions& options = {});

// The clairvoyant lower bound for the pair: the oracle bound (sim/oracle.h) of the prefill pool
// on the trace's prompts (one output token each, the whole TTFT target, no transfer) plus the
// decode pool's on its outputs (prompts already in KV, the TPOT target), each pool given the
// pair's whole violation budget. Every relaxation only lowers it. Fills the three
// oracle_gpu_hours fields of `report`. Errors: those of ComputeOracleBound.
Status ComputeDisaggOracle(const SimulationConfig& config, const DisaggModels& models,
                           const Trace& trace, DisaggReport& report,
                           const OracleParallelFor& parallel_for = {});

}  // namespace gpuscale::sim
