#include "sim/reactive_plan.h"

#include <algorithm>
#include <cmath>

namespace gpuscale::sim {
namespace {

// Holding a need longer than 10 buckets (10 min by default) is what a static fleet does.
constexpr int kMaxHoldBuckets = 10;

// What every schedule shares: the curves, each bucket's need and length, the requests.
struct Buckets {
  const std::vector<FleetCurve>& curves;
  std::vector<int> needs;
  std::vector<double> lengths;
  long requests = 0;
};

ReactivePlan Schedule(const Buckets& in, const ReactiveSetting& s, int hold, int spare) {
  ReactivePlan plan;
  plan.lag_buckets = s.lag_buckets;
  plan.hold_buckets = hold;
  plan.spare_replicas = spare;
  plan.bucket_s = s.bucket_s;
  const int buckets = static_cast<int>(in.curves.size());
  long violations = 0;
  double replica_seconds = 0;
  std::vector<double> fleet;  // StartReplicaSeconds takes fractional fleets
  for (int b = 0; b < buckets; ++b) {
    int n = s.initial_replicas;
    if (b >= s.lag_buckets) {
      const int last = b - s.lag_buckets;
      int need = 0;
      for (int j = std::max(0, last - hold + 1); j <= last; ++j) {
        need = std::max(need, in.needs[j]);
      }
      n = std::min(need + spare, s.max_replicas);
    }
    n = std::max(n, 1);
    plan.replicas.push_back(n);
    violations += CurveViolations(in.curves[b], n);
    replica_seconds += n * in.lengths[b];
    fleet.push_back(n);
  }
  replica_seconds += StartReplicaSeconds(fleet, in.lengths, s.initial_replicas, s.cold_start_s);
  plan.gpu_hours = replica_seconds * s.gpus_per_replica / 3600.0;
  plan.attainment =
      in.requests > 0 ? 1 - static_cast<double>(violations) / static_cast<double>(in.requests) : 1;
  plan.meets_target = plan.attainment >= s.target_ratio;
  return plan;
}

}  // namespace

ReactiveSetting ReactiveSettingFor(const SimulationConfig& config, double bucket_s) {
  ReactiveSetting s;
  s.target_ratio = config.slo.target_ratio;
  s.cold_start_s = config.service.cold_start.count();
  s.lag_buckets = 1 + static_cast<int>(std::ceil(s.cold_start_s / std::max(bucket_s, 1e-3) - 1e-9));
  s.initial_replicas = config.service.ReadyAtStart();
  s.max_replicas = std::max(config.FleetCeiling(), 1);
  s.gpus_per_replica = config.service.gpus_per_replica;
  s.bucket_s = bucket_s;
  return s;
}

std::vector<int> BucketNeeds(const std::vector<FleetCurve>& curves, double target_ratio) {
  std::vector<int> needs;
  needs.reserve(curves.size());
  for (const FleetCurve& c : curves) {
    const double allowed = (1 - target_ratio) * c.scored;
    int need = c.n_low + std::max(static_cast<int>(c.violations.size()) - 1, 0);
    for (size_t i = 0; i < c.violations.size(); ++i) {
      if (c.violations[i] <= allowed) {
        need = c.n_low + static_cast<int>(i);
        break;
      }
    }
    needs.push_back(need);
  }
  return needs;
}

int CurveViolations(const FleetCurve& curve, int n) {
  if (curve.violations.empty()) return 0;
  const int last = static_cast<int>(curve.violations.size()) - 1;
  return curve.violations[std::clamp(n - curve.n_low, 0, last)];
}

ReactivePlan CheapestReactivePlan(const std::vector<FleetCurve>& curves,
                                  const ReactiveSetting& setting) {
  ReactivePlan best;
  best.lag_buckets = setting.lag_buckets;
  best.bucket_s = setting.bucket_s;
  best.attainment = 1;
  if (curves.empty()) {
    best.meets_target = true;
    return best;
  }
  Buckets in{curves, BucketNeeds(curves, setting.target_ratio), {}, 0};
  for (const FleetCurve& c : curves) {
    in.lengths.push_back(c.len);
    in.requests += c.scored;
  }
  bool have = false;
  for (int hold = 1; hold <= kMaxHoldBuckets; ++hold) {
    for (int spare = 0; spare <= std::max(setting.max_replicas, 0); ++spare) {
      ReactivePlan p = Schedule(in, setting, hold, spare);
      const bool better =
          !have || (p.meets_target && (!best.meets_target || p.gpu_hours < best.gpu_hours)) ||
          (!p.meets_target && !best.meets_target &&
           (p.attainment > best.attainment ||
            (p.attainment == best.attainment && p.gpu_hours < best.gpu_hours)));
      if (better) {
        best = std::move(p);
        have = true;
      }
    }
  }
  best.no_headroom_attainment = Schedule(in, setting, 1, 0).attainment;
  return best;
}

}  // namespace gpuscale::sim
