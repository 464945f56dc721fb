#include "sim/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpuscale::sim {

Percentiles ComputePercentiles(std::vector<double>& values) {
  Percentiles p;
  if (values.empty()) return p;
  auto rank = [&](double q) {
    size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
    k = std::clamp<size_t>(k, 1, values.size()) - 1;
    std::nth_element(values.begin(), values.begin() + static_cast<long>(k), values.end());
    return values[k];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  return p;
}

bool MeetsSlo(const RequestRecord& r, const SloSpec& slo) {
  if (r.aborted || r.finish_s < 0 || r.first_token_s - r.arrival_s > slo.ttft_seconds) {
    return false;
  }
  return r.output_tokens <= 1 ||
         (r.finish_s - r.first_token_s) / (r.output_tokens - 1) <= slo.tpot_seconds;
}

SimReport SummarizeRequests(const std::vector<RequestRecord>& requests, const SloSpec& slo,
                            SimReport report) {
  std::vector<double> ttft, tpot, e2e;
  ttft.reserve(requests.size());
  e2e.reserve(requests.size());
  tpot.reserve(requests.size());
  report.requests = static_cast<int64_t>(requests.size());
  report.completed = 0;
  report.slo_met = 0;
  report.fresh_replica_misses = 0;
  report.prompt_tokens = 0;
  report.prefix_cache_hit_tokens = 0;
  for (const auto& r : requests) {
    report.prompt_tokens += r.input_tokens;
    report.prefix_cache_hit_tokens += r.cached_tokens;
    const bool met = MeetsSlo(r, slo);  // false for aborted and unfinished requests too
    if (r.on_fresh_replica && !met) ++report.fresh_replica_misses;
    if (r.aborted || r.finish_s < 0) continue;
    ++report.completed;
    double first = r.first_token_s - r.arrival_s;
    ttft.push_back(first);
    e2e.push_back(r.finish_s - r.arrival_s);
    if (r.output_tokens > 1) {
      tpot.push_back((r.finish_s - r.first_token_s) / (r.output_tokens - 1));
    }
    if (met) ++report.slo_met;
  }
  report.attainment = report.requests
                          ? static_cast<double>(report.slo_met) /
                                static_cast<double>(report.requests)
                          : 0;
  report.prefix_hit_ratio = report.prompt_tokens > 0
                                ? static_cast<double>(report.prefix_cache_hit_tokens) /
                                      static_cast<double>(report.prompt_tokens)
                                : 0;
  report.ttft_s = ComputePercentiles(ttft);
  report.tpot_s = ComputePercentiles(tpot);
  report.e2e_s = ComputePercentiles(e2e);
  return report;
}

namespace {

// "1 replica", "8 replicas".
std::string Replicas(int n) { return fmt::format("{} replica{}", n, n == 1 ? "" : "s"); }

std::string StaticFleetSummary(const StaticFleet& fleet) {
  return fmt::format("{}, {:.3f} GPU-hours, attainment {:.4f}{}", Replicas(fleet.replicas),
                     fleet.gpu_hours, fleet.attainment,
                     fleet.meets_target ? ""
                                        : " (the target is out of reach: no more replicas fit "
                                          "max_replicas and the cluster)");
}

// "7: 0.9870 at 6.817, 8: 0.9994 at 7.791": each replayed size's attainment and GPU-hours.
std::string FrontierPoints(const StaticFrontier& frontier) {
  std::string out;
  for (const FleetPoint& p : frontier.points) {
    out += fmt::format("{}{}: {:.4f} at {:.3f}", out.empty() ? "" : ", ", p.replicas, p.attainment,
                       p.gpu_hours);
  }
  return out;
}

std::string DominatedBySummary(const FrontierVerdict& verdict, const SimReport& r) {
  if (const auto& p = verdict.dominated_by) {
    return fmt::format("{}: attainment {:.4f} at {:.3f} GPU-hours, against this run's {:.4f} at "
                       "{:.3f}",
                       Replicas(p->replicas), p->attainment, p->gpu_hours, r.attainment,
                       r.gpu_hours);
  }
  return fmt::format("none: no static fleet attains {:.4f} at {:.3f} GPU-hours or less, with one "
                     "of them better",
                     r.attainment, r.gpu_hours);
}

std::string CostVsStaticSummary(const FrontierVerdict& verdict, const SimReport& r,
                                const StaticFleet& smallest) {
  if (!verdict.cost_vs_static) {
    return fmt::format("- (no static fleet within the ceiling meets the target; {} attain "
                       "{:.4f})",
                       Replicas(smallest.replicas), smallest.attainment);
  }
  return fmt::format("{:.3f} ({:.3f} / {:.3f} GPU-hours of the static fleet of {})",
                     *verdict.cost_vs_static, r.gpu_hours, smallest.gpu_hours,
                     Replicas(smallest.replicas));
}

// "reactive (+3, hold 2)": the spare replicas and the hold, in buckets.
std::string ReactiveName(const ReactivePlan& plan) {
  return fmt::format("reactive (+{}, hold {})", plan.spare_replicas, plan.hold_buckets);
}

std::string ReactiveSummary(const ReactivePlan& plan) {
  const double bucket_s = plan.bucket_s;
  const std::string followed =
      plan.hold_buckets == 1
          ? fmt::format("the exact need of the {:.0f} s", bucket_s)
          : fmt::format("the largest exact need of the {} x {:.0f} s", plan.hold_buckets,
                        bucket_s);
  return fmt::format("{:.3f} GPU-hours, attainment {:.4f}{}: every {:.0f} s runs {} ending "
                     "{:.0f} s before it + {} spare",
                     plan.gpu_hours, plan.attainment,
                     plan.meets_target ? "" : " (no such schedule meets the target)", bucket_s,
                     followed, (plan.lag_buckets - 1) * bucket_s, plan.spare_replicas);
}

// The cheapest static mix, each variant alone, and the run's cost over the cheapest.
std::string StaticMixSummary(const StaticMix& mix, const SimReport& r) {
  auto point = [](const StaticMixPoint& p) {
    return fmt::format("{} cost {:.2f} at {:.4f}", p.name, p.cost, p.attainment);
  };
  std::string out = mix.cheapest ? point(*mix.cheapest) : "none meets the target";
  for (const auto& single : mix.single) {
    if (single) out += fmt::format("; alone {}", point(*single));
  }
  if (mix.cheapest && mix.cheapest->cost > 0 && r.cost > 0) {
    out += fmt::format("; this run {:.3f}x the cheapest", r.cost / mix.cheapest->cost);
  }
  return out + fmt::format(" ({} replays)", mix.replays);
}

// The compare table's last two columns: GPU-hours over the smallest static fleet meeting the
// target ("-" where none does) and the size of the static fleet that dominates the run ("-"
// where none does).
std::string FrontierColumns(const StaticFrontier& frontier, const SimReport& r) {
  const FrontierVerdict v = JudgeAgainstFrontier(frontier, {r.attainment, r.gpu_hours});
  return fmt::format(" {:>8} {:>12}",
                     v.cost_vs_static ? fmt::format("{:.3f}", *v.cost_vs_static) : "-",
                     v.dominated_by ? Replicas(v.dominated_by->replicas) : "-");
}

}  // namespace

PlanComparison CompareWithPlan(const OraclePlan& plan, const std::vector<TimelineRow>& timeline) {
  PlanComparison c;
  if (plan.replicas.empty() || timeline.empty() || !(plan.bucket_s > 0)) return c;
  const auto [lowest, highest] = std::minmax_element(plan.replicas.begin(), plan.replicas.end());
  c.plan_min = *lowest;
  c.plan_max = *highest;
  double seconds = 0, plan_sum = 0, run_sum = 0;
  for (size_t i = 0; i < timeline.size(); ++i) {
    const TimelineRow& row = timeline[i];
    const auto bucket = static_cast<size_t>(std::max(0.0, row.time_s) / plan.bucket_s);
    if (bucket >= plan.replicas.size()) break;
    // Until the next tick; the last tick stands for as long as the one before it.
    double dt = 0;
    if (i + 1 < timeline.size()) {
      dt = timeline[i + 1].time_s - row.time_s;
    } else if (i > 0) {
      dt = row.time_s - timeline[i - 1].time_s;
    }
    const double planned = plan.replicas[bucket];
    const double ready = row.ready;
    seconds += dt;
    plan_sum += planned * dt;
    run_sum += ready * dt;
    c.replica_hours_above += std::max(0.0, ready - planned) * dt / 3600;
    c.replica_hours_below += std::max(0.0, planned - ready) * dt / 3600;
  }
  if (seconds > 0) {
    c.plan_mean = plan_sum / seconds;
    c.run_mean = run_sum / seconds;
  }
  return c;
}

TimelineSeries BucketTimeline(const std::vector<TimelineRow>& rows, size_t max_points) {
  TimelineSeries series;
  if (rows.empty() || max_points == 0) return series;
  const double span = std::max(0.0, rows.back().time_s);
  // floor + 1, not ceil: a last tick exactly at span / max_points * k must still fall in
  // bucket max_points - 1.
  series.bucket_s = std::floor(span / static_cast<double>(max_points)) + 1;
  // One bucket's sums; flushed when a tick falls past it.
  double sum_rate = 0, sum_replicas = 0, sum_ready = 0;
  int ticks = 0;
  double bucket_start = 0;
  auto flush = [&] {
    if (ticks == 0) return;
    series.time_s.push_back(bucket_start);
    series.arrival_rate.push_back(sum_rate / ticks);
    series.replicas.push_back(sum_replicas / ticks);
    series.ready.push_back(sum_ready / ticks);
    sum_rate = sum_replicas = sum_ready = 0;
    ticks = 0;
  };
  for (const TimelineRow& row : rows) {
    const double start = std::floor(std::max(0.0, row.time_s) / series.bucket_s) * series.bucket_s;
    if (ticks > 0 && start != bucket_start) flush();
    bucket_start = start;
    sum_rate += row.arrival_rate;
    sum_replicas += row.ready + row.starting + row.draining;
    sum_ready += row.ready;
    ++ticks;
  }
  flush();
  return series;
}

// A door's run (SimulationConfig::admission): shed requests, each priority's and tenant's.
template <typename Line>
void AddClassLines(const SimReport& r, Line& line) {
  if (r.priorities.empty()) return;
  line("shed", fmt::format("{} (429: sheddable, past their wait budget)", r.shed));
  auto one = [&](std::string_view kind, const ClassReport& c) {
    line(fmt::format("  {} {}", kind, c.name.empty() ? "(none)" : c.name),
         fmt::format("{:.4f} of {} ({} met, {} shed, {} unfinished, {} aborted; {} tokens served)",
                     c.attainment, c.requests, c.slo_met, c.shed, c.unfinished, c.aborted,
                     c.served_tokens));
  };
  for (const ClassReport& c : r.priorities) one("priority", c);
  for (const ClassReport& c : r.tenants) one("tenant", c);
}

std::string FormatReportTable(const SimReport& r, const References& references,
                              const std::vector<TimelineRow>& timeline) {
  const double oracle_gpu_hours = references.oracle_gpu_hours;
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    out += fmt::format("{:<20} {}\n", key, value);
  };
  line("policy", r.policy);
  line("requests", fmt::format("{} ({} completed, {} aborted)", r.requests, r.completed,
                               r.aborted));
  line("slo_attainment", fmt::format("{:.4f} ({} met)", r.attainment, r.slo_met));
  if (const int64_t misses = r.requests - r.slo_met; misses > 0) {
    line("fresh_replica_miss",
         fmt::format("{} of {} misses ({:.0f} %) on replicas in their first {:.0f} s after a cold "
                     "start",
                     r.fresh_replica_misses, misses,
                     100.0 * static_cast<double>(r.fresh_replica_misses) /
                         static_cast<double>(misses),
                     kFreshReplicaSeconds));
  }
  auto pct = [](const Percentiles& p) {
    return fmt::format("p50 {:.4f}  p90 {:.4f}  p99 {:.4f}", p.p50, p.p90, p.p99);
  };
  AddClassLines(r, line);
  line("ttft_s", pct(r.ttft_s));
  if (r.prefix_cache_hit_tokens > 0) {
    line("prefix_hit_ratio",
         fmt::format("{:.4f} ({} of {} prompt tokens cached)", r.prefix_hit_ratio,
                     r.prefix_cache_hit_tokens, r.prompt_tokens));
  }
  line("tpot_s", pct(r.tpot_s));
  line("e2e_s", pct(r.e2e_s));
  line("gpu_hours", fmt::format("{:.3f}", r.gpu_hours));
  // A priced (variant) service: its cost, and each variant's share.
  if (r.cost > 0) {
    line("cost", fmt::format("{:.2f} (price x GPU-hours over the variants)", r.cost));
    if (r.preempted > 0) {
      line("preempted", fmt::format("{} spot replicas; {} requests lost (still running when "
                                    "the notice ran out)",
                                    r.preempted, r.lost_to_preemption));
    }
    for (const VariantReport& v : r.variants) {
      line(fmt::format("  {}", v.name),
           fmt::format("{}{} capacity {:.2f}: {:.3f} GPU-hours, cost {:.2f}, {} replicas placed",
                       v.gpu_type, v.spot ? " spot" : "", v.capacity, v.gpu_hours, v.cost,
                       v.replicas_placed));
    }
  }
  if (oracle_gpu_hours >= 0) {
    line("oracle_gpu_hours", fmt::format("{:.3f} (ratio {:.3f})", oracle_gpu_hours,
                                         oracle_gpu_hours > 0 ? r.gpu_hours / oracle_gpu_hours
                                                              : 0.0));
  }
  if (references.oracle_plan && !timeline.empty()) {
    const OraclePlan& plan = *references.oracle_plan;
    const PlanComparison c = CompareWithPlan(plan, timeline);
    line("oracle_plan",
         fmt::format("{:.1f}-{:.1f} ready replicas per {:.0f} s (mean {:.2f}); this run {:.2f}, "
                     "{:.2f} replica-hours above the plan, {:.2f} below",
                     c.plan_min, c.plan_max, plan.bucket_s, c.plan_mean, c.run_mean,
                     c.replica_hours_above, c.replica_hours_below));
  }
  if (const auto& reactive = references.reactive_plan) {
    line("reactive_plan", ReactiveSummary(*reactive));
  }
  if (const auto& fleet = references.static_fleet) {
    line("static_fleet", StaticFleetSummary(*fleet));
  }
  if (const auto& frontier = references.static_frontier) {
    const FrontierVerdict verdict = JudgeAgainstFrontier(*frontier, {r.attainment, r.gpu_hours});
    line("static_frontier", FrontierPoints(*frontier) + " (replicas: attainment at GPU-hours)");
    line("dominated_by", DominatedBySummary(verdict, r));
    line("cost_vs_static", CostVsStaticSummary(verdict, r, frontier->smallest));
  }
  if (const auto& mix = references.static_mix) line("static_mix", StaticMixSummary(*mix, r));
  line("scale_ups", fmt::format("{} ({} replicas started)", r.scale_ups, r.replicas_started));
  line("scale_downs", fmt::format("{} ({} replicas stopped)", r.scale_downs, r.replicas_stopped));
  line("peak_replicas", fmt::format("{}", r.peak_replicas));
  line("duration_s", fmt::format("{:.1f}", r.duration_s));
  line("controller_errors", fmt::format("{}", r.controller_errors));
  return out;
}

