// `gpuscale simulate --config` for a disaggregated service (sim/disagg.h): both pools' policies
// from the file, the run, the pair's oracle bound, and the report (a table, or `-o json` with
// the aggregated report's fields and the per-pool ones added).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/simulate_common.h"
#include "orch/parallel.h"
#include "sim/disagg.h"
#include "sim/replica_model_calibrated.h"
#include "sim/report.h"

namespace gpuscale::cli {
namespace {

// Each pool's replica model: the configured model at the pool's tensor parallel.
struct PoolModels {
  std::unique_ptr<sim::ReplicaModel> prefill, decode;
  sim::DisaggModels view;
};

Result<PoolModels> BuildPoolModels(const sim::SimulationConfig& c) {
  PoolModels m;
  sim::ReplicaModelConfig model = c.model;
  model.tensor_parallel = c.disaggregated->prefill.gpus_per_replica;
  GS_ASSIGN_OR_RETURN(m.prefill, BuildModel(model));
  model.tensor_parallel = c.disaggregated->decode.gpus_per_replica;
  GS_ASSIGN_OR_RETURN(m.decode, BuildModel(model));
  const sim::ModelSpec* spec = sim::FindModelSpec(c.model.model);
  if (spec == nullptr) return InvalidArgument("unknown model", "service.model");
  m.view = {m.prefill.get(), m.decode.get(), spec->KvBytesPerToken()};
  return m;
}

std::string PoolLine(const sim::PoolReport& p, std::string_view target) {
  return fmt::format(
      "{:<20} {} policy, {} attainment {:.4f} ({}/{}), {:.3f} GPU-hours{}, peak {} replicas, "
      "{} scale-ups, {} scale-downs, {} started, {} stopped\n",
      p.role + " pool", p.policy, target, p.attainment, p.slo_met, p.requests, p.gpu_hours,
      p.oracle_gpu_hours >= 0 ? fmt::format(" (bound {:.3f})", p.oracle_gpu_hours) : "",
      p.peak_replicas, p.scale_ups, p.scale_downs, p.replicas_started, p.replicas_stopped);
}

std::string FormatDisaggTable(const config::SimConfigFile& file, const sim::DisaggReport& r) {
  const sim::SimReport& t = r.total;
  const sim::DisaggSpec& d = *file.sim.disaggregated;
  auto pct = [](const sim::Percentiles& p) {
    return fmt::format("p50 {:.3f}  p90 {:.3f}  p99 {:.3f}", p.p50, p.p90, p.p99);
  };
  std::string out = fmt::format(
      "{:<20} disaggregated: prefill {} GPU/replica, decode {} GPU/replica, link {} ({:g} "
      "Gb/s), budget {} GPUs\n",
      "mode", d.prefill.gpus_per_replica, d.decode.gpus_per_replica, d.link.name, d.link.gbps,
      r.gpu_budget);
  out += fmt::format("{:<20} {}\n", "policy", t.policy);
  out += fmt::format("{:<20} {} ({} completed, {} aborted)\n", "requests", t.requests, t.completed,
                     t.aborted);
  out += fmt::format("{:<20} {:.4f} ({} of {} met TTFT <= {} s and TPOT <= {} s)\n",
                     "slo_attainment", t.attainment, t.slo_met, t.requests,
                     file.sim.slo.ttft_seconds, file.sim.slo.tpot_seconds);
  out += fmt::format("{:<20} {}\n", "ttft_seconds", pct(t.ttft_s));
  out += fmt::format("{:<20} {}\n", "tpot_seconds", pct(t.tpot_s));
  out += fmt::format("{:<20} {}\n", "kv_transfer_seconds", pct(r.transfer_s));
  out += fmt::format("{:<20} {:.3f} (prefill {:.3f}, decode {:.3f})\n", "gpu_hours", t.gpu_hours,
                     r.prefill.gpu_hours, r.decode.gpu_hours);
  if (r.oracle_gpu_hours >= 0) {
    out += fmt::format("{:<20} {:.3f} (the run x{:.2f})\n", "oracle_gpu_hours", r.oracle_gpu_hours,
                       r.oracle_gpu_hours > 0 ? t.gpu_hours / r.oracle_gpu_hours : 0.0);
  }
  out += PoolLine(r.prefill, "TTFT");
  out += PoolLine(r.decode, "TPOT");
  out += fmt::format("{:<20} {} of the {} GPU budget\n", "peak_gpus", r.peak_gpus, r.gpu_budget);
  return out;
}

nlohmann::ordered_json PoolJson(const sim::PoolReport& p, const sim::ServiceSpec& spec) {
  nlohmann::ordered_json j = {{"policy", p.policy},
                              {"gpus_per_replica", spec.gpus_per_replica},
                              {"min_replicas", spec.min_replicas},
                              {"max_replicas", spec.max_replicas},
                              {"initial_replicas", spec.ReadyAtStart()},
                              {"requests", p.requests},
                              {"slo_met", p.slo_met},
                              {"slo_attainment", p.attainment},
                              {"gpu_hours", p.gpu_hours},
                              {"peak_replicas", p.peak_replicas},
                              {"scale_ups", p.scale_ups},
                              {"scale_downs", p.scale_downs},
                              {"replicas_started", p.replicas_started},
                              {"replicas_stopped", p.replicas_stopped},
                              {"aborted", p.aborted},
                              {"controller_errors", p.controller_errors}};
  if (p.oracle_gpu_hours >= 0) j["oracle_gpu_hours"] = p.oracle_gpu_hours;
  return j;
}

// The aggregated report's fields (same names, same meaning), then the per-pool ones.
nlohmann::ordered_json DisaggJson(const SimulateFlags& flags, const config::SimConfigFile& file,
                                  const sim::DisaggReport& r, const sim::Trace& trace) {
  const sim::SimReport& t = r.total;
  const sim::DisaggSpec& d = *file.sim.disaggregated;
  nlohmann::ordered_json j;
  j["name"] = std::filesystem::path(flags.config).stem().string();
  j["policy"] = t.policy;
  j["trace"] = TraceJson(trace);
  AddRequestFields(j, t, file.sim.slo.target_ratio);
  if (r.oracle_gpu_hours >= 0) {
    j["oracle_gpu_hours"] = r.oracle_gpu_hours;
    j["gpu_hours_over_oracle"] = r.oracle_gpu_hours > 0
                                     ? nlohmann::ordered_json(t.gpu_hours / r.oracle_gpu_hours)
                                     : nlohmann::ordered_json();
  }
  AddScaleFields(j, t);
  j["disaggregated"] = {{"gpu_budget", r.gpu_budget},
                        {"peak_gpus", r.peak_gpus},
                        {"link", d.link.name},
                        {"link_gbps", d.link.gbps},
                        {"kv_transfer_seconds", Percentiles(r.transfer_s)}};
  j["pools"] = {{"prefill", PoolJson(r.prefill, d.prefill)},
                {"decode", PoolJson(r.decode, d.decode)}};
  return j;
}

Status MaybeOracle(const SimulateFlags& flags, const config::SimConfigFile& file,
                   const PoolModels& models, const sim::Trace& trace, sim::DisaggReport& report,
                   std::ostream& err) {
  if (flags.no_oracle) return OkStatus();
  err << "simulate: computing the oracle bound of both pools\n";
  auto parallel_for = [](size_t n, const std::function<void(size_t)>& body) {
    orch::ParallelFor(n, std::max(1u, std::thread::hardware_concurrency()), body);
  };
  return sim::ComputeDisaggOracle(file.sim, models.view, trace, report, parallel_for);
}

// Both pools' timelines in one CSV: the rows of the prefill pool, then the decode pool's,
// each headed by a `# pool` line.
std::string TimelineCsv(const sim::DisaggResult& result) {
  return "# prefill\n" + sim::FormatTimelineCsv(result.prefill_timeline) + "# decode\n" +
         sim::FormatTimelineCsv(result.decode_timeline);
}

}  // namespace

int RunDisaggregated(const SimulateFlags& flags, const config::SimConfigFile& file,
                     const sim::Trace& trace, CommandContext& ctx) {
  auto models = BuildPoolModels(file.sim);
  if (!models) return ctx.Fail(models.error());
  auto prefill = config::MakeDisaggPoolPolicy(file, scale::PoolRole::kPrefill, *models->prefill);
  if (!prefill) return ctx.Fail(prefill.error());
  auto decode = config::MakeDisaggPoolPolicy(file, scale::PoolRole::kDecode, *models->decode);
  if (!decode) return ctx.Fail(decode.error());
  sim::SimOptions options;
  options.progress = [&ctx](double share) {
    ctx.err << fmt::format("simulate: {:.0f}%\n", share * 100);
  };
  auto result = sim::RunDisaggSimulation(file.sim, models->view, std::move(prefill->policy),
                                         std::move(decode->policy), trace, options);
  if (!result) return ctx.Fail(result.error());
  if (auto oracle = MaybeOracle(flags, file, *models, trace, result->report, ctx.err); !oracle) {
    return ctx.Fail(oracle.error());
  }
  if (!flags.timeline.empty()) {
    if (auto w = WriteFile(flags.timeline, TimelineCsv(*result), "--timeline"); !w) {
      return ctx.Fail(w.error());
    }
  }
  if (flags.output == OutputFormat::kJson) {
    ctx.out << DisaggJson(flags, file, result->report, trace).dump(2) << "\n";
  } else {
    ctx.out << fmt::format("{:<20} {}\n", "trace", TraceLine(trace))
            << FormatDisaggTable(file, result->report);
    if (trace.skipped_rows > 0) ctx.out << SkippedRowsLine(trace);
  }
  return ctx.exit_code;
}

}  // namespace gpuscale::cli
