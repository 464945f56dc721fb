// Simulation config files (`gpuscale simulate --config sim.yaml`) -> sim::SimulationConfig
// plus the policy envelope. Schema (every field optional unless marked; defaults in
// sim/simulation.h; full example in examples/sim/ and docs/simulation.md):
//
//   cluster: {nodes: 2, gpus_per_node: 8, gpu_type: H100, gpu_memory_mb: 81559}
//   service: {name: chat, model: llama-3-8b, gpus_per_replica: 1, min_replicas: 1,
//             max_replicas: 16, initial_replicas: 1,  # or auto: sim::WarmStartReplicas
//             cold_start_seconds: 60,
//             drain_timeout_seconds: 300}
//   replica_model: {gpu: h100, max_batch_size: 256, kv_cache_tokens: 0,
//                   max_batched_tokens: 8192}       # tensor_parallel = gpus_per_replica
//   router: least_outstanding                       # or round_robin, or a mapping:
//   router: {kind: least_outstanding, slow_start_seconds: 20}   # config/router_config.h
//   admission: {max_in_flight_per_replica: 8, sheddable_max_wait_seconds: 2,  # optional:
//               default_priority: standard}  # priorities and fair share at the door,
//                                            # config/admission_config.h
//   control_interval_seconds: 15
//   scrape_interval_seconds: 5
//   slo: {ttft_seconds: 1, tpot_seconds: 0.05, target_ratio: 0.99}
//   oracle_bucket_seconds: 60
//   faults: {crash_at_seconds: [600], metrics_outages: [{from_seconds: 900, to_seconds: 960}],
//            preemption_seed: 1}                    # seeds spot variants' preemptions
//   (service.variants, gpu_limits, budget_per_hour, on_demand_base_ratio:
//    config/sim_variant_config.h)
//   policy: {family: slo, ...}                      # required: a policy envelope
//
// Or a prefill/decode disaggregated service (sim/disagg.h), with a policy per pool and no
// top-level `policy`; a pool's replica fields default to `service`'s:
//
//   disaggregated:
//     gpu_budget: 16                # GPUs both pools share (0 or absent: the whole cluster)
//     link: rdma-400g               # nvlink | rdma-100g | rdma-400g | <Gb/s>
//     prefill: {gpus_per_replica: 1, min_replicas: 1, max_replicas: 12, initial_replicas: 2,
//               cold_start_seconds: 60, drain_timeout_seconds: 300,
//               policy: {family: disagg, disagg: {role: prefill}}}
//     decode:  {..., policy: {family: disagg, disagg: {role: decode}}}
//
// The service's min/max replicas are the policy's bounds: they are copied into the policy
// envelope when it has none, and a differing value there is an error. Errors name the field
// and line: `service.cold_start_seconds: expected a number, got 'abc' (line 9)`.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "config/policy_config.h"
#include "core/result.h"
#include "sim/simulation.h"

namespace gpuscale::config {

struct SimConfigFile {
  sim::SimulationConfig sim;
  YAML::Node policy;  // the envelope, with min/max_replicas filled from `service`
  // Disaggregated: each pool's envelope, with min/max_replicas filled from the pool.
  YAML::Node prefill_policy = {};
  YAML::Node decode_policy = {};
};

// Also an error: a slo policy (or a disaggregated pool's disagg policy) whose `profile:` was
// measured at another SLO than `slo` (config/policy_profile.h). A relative profile path
// resolves against the working directory.
Result<SimConfigFile> ParseSimConfig(const YAML::Node& root);
// Errors: kNotFound when the file is missing, then those of ParseSimConfig. A relative
// `policy.slo.profile` or `disaggregated.<pool>.policy.disagg.profile` resolves against the
// file's folder (made absolute in the tree).
Result<SimConfigFile> LoadSimConfigFile(const std::string& path);

// Every section of a simulation config but `policy`, which may be absent and is not read:
// what `gpuscale profile --sim` needs (the replica model and the SLO), from a config that
// may not have a policy yet or whose policy names the profile being made. Errors: those of
// LoadSimConfigFile about the other sections.
Result<sim::SimulationConfig> LoadSimConfigSections(const std::string& path);

// A fresh policy instance from the file's envelope (each simulation needs its own: policies
// keep state). Errors: those of ParsePolicy, fields prefixed with "policy.".
Result<PolicySpec> MakeSimPolicy(const SimConfigFile& file);

// A fresh policy for one pool of a disaggregated file. A `disagg` policy with neither
// capacity_tokens_per_second nor a profile sizes its pool from `model`'s figures for the role
// (sim/role_capacity.h: a load test of the calibrated model, not a fit to any trace; what
// `gpuscale profile --sim --role` writes).
// Errors: those of ParsePolicy / ParseDisaggPolicyConfig, fields prefixed with
// "disaggregated.<role>.policy."; a `disagg` block whose role is the other pool's.
// REQUIRES: file.sim.disaggregated set.
Result<PolicySpec> MakeDisaggPoolPolicy(const SimConfigFile& file, scale::PoolRole role,
                                        const sim::ReplicaModel& model);

}  // namespace gpuscale::config