std::string FormatTimelineCsv(const std::vector<TimelineRow>& rows) {
  std::string out =
      "time_s,arrival_rate,desired,ready,starting,pending,draining,waiting,running,"
      "gpus_in_use,reason\n";
  for (const auto& r : rows) {
    std::string reason = r.reason;
    std::replace(reason.begin(), reason.end(), '"', '\'');
    out += fmt::format("{:.3f},{:.3f},{},{},{},{},{},{},{},{},\"{}\"\n", r.time_s,
                       r.arrival_rate, r.desired, r.ready, r.starting, r.pending, r.draining,
                       r.waiting, r.running, r.gpus_in_use, reason);
  }
  return out;
}

std::string FormatCompareTable(const std::vector<CompareEntry>& entries,
                               const References& references) {
  const double oracle_gpu_hours = references.oracle_gpu_hours;
  const auto& frontier = references.static_frontier;
  std::string out = fmt::format("{:<22} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9} {:>5} {:>5} {:>5}{}\n",
                                "policy", "attain", "gpu_h", "/oracle", "ttft_p99", "tpot_p99",
                                "e2e_p99", "ups", "downs", "peak",
                                frontier ? fmt::format(" {:>8} {:>12}", "/static", "dominated_by")
                                         : "");
  // "-" without an oracle (--no-oracle), rather than a ratio of 0 that reads as a result.
  auto over_oracle = [&](double gpu_hours) {
    return oracle_gpu_hours > 0 ? fmt::format("{:.3f}", gpu_hours / oracle_gpu_hours)
                                : std::string("-");
  };
  for (const auto& e : entries) {
    const auto& r = e.report;
    out += fmt::format("{:<22} {:>10.4f} {:>10.3f} {:>8} {:>9.3f} {:>9.4f} {:>9.2f} {:>5} "
                       "{:>5} {:>5}{}\n",
                       e.name, r.attainment, r.gpu_hours, over_oracle(r.gpu_hours), r.ttft_s.p99,
                       r.tpot_s.p99, r.e2e_s.p99, r.scale_ups, r.scale_downs, r.peak_replicas,
                       frontier ? FrontierColumns(*frontier, r) : "");
  }
  // A reference row: no latencies or scaling counts, only what it attains and costs.
  auto reference_row = [&](const std::string& name, double attainment, double gpu_hours,
                           bool meets_target) {
    out += fmt::format("{:<22} {:>10.4f} {:>10.3f} {:>8}{}\n", name, attainment, gpu_hours,
                       over_oracle(gpu_hours), meets_target ? "" : "  (target out of reach)");
  };
  if (const auto& reactive = references.reactive_plan) {
    reference_row(ReactiveName(*reactive), reactive->attainment, reactive->gpu_hours,
                  reactive->meets_target);
  }
  if (const auto& fleet = references.static_fleet) {
    reference_row(fmt::format("static fleet ({})", fleet->replicas), fleet->attainment,
                  fleet->gpu_hours, fleet->meets_target);
  }
  if (oracle_gpu_hours >= 0) {
    out += fmt::format("{:<22} {:>10} {:>10.3f} {:>8.3f}\n", "oracle (lower bound)", "-",
                       oracle_gpu_hours, 1.0);
  }
  if (frontier) {
    out += fmt::format("\nstatic frontier (replicas: attainment at GPU-hours): {}\n",
                       FrontierPoints(*frontier));
  }
  if (references.slo_target >= 0 && !entries.empty()) {
    out += "\n" + CompareVerdict(entries, references) + "\n";
  }
  return out;
}

