#include "sim/static_mix.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "route/picker.h"
#include "sim/report.h"
#include "sim/sim_replica.h"

namespace gpuscale::sim {
namespace {

// The smallest n in [1, max_n] with meets(n), or 0 when max_n does not meet it.
int SmallestMeeting(int max_n, const std::function<bool(int)>& meets) {
  if (max_n < 1 || !meets(max_n)) return 0;
  int lo = 1, hi = max_n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (meets(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The most replicas of a variant the service can hold: its type's simulated GPUs (each type
// has cluster.nodes x gpus_per_node, sim_orchestrator.h), its gpu_limits entry, max_replicas.
int VariantCeiling(const SimulationConfig& config, const VariantSpec& v) {
  const int per_replica = std::max(v.gpus_per_replica, 1);
  int gpus = config.cluster.nodes * (config.cluster.gpus_per_node / per_replica) * per_replica;
  for (const GpuTypeLimit& l : config.service.fleet.gpu_limits) {
    if (l.gpu_type == v.gpu_type) gpus = std::min(gpus, l.max_gpus);
  }
  return std::min(gpus / per_replica, config.service.max_replicas);
}

}  // namespace

std::vector<RequestRecord> ReplayOnFleet(const std::vector<MixedReplica>& fleet,
                                         const std::vector<TraceRequest>& requests,
                                         route::PickerKind router) {
  std::vector<RequestRecord> records(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    records[i].arrival_s = requests[i].arrival_s;
    records[i].input_tokens = std::max(requests[i].input_tokens, 0);
    records[i].output_tokens = std::max(requests[i].output_tokens, 1);
  }
  std::vector<SimReplica> replicas;
  replicas.reserve(fleet.size());
  for (const MixedReplica& r : fleet) replicas.emplace_back(*r.model, records);
  constexpr double kWarm = -std::numeric_limits<double>::infinity();
  std::vector<route::Candidate> candidates(fleet.size());
  for (size_t i = 0; i < fleet.size(); ++i) {
    candidates[i] = {0, kWarm, static_cast<uint64_t>(i)};
    candidates[i].capacity_weight = fleet[i].capacity;
    candidates[i].max_prompt_tokens = fleet[i].max_prompt_tokens;
  }
  route::Picker picker(route::PickerSpec{router});
  size_t next = 0;
  while (true) {
    size_t first = 0;  // a linear scan: fleets are tens of replicas
    for (size_t i = 1; i < replicas.size(); ++i) {
      if (replicas[i].NextEventTime() < replicas[first].NextEventTime()) first = i;
    }
    const double t_segment = replicas[first].NextEventTime();
    const double t_arrival = next < records.size() ? records[next].arrival_s : SimReplica::kNever;
    if (t_segment == SimReplica::kNever && t_arrival == SimReplica::kNever) break;
    if (t_segment <= t_arrival) {
      replicas[first].FinishSegment(t_segment);
      continue;
    }
    for (size_t i = 0; i < replicas.size(); ++i)
      candidates[i].outstanding = replicas[i].Outstanding();
    const size_t target =
        *picker.Pick(candidates, t_arrival, std::nullopt, records[next].input_tokens);
    replicas[target].Enqueue(static_cast<uint32_t>(next++), t_arrival);
  }
  return records;
}

double MixedFleetAttainment(const std::vector<MixedReplica>& fleet,
                            const std::vector<TraceRequest>& requests, route::PickerKind router,
                            const SloSpec& slo) {
  if (requests.empty()) return 0;
  const std::vector<RequestRecord> records = ReplayOnFleet(fleet, requests, router);
  const auto met = std::count_if(records.begin(), records.end(),
                                 [&](const RequestRecord& r) { return MeetsSlo(r, slo); });
  return static_cast<double>(met) / static_cast<double>(records.size());
}

std::optional<MixChoice> CheapestMix(const std::vector<double>& prices,
                                     const std::vector<int>& max_replicas, int max_total,
                                     const std::function<bool(const std::vector<int>&)>& meets) {
  const size_t n = prices.size();
  std::map<std::vector<int>, bool> seen;
  auto test = [&](const std::vector<int>& counts) {
    int total = 0;
    for (int c : counts) total += c;
    if (total > max_total) return false;
    auto [it, fresh] = seen.try_emplace(counts, false);
    if (fresh) it->second = meets(counts);
    return it->second;
  };
  auto with = [n](size_t i, int a, size_t j = 0, int b = 0) {
    std::vector<int> counts(n, 0);
    counts[i] = a;
    if (b > 0) counts[j] = b;
    return counts;
  };
  std::optional<MixChoice> best;
  auto offer = [&](std::vector<int> counts) {
    double price = 0;
    for (size_t i = 0; i < n; ++i) price += counts[i] * prices[i];
    if (!best || price < best->price - 1e-9) best = MixChoice{std::move(counts), price};
  };
  std::vector<int> single(n, 0);
  for (size_t i = 0; i < n; ++i) {
    single[i] = SmallestMeeting(max_replicas[i], [&](int k) { return test(with(i, k)); });
    if (single[i] > 0) offer(with(i, single[i]));
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const int top_i = single[i] > 0 ? single[i] - 1 : max_replicas[i];
      for (int a = 1; a <= top_i; ++a) {
        // As many of j as stay cheaper than the best so far and than j alone.
        int top_j = single[j] > 0 ? single[j] - 1 : max_replicas[j];
        if (best) {
          const double room = (best->price - a * prices[i] - 1e-9) / prices[j];
          top_j = std::min(top_j, static_cast<int>(std::floor(room)));
        }
        const int b = SmallestMeeting(top_j, [&](int k) { return test(with(i, a, j, k)); });
        if (b > 0) offer(with(i, a, j, b));
      }
    }
  }
  return best;
}

Result<StaticMix> CheapestStaticMix(const SimulationConfig& config,
                                    const std::vector<VariantRuntime>& variants, const Trace& trace,
                                    double end_s) {
  if (trace.requests.empty()) return InvalidArgument("static mix: empty trace");
  if (end_s <= 0) return InvalidArgument("static mix: end_s must be > 0");
  std::vector<size_t> on_demand;  // indexes into variants
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!variants[i].spec.spot) on_demand.push_back(i);
  }
  if (on_demand.empty()) return InvalidArgument("static mix: no on-demand variant");
  StaticMix out;
  std::vector<double> prices;
  std::vector<int> ceilings;
  for (size_t i : on_demand) {
    prices.push_back(variants[i].spec.PricePerReplicaHour() * end_s / 3600);
    ceilings.push_back(VariantCeiling(config, variants[i].spec));
  }
  std::map<std::vector<int>, double> attainment;  // per count vector over on_demand
  auto replay = [&](const std::vector<int>& counts) {
    std::vector<MixedReplica> fleet;
    for (size_t k = 0; k < counts.size(); ++k) {
      for (int r = 0; r < counts[k]; ++r) {
        const VariantRuntime& v = variants[on_demand[k]];
        fleet.push_back({v.model, v.capacity, v.max_prompt_tokens});
      }
    }
    ++out.replays;
    const double a = MixedFleetAttainment(fleet, trace.requests, config.router.kind, config.slo);
    attainment[counts] = a;
    return a >= config.slo.target_ratio;
  };
  auto point = [&](const std::vector<int>& counts) {
    StaticMixPoint p;
    p.replicas.assign(variants.size(), 0);
    std::vector<std::string> parts;
    for (size_t k = 0; k < counts.size(); ++k) {
      const VariantSpec& v = variants[on_demand[k]].spec;
      p.replicas[on_demand[k]] = counts[k];
      p.cost += counts[k] * prices[k];
      p.gpu_hours += counts[k] * v.gpus_per_replica * end_s / 3600;
      if (counts[k] > 0) parts.push_back(fmt::format("{} x{}", v.name, counts[k]));
    }
    p.name = fmt::format("{}", fmt::join(parts, " + "));
    p.attainment = attainment[counts];
    return p;
  };
  const auto best = CheapestMix(prices, ceilings, config.service.max_replicas, replay);
  if (best) out.cheapest = point(best->replicas);
  out.single.resize(variants.size());
  for (size_t k = 0; k < on_demand.size(); ++k) {
    // The smallest of this variant alone that met the target among those replayed: CheapestMix
    // bisected each one alone first, so it is there when one exists.
    std::optional<int> smallest;
    for (const auto& [counts, a] : attainment) {
      const bool alone = std::count(counts.begin(), counts.end(), 0) ==
                         static_cast<std::ptrdiff_t>(counts.size()) - 1;
      if (alone && counts[k] > 0 && a >= config.slo.target_ratio &&
          (!smallest || counts[k] < *smallest)) {
        smallest = counts[k];
      }
    }
    if (smallest) {
      std::vector<int> counts(on_demand.size(), 0);
      counts[k] = *smallest;
      out.single[on_demand[k]] = point(counts);
    }
  }
  return out;
}

}  // namespace gpuscale::sim
