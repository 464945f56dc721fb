// Variants of a service (issue 47): the ways one replica may run, each a GPU type, a replica
// shape and a price. A service lists several to run a mixed fleet (H100 and A100, spot and on
// demand); a service that lists none runs one implicit variant built from
// `service.gpus_per_replica` and `replica_model.gpu` (EffectiveVariants), with no price.
//
// Plain values; thread-compatible.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::sim {

struct VariantSpec {
  std::string name;               // unique within the service; names the replicas' variant
  std::string gpu_type = "h100";  // a calibrated preset (sim::FindGpuSpec), lower case
  int gpus_per_replica = 1;       // also the replica model's tensor_parallel
  double price_per_gpu_hour = 0;  // currency units per GPU-hour; required (> 0) when listed
  bool spot = false;              // preemptible capacity
  // Spot only: the warning a provider gives before it reclaims the GPUs (AWS: 120 s).
  Seconds preemption_notice{120};
  // Spot only: preemptions per replica-hour of the simulator's seeded Poisson process.
  double preemptions_per_hour = 0.05;
  // A replica's capacity at the SLO in prompt-token equivalents per second, from a capacity
  // profile measured on this type (`profile:` in a config); 0: from the simulator's model.
  double capacity_tokens_per_second = 0;

  double PricePerReplicaHour() const { return price_per_gpu_hour * gpus_per_replica; }

  friend bool operator==(const VariantSpec&, const VariantSpec&) = default;
};

// The most GPUs of one type the service may hold at once (the per-type limiter of llm-d's
// variant autoscaler).
struct GpuTypeLimit {
  std::string gpu_type;  // lower case
  int max_gpus = 0;

  friend bool operator==(const GpuTypeLimit&, const GpuTypeLimit&) = default;
};

// The cost envelope of a service with variants.
struct VariantPlan {
  std::vector<VariantSpec> variants;  // empty: one implicit variant
  std::vector<GpuTypeLimit> gpu_limits;
  double budget_per_hour = 0;  // price per hour over all replicas; 0: no budget
  // Share (0..1) of the needed capacity kept on on-demand variants, so that a wave of spot
  // preemptions cannot take the service below it (SkyServe's on-demand base). Default 0.
  double on_demand_base_ratio = 0;
  // Long prompts to the faster type: a slower type's replica takes a prompt only if it
  // prefills it alone within this share (0..1) of the TTFT target while a faster type's is
  // ready (sim::SetLongPromptLimits, route::Candidate::max_prompt_tokens). 0: off. Default 0.5.
  double long_prompt_ttft_share = 0.5;

  friend bool operator==(const VariantPlan&, const VariantPlan&) = default;
};

// Errors: kInvalidArgument naming the field (`service.variants[1].gpu_type`): an empty or
// duplicate name, a GPU type the simulator has no calibrated model of, gpus_per_replica
// outside [1, gpus_per_node], a price <= 0, a negative notice, rate, limit or budget, a base
// ratio outside [0, 1].
Status ValidateVariantPlan(const VariantPlan& plan, int gpus_per_node);

}  // namespace gpuscale::sim