std::string CompareVerdict(const std::vector<CompareEntry>& entries,
                           const References& references) {
  const double target = references.slo_target;
  const CompareEntry* cheapest = nullptr;
  const CompareEntry* best = nullptr;
  for (const auto& e : entries) {
    const auto& r = e.report;
    if (r.attainment >= target && (!cheapest || r.gpu_hours < cheapest->report.gpu_hours)) {
      cheapest = &e;
    }
    if (!best || r.attainment > best->report.attainment) best = &e;
  }
  const auto& fleet = references.static_fleet;
  if (!cheapest) {
    std::string line = fmt::format("no config meets the SLO target {:.4f}; the best attainment is "
                                   "{}'s {:.4f}",
                                   target, best->name, best->report.attainment);
    if (fleet && fleet->meets_target) {
      line += fmt::format("; a static fleet of {} meets it at {:.3f} GPU-hours",
                          Replicas(fleet->replicas), fleet->gpu_hours);
    }
    return line;
  }
  std::string line = fmt::format("cheapest config meeting the SLO target {:.4f}: {}, {:.3f} GPU-hours",
                                 target, cheapest->name, cheapest->report.gpu_hours);
  if (fleet && fleet->meets_target && fleet->gpu_hours > 0) {
    const double change = cheapest->report.gpu_hours / fleet->gpu_hours - 1;
    if (std::abs(change) < 0.005) {
      line += fmt::format(", the same as the static fleet of {}", Replicas(fleet->replicas));
    } else {
      line += change < 0
                  ? fmt::format(", {:.0f} % under the static fleet of {}", -100 * change,
                                Replicas(fleet->replicas))
                  : fmt::format(", {:.0f} % over the static fleet of {} (not autoscaling is "
                                "cheaper here)",
                                100 * change, Replicas(fleet->replicas));
    }
  }
  // How much better reactions could still save: the perfectly informed reactive schedule.
  const auto& reactive = references.reactive_plan;
  if (reactive && reactive->meets_target && reactive->gpu_hours > 0) {
    const double change = cheapest->report.gpu_hours / reactive->gpu_hours - 1;
    line += std::abs(change) < 0.005
                ? std::string("; level with the reactive reference")
                : fmt::format("; {:.0f} % {} the reactive reference", 100 * std::abs(change),
                              change < 0 ? "under" : "over");
  }
  return line;
}

}  // namespace gpuscale::sim
