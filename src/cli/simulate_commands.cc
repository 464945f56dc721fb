// `gpuscale simulate`: replays a request trace through a policy in the simulator (sim/) and
// prints the report; `--compare` runs several configs on the same trace in parallel threads
// and prints a table plus an SVG chart. Output on stdout is byte-identical for the same
// inputs and seed; progress goes to stderr.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <thread>

#include "cli/command.h"
#include "cli/simulate_common.h"
#include "cli/trace_file.h"
#include "config/sim_config.h"
#include "orch/parallel.h"
#include "scale/policy.h"
#include "sim/oracle.h"
#include "sim/reactive_plan.h"
#include "sim/report.h"
#include "sim/sim_orchestrator.h"
#include "sim/simulation.h"
#include "sim/static_fleet.h"
#include "sim/static_mix.h"
#include "sim/trace.h"

namespace gpuscale::cli {

// The calibrated replica model for a config (sim/replica_model.h), errors prefixed with the
// config section they come from.
Result<std::unique_ptr<sim::ReplicaModel>> BuildModel(const sim::ReplicaModelConfig& config) {
  auto model = sim::MakeReplicaModel(config);
  if (!model) {
    Error e = model.error();
    e.field = e.field.empty() ? "replica_model" : "replica_model." + e.field;
    return Unexpected<Error>(e);
  }
  return std::move(*model);
}

Status WriteFile(const std::string& path, const std::string& text, std::string_view flag) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  // A full disk or a missing folder is no usage error (exit 1, not 2): the flag was right.
  if (!out) {
    return Unavailable(fmt::format("cannot write '{}': {}", path, std::strerror(errno)),
                       std::string(flag));
  }
  return OkStatus();
}

// "N bad rows skipped ...", the line the table ends with and stderr shows when rows were
// skipped (--skip-bad-rows).
std::string SkippedRowsLine(const sim::Trace& trace) {
  return fmt::format("trace: {} bad row{} skipped (--skip-bad-rows), the first: {}\n",
                     trace.skipped_rows, trace.skipped_rows == 1 ? "" : "s",
                     trace.first_skipped_row);
}

// "azure_csv, 387320 requests over 3502 s (110.60 req/s), mean 1155 prompt / 211 output
// tokens": the trace as replayed, after --rate-scale and --time-compress.
std::string TraceLine(const sim::Trace& trace) {
  const sim::TraceStats t = sim::SummarizeTrace(trace);
  return fmt::format("{}, {} requests over {:.0f} s ({:.2f} req/s), mean {:.0f} prompt / {:.0f} "
                     "output tokens",
                     trace.format, t.requests, t.span_s, t.rate_per_s, t.mean_input_tokens,
                     t.mean_output_tokens);
}

nlohmann::ordered_json TraceJson(const sim::Trace& trace) {
  const sim::TraceStats t = sim::SummarizeTrace(trace);
  return {{"format", trace.format},
          {"requests", t.requests},
          {"span_seconds", t.span_s},
          {"rate_per_second", t.rate_per_s},
          {"mean_input_tokens", t.mean_input_tokens},
          {"mean_output_tokens", t.mean_output_tokens},
          {"skipped_rows", trace.skipped_rows}};
}

nlohmann::ordered_json Percentiles(const sim::Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
}

void AddRequestFields(nlohmann::ordered_json& j, const sim::SimReport& r, double slo_target) {
  j["requests"] = r.requests;
  j["completed"] = r.completed;
  j["aborted"] = r.aborted;
  j["slo_met"] = r.slo_met;
  j["slo_attainment"] = r.attainment;
  j["fresh_replica_misses"] = r.fresh_replica_misses;
  j["slo_target"] = slo_target;
  j["ttft_seconds"] = Percentiles(r.ttft_s);
  j["tpot_seconds"] = Percentiles(r.tpot_s);
  j["e2e_seconds"] = Percentiles(r.e2e_s);
  j["prompt_tokens"] = r.prompt_tokens;
  j["prefix_cache_hit_tokens"] = r.prefix_cache_hit_tokens;
  j["prefix_hit_ratio"] = r.prefix_hit_ratio;
  j["gpu_hours"] = r.gpu_hours;
  // Issue 47: the price of the run and each variant's share (a single-shape service has one
  // variant, "default", priced 0); spot notices and the requests they cost.
  j["cost"] = r.cost;
  j["preempted"] = r.preempted;
  j["lost_to_preemption"] = r.lost_to_preemption;
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  for (const sim::VariantReport& v : r.variants) {
    variants.push_back({{"name", v.name},
                        {"gpu_type", v.gpu_type},
                        {"spot", v.spot},
                        {"capacity", v.capacity},
                        {"gpu_hours", v.gpu_hours},
                        {"cost", v.cost},
                        {"replicas_placed", v.replicas_placed},
                        {"preempted", v.preempted},
                        {"lost_to_preemption", v.lost_to_preemption}});
  }
  j["variants"] = std::move(variants);
  // Issue 46: a door's run (`admission:`): shed requests and each class's attainment.
  if (r.priorities.empty()) return;
  j["shed"] = r.shed;
  auto classes = [](const std::vector<sim::ClassReport>& list) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const sim::ClassReport& c : list) {
      out.push_back({{"name", c.name},
                     {"requests", c.requests},
                     {"completed", c.completed},
                     {"slo_met", c.slo_met},
                     {"slo_attainment", c.attainment},
                     {"shed", c.shed},
                     {"unfinished", c.unfinished},
                     {"aborted", c.aborted},
                     {"served_tokens", c.served_tokens},
                     {"contended_completed", c.contended_completed}});
    }
    return out;
  };
  j["priorities"] = classes(r.priorities);
  j["tenants"] = classes(r.tenants);
  j["priority_tenants"] = classes(r.priority_tenants);
}

void AddScaleFields(nlohmann::ordered_json& j, const sim::SimReport& r) {
  j["scale_ups"] = r.scale_ups;
  j["scale_downs"] = r.scale_downs;
  j["replicas_started"] = r.replicas_started;
  j["replicas_stopped"] = r.replicas_stopped;
  j["peak_replicas"] = r.peak_replicas;
  j["duration_seconds"] = r.duration_s;
  j["controller_errors"] = r.controller_errors;
}

Result<sim::Trace> LoadTrace(const SimulateFlags& flags, std::ostream& err) {
  auto trace =
      ReadOrGenerateTrace(flags.trace, flags.trace_format, flags.skip_bad_rows, flags.seed);
  if (!trace) return trace;
  if (trace->skipped_rows > 0) err << "simulate: " << SkippedRowsLine(*trace);
  if (trace->requests.empty() && trace->skipped_rows > 0) {
    return InvalidArgument(fmt::format("{}: no request to replay: all {} rows were bad, the "
                                       "first: {}",
                                       flags.trace, trace->skipped_rows, trace->first_skipped_row),
                           "--trace");
  }
  // A seed draws which requests a scaled trace keeps or adds; at scale 1 there is no draw, so
  // runs that differ only in --seed are one sample, not several.
  if (flags.seed_given && flags.rate_scale == 1 &&
      !flags.trace.starts_with(kTenantWorkloadPrefix)) {
    err << "simulate: --seed has no effect at --rate-scale 1 (the trace is replayed as "
           "recorded)\n";
  }
  auto mode = sim::ParseRateScaleMode(flags.rate_mode);
  if (!mode) return Unexpected<Error>(Error{mode.error().code, mode.error().message, "--rate-mode"});
  sim::TraceTransform transform{flags.rate_scale, flags.time_compress, flags.seed, *mode,
                                flags.stream_shift_seconds};
  if (auto valid = sim::ValidateTraceTransform(transform); !valid) {
    Error e = valid.error();  // name the flag the user typed, not the struct field
    e.field = e.field == "rate_scale"             ? "--rate-scale"
              : e.field == "time_compress"        ? "--time-compress"
              : e.field == "stream_shift_seconds" ? "--stream-shift"
                                                  : e.field;
    return Unexpected<Error>(e);
  }
  return sim::TransformTrace(*trace, transform);
}

namespace {

struct Run {
  std::string name;
  config::SimConfigFile file;
  std::unique_ptr<sim::ReplicaModel> model;
  std::unique_ptr<scale::Policy> policy;  // parsed by PrepareRun, consumed by Execute
  Result<sim::SimResult> result = InvalidArgument("not run");
};

// Reads a simulation config; errors are prefixed with its path.
Result<config::SimConfigFile> LoadRunFile(const std::string& path) {
  auto file = config::LoadSimConfigFile(path);
  if (!file) {
    Error e = file.error();
    e.message = fmt::format("{}: {}", path, e.message);
    return Unexpected<Error>(e);
  }
  return file;
}

// Builds a run of the config read from `path` and sizes an `initial_replicas: auto` warm
// start from the trace. The policy is parsed here, once, so that its errors surface before
// any thread starts.
Result<Run> PrepareRun(const std::string& path, Result<config::SimConfigFile> file,
                       const sim::Trace& trace, std::ostream& err) {
  if (!file) return Unexpected<Error>(file.error());
  if (file->sim.disaggregated) {
    return InvalidArgument(fmt::format("{}: a disaggregated config runs alone (--config), not in "
                                       "--compare yet",
                                       path),
                           "--compare");
  }
  Run run;
  run.name = std::filesystem::path(path).stem().string();
  auto model = BuildModel(file->sim.model);
  if (!model) {
    Error e = model.error();
    e.message = fmt::format("{}: {}", path, e.message);
    return Unexpected<Error>(e);
  }
  run.model = std::move(*model);
  run.file = std::move(*file);
  if (int& initial = run.file.sim.service.initial_replicas;
      initial == sim::ServiceSpec::kAutoInitialReplicas) {
    initial = sim::WarmStartReplicas(run.file.sim, *run.model, trace);
    err << fmt::format("simulate: {}: initial_replicas auto: {} (the static fleet for the "
                       "trace's first {:.0f} s)\n",
                       run.name, initial, sim::kWarmStartSeconds);
  }
  auto policy = config::MakeSimPolicy(run.file);
  if (!policy) {
    Error e = policy.error();
    e.message = fmt::format("{}: {}", path, e.message);
    return Unexpected<Error>(e);
  }
  run.policy = std::move(policy->policy);
  return run;
}

// REQUIRES: `run` came from PrepareRun and was not executed before.
void Execute(Run& run, const sim::Trace& trace, std::ostream& err, std::mutex& err_mu) {
  sim::SimOptions options;
  options.progress = [&](double share) {
    std::lock_guard lock(err_mu);
    err << fmt::format("simulate: {} {:.0f}%\n", run.name, share * 100);
  };
  run.result = sim::RunSimulation(run.file.sim, *run.model, std::move(run.policy), trace, options);
}

Result<std::optional<sim::OracleBound>> Oracle(const Run& run, const sim::Trace& trace, bool skip,
                                               std::ostream& err) {
  if (skip || !run.result) return std::optional<sim::OracleBound>();
  err << "simulate: computing the oracle bound\n";
  std::mutex err_mu;  // progress comes from the replaying threads
  auto progress = [&err, &err_mu](double share) {
    std::lock_guard lock(err_mu);
    err << fmt::format("simulate: oracle {:.0f}%\n", share * 100);
  };
  // The oracle's buckets are independent: one thread per core.
  auto parallel_for = [](size_t n, const std::function<void(size_t)>& body) {
    orch::ParallelFor(n, std::max(1u, std::thread::hardware_concurrency()), body);
  };
  GS_ASSIGN_OR_RETURN(sim::OracleBound bound,
                      sim::ComputeOracleBound(run.file.sim, *run.model, trace,
                                              run.result->report.duration_s, progress,
                                              parallel_for));
  err << fmt::format("simulate: oracle: {:.2f} req/s per replica at the SLO ({:.4f} "
                     "work-s/s), {:.3f} GPU-hours\n",
                     bound.capacity_rps, bound.capacity_work_per_s, bound.gpu_hours);
  if (bound.best_attainment < run.file.sim.slo.target_ratio) {
    err << fmt::format("simulate: oracle: the SLO target {:.4f} is out of reach with {} "
                       "replicas at most: the best plan attains {:.4f} (the bound is its cost)\n",
                       run.file.sim.slo.target_ratio, run.file.sim.FleetCeiling(),
                       bound.best_attainment);
  }
  return std::optional<sim::OracleBound>(std::move(bound));
}

// The static frontier on the trace, sized for `costs` (every run it judges), once.
Result<std::optional<sim::StaticFrontier>> Frontier(const Run& run, const sim::Trace& trace,
                                                    std::span<const sim::RunCost> costs, bool skip,
                                                    std::ostream& err) {
  if (skip || !run.result) return std::optional<sim::StaticFrontier>();
  err << "simulate: sizing the static fleets\n";
  auto progress = [&err](int replicas, double attainment) {
    err << fmt::format("simulate: static fleet: {} replicas attain {:.4f}\n", replicas,
                       attainment);
  };
  GS_ASSIGN_OR_RETURN(sim::StaticFrontier frontier,
                      sim::ComputeStaticFrontier(run.file.sim, *run.model, trace,
                                                 run.result->report.duration_s, costs, progress));
  return std::optional<sim::StaticFrontier>(std::move(frontier));
}

// The oracle bound, the reactive reference and the static frontier for a run's config (they
// depend only on the trace, model, SLO and service); the frontier is sized to judge `costs`.
Result<sim::References> References(const Run& run, const sim::Trace& trace,
                                   std::span<const sim::RunCost> costs, const SimulateFlags& flags,
                                   std::ostream& err) {
  sim::References refs;
  refs.slo_target = run.file.sim.slo.target_ratio;
  GS_ASSIGN_OR_RETURN(std::optional<sim::OracleBound> bound,
                      Oracle(run, trace, flags.no_oracle, err));
  if (bound) {
    refs.oracle_gpu_hours = bound->gpu_hours;
    refs.reactive_plan = sim::CheapestReactivePlan(
        bound->curves, sim::ReactiveSettingFor(run.file.sim, bound->bucket_s));
    refs.oracle_plan = sim::OraclePlan{bound->bucket_s, std::move(bound->replicas)};
  }
  GS_ASSIGN_OR_RETURN(refs.static_frontier,
                      Frontier(run, trace, costs, flags.no_static_fleet, err));
  if (refs.static_frontier) refs.static_fleet = refs.static_frontier->smallest;
  if (!flags.no_static_fleet && run.result && !run.file.sim.service.fleet.variants.empty()) {
    err << "simulate: sizing the cheapest static mix of the variants\n";
    std::vector<std::unique_ptr<sim::ReplicaModel>> models;
    GS_ASSIGN_OR_RETURN(std::vector<sim::VariantRuntime> variants,
                        sim::BuildVariants(run.file.sim, models));
    GS_ASSIGN_OR_RETURN(refs.static_mix, sim::CheapestStaticMix(run.file.sim, variants, trace,
                                                                run.result->report.duration_s));
  }
  return refs;
}

nlohmann::ordered_json StaticMixPointJson(const sim::StaticMixPoint& p) {
  return {{"name", p.name},
          {"replicas", p.replicas},
          {"cost", p.cost},
          {"gpu_hours", p.gpu_hours},
          {"attainment", p.attainment}};
}

// The cheapest static mix (null where none meets the target) and each variant alone.
nlohmann::ordered_json StaticMixJson(const sim::StaticMix& mix) {
  nlohmann::ordered_json single = nlohmann::ordered_json::array();
  for (const auto& p : mix.single) {
    single.push_back(p ? StaticMixPointJson(*p) : nlohmann::ordered_json());
  }
  return {{"cheapest", mix.cheapest ? StaticMixPointJson(*mix.cheapest) : nlohmann::ordered_json()},
          {"single", std::move(single)},
          {"replays", mix.replays}};
}

// The oracle's plan and where the run's ready replicas stand against it.
nlohmann::ordered_json PlanJson(const sim::OraclePlan& plan,
                                const std::vector<sim::TimelineRow>& timeline) {
  const sim::PlanComparison c = sim::CompareWithPlan(plan, timeline);
  return {{"bucket_seconds", plan.bucket_s},
          {"replicas", plan.replicas},
          {"mean_replicas", c.plan_mean},
          {"run_mean_ready_replicas", c.run_mean},
          {"replica_hours_above", c.replica_hours_above},
          {"replica_hours_below", c.replica_hours_below}};
}

nlohmann::ordered_json FleetPointJson(const sim::FleetPoint& p) {
  return {{"replicas", p.replicas},
          {"gpu_hours", p.gpu_hours},
          {"attainment", p.attainment},
          {"meets_target", p.meets_target}};
}

// static_frontier (every size replayed), dominated_by and cost_vs_static (null where none).
void AddFrontierFields(nlohmann::ordered_json& j, const sim::StaticFrontier& frontier,
                       const sim::SimReport& r) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const sim::FleetPoint& p : frontier.points) points.push_back(FleetPointJson(p));
  j["static_frontier"] = std::move(points);
  const sim::FrontierVerdict v = sim::JudgeAgainstFrontier(frontier, {r.attainment, r.gpu_hours});
  j["dominated_by"] = v.dominated_by ? FleetPointJson(*v.dominated_by) : nlohmann::ordered_json();
  j["cost_vs_static"] =
      v.cost_vs_static ? nlohmann::ordered_json(*v.cost_vs_static) : nlohmann::ordered_json();
}

// One run's report; REQUIRES: run.result holds a value.
// trace_json: TraceJson of the replayed trace, computed once for every run of a compare.
nlohmann::ordered_json ReportJson(const Run& run, const sim::References& refs,
                                  const nlohmann::ordered_json& trace_json) {
  const sim::SimReport& r = run.result->report;
  const double oracle = refs.oracle_gpu_hours;
  nlohmann::ordered_json j;
  j["name"] = run.name;
  j["policy"] = r.policy;
  j["initial_replicas"] = run.file.sim.service.ReadyAtStart();
  j["trace"] = trace_json;
  AddRequestFields(j, r, run.file.sim.slo.target_ratio);
  if (oracle >= 0) {
    j["oracle_gpu_hours"] = oracle;
    // null, not 0, where the bound is 0 GPU-hours (an empty trace): no ratio exists.
    j["gpu_hours_over_oracle"] =
        oracle > 0 ? nlohmann::ordered_json(r.gpu_hours / oracle) : nlohmann::ordered_json();
  }
  if (refs.oracle_plan) j["oracle_plan"] = PlanJson(*refs.oracle_plan, run.result->timeline);
  if (const auto& reactive = refs.reactive_plan) {
    const nlohmann::ordered_json over_oracle =
        oracle > 0 ? nlohmann::ordered_json(reactive->gpu_hours / oracle) : nlohmann::ordered_json();
    j["reactive_plan"] = {{"lag_seconds", reactive->lag_buckets * reactive->bucket_s},
                          {"hold_seconds", reactive->hold_buckets * reactive->bucket_s},
                          {"spare_replicas", reactive->spare_replicas},
                          {"gpu_hours", reactive->gpu_hours},
                          {"gpu_hours_over_oracle", over_oracle},
                          {"attainment", reactive->attainment},
                          {"no_headroom_attainment", reactive->no_headroom_attainment},
                          {"meets_target", reactive->meets_target},
                          {"replicas", reactive->replicas}};
  }
  if (const auto& fleet = refs.static_fleet) {
    j["static_fleet"] = {{"replicas", fleet->replicas},
                         {"gpu_hours", fleet->gpu_hours},
                         {"attainment", fleet->attainment},
                         {"meets_target", fleet->meets_target}};
  }
  if (const auto& frontier = refs.static_frontier) AddFrontierFields(j, *frontier, r);
  if (refs.static_mix) j["static_mix"] = StaticMixJson(*refs.static_mix);
  // Replicas against load over time for charts (the dashboard's simulation view): at most
  // 500 points whatever the trace's length.
  const sim::TimelineSeries series = sim::BucketTimeline(run.result->timeline, 500);
  j["timeline"] = {{"bucket_seconds", series.bucket_s},
                   {"time_s", series.time_s},
                   {"arrival_rate", series.arrival_rate},
                   {"replicas", series.replicas},
                   {"ready_replicas", series.ready}};
  AddScaleFields(j, r);
  return j;
}

int RunSingle(const SimulateFlags& flags, CommandContext& ctx) {
  auto trace = LoadTrace(flags, ctx.err);
  if (!trace) return ctx.Fail(trace.error());
  auto file = LoadRunFile(flags.config);
  if (file && file->sim.disaggregated) return RunDisaggregated(flags, *file, *trace, ctx);
  auto run = PrepareRun(flags.config, std::move(file), *trace, ctx.err);
  if (!run) return ctx.Fail(run.error());
  std::mutex err_mu;
  Execute(*run, *trace, ctx.err, err_mu);
  if (!run->result) return ctx.Fail(run->result.error());
  const sim::RunCost cost{run->result->report.attainment, run->result->report.gpu_hours};
  auto refs = References(*run, *trace, std::span(&cost, 1), flags, ctx.err);
  if (!refs) return ctx.Fail(refs.error());
  const auto& result = *run->result;
  if (!flags.timeline.empty()) {
    auto written = WriteFile(flags.timeline, sim::FormatTimelineCsv(result.timeline),
                             "--timeline");
    if (!written) return ctx.Fail(written.error());
  }
  if (flags.output == OutputFormat::kJson) {
    ctx.out << ReportJson(*run, *refs, TraceJson(*trace)).dump(2) << "\n";
  } else {
    ctx.out << fmt::format("{:<20} {}\n", "trace", TraceLine(*trace))
            << sim::FormatReportTable(result.report, *refs, result.timeline);
    if (trace->skipped_rows > 0) ctx.out << SkippedRowsLine(*trace);
  }
  return ctx.exit_code;
}

// Rows are named by file stem; configs of the same stem from different folders
// (conv/slo.yaml, code/slo.yaml) are named folder/stem, and a file given twice gets "#2",
// so that no two rows of the table, the chart or the JSON share a name.
void NameRunsApart(const std::vector<std::string>& paths, std::vector<Run>& runs) {
  auto count = [&runs](const std::string& name) {
    return std::count_if(runs.begin(), runs.end(), [&](const Run& r) { return r.name == name; });
  };
  std::vector<bool> shared(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) shared[i] = count(runs[i].name) > 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::filesystem::path path(paths[i]);
    const std::string folder = path.parent_path().filename().string();
    if (shared[i] && !folder.empty()) runs[i].name = folder + "/" + runs[i].name;
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    int copy = 1;
    for (size_t j = 0; j < i; ++j) copy += runs[j].name == runs[i].name ||
                                          runs[j].name.starts_with(runs[i].name + "#");
    if (copy > 1) runs[i].name += fmt::format("#{}", copy);
  }
}

int RunCompare(const SimulateFlags& flags, CommandContext& ctx) {
  auto trace = LoadTrace(flags, ctx.err);
  if (!trace) return ctx.Fail(trace.error());
  std::vector<Run> runs;
  for (const auto& path : flags.compare) {
    auto run = PrepareRun(path, LoadRunFile(path), *trace, ctx.err);
    if (!run) return ctx.Fail(run.error());
    runs.push_back(std::move(*run));
  }
  NameRunsApart(flags.compare, runs);
  std::mutex err_mu;
  std::vector<std::thread> threads;
  for (auto& run : runs) {
    threads.emplace_back([&run, &trace, &ctx, &err_mu] { Execute(run, *trace, ctx.err, err_mu); });
  }
  for (auto& t : threads) t.join();
  std::vector<sim::CompareEntry> entries;
  std::vector<sim::RunCost> costs;
  for (auto& run : runs) {
    if (!run.result) return ctx.Fail(run.result.error());
    entries.push_back({run.name, run.result->report, run.result->timeline});
    costs.push_back({run.result->report.attainment, run.result->report.gpu_hours});
  }
  // The references depend on the trace, model, SLO and service of the first config; the
  // static frontier is computed once, for every run.
  auto refs = References(runs.front(), *trace, costs, flags, ctx.err);
  if (!refs) return ctx.Fail(refs.error());
  auto svg = sim::RenderCompareSvg(entries, *refs);
  if (auto written = WriteFile(flags.svg, svg, "--svg"); !written) return ctx.Fail(written.error());
  if (flags.output == OutputFormat::kJson) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    const nlohmann::ordered_json trace_json = TraceJson(*trace);
    for (const auto& run : runs) j.push_back(ReportJson(run, *refs, trace_json));
    ctx.out << j.dump(2) << "\n";
  } else {
    ctx.out << "trace: " << TraceLine(*trace) << "\n" << sim::FormatCompareTable(entries, *refs);
    if (trace->skipped_rows > 0) ctx.out << SkippedRowsLine(*trace);
  }
  ctx.err << fmt::format("simulate: chart written to {}\n", flags.svg);
  return ctx.exit_code;
}

}  // namespace

void AddSimulateCommands(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Replay a request trace through a scaling policy in the simulator");
  cmd->add_option("--config", flags->config, "Simulation config YAML (cluster, service, SLO, policy)");
  cmd->add_option("--trace", flags->trace,
                  "Request trace: Azure CSV, Mooncake JSONL, plain CSV/JSONL; or "
                  "tenants:KEY=VALUE,... (the multi-tenant workload, seeded by --seed)")
      ->required();
  cmd->add_option("--trace-format", flags->trace_format,
                  "auto | azure_csv | mooncake_jsonl | plain_csv | plain_jsonl");
  cmd->add_option("--rate-scale", flags->rate_scale, "Multiply the arrival rate (default 1)");
  cmd->add_option("--time-compress", flags->time_compress, "Play the trace this many times faster");
  CLI::Option* seed = cmd->add_option("--seed", flags->seed,
                                      "Seed for rate scaling and a tenants: workload (default "
                                      "1; no effect on a file at --rate-scale 1, which replays "
                                      "the trace as recorded)");
  cmd->add_option("--rate-mode", flags->rate_mode,
                  "How --rate-scale > 1 adds traffic: streams (default: independent copies of "
                  "the trace, each shifted by up to --stream-shift seconds) | replicate (every "
                  "request repeated within its gap: every burst multiplied)");
  cmd->add_option("--stream-shift", flags->stream_shift_seconds,
                  "Largest shift of a copy in streams mode, seconds (default 300)");
  cmd->add_option("--timeline", flags->timeline, "Write the per-tick timeline CSV here");
  cmd->add_option("--compare", flags->compare,
                  "Run these sim configs (comma-separated or repeated) on the same trace, in "
                  "parallel, and print a table")
      ->delimiter(',');
  cmd->add_option("--svg", flags->svg, "Chart written by --compare (default sim-compare.svg)");
  cmd->add_flag("--no-oracle", flags->no_oracle,
                "Skip the oracle lower bound (and the reactive reference computed with it)");
  cmd->add_flag("--no-static-fleet", flags->no_static_fleet,
                "Skip the static fleets: the smallest meeting the SLO target and the frontier "
                "each run is judged against (dominated_by, cost_vs_static)");
  cmd->add_flag("--skip-bad-rows", flags->skip_bad_rows,
                "Skip malformed trace rows, count them and report the first, instead of failing "
                "on the first one");
  AddOutputOption(cmd, flags->output);
  cmd->callback([flags, seed, &ctx] {
    flags->seed_given = seed->count() > 0;
    if (!flags->compare.empty()) {
      RunCompare(*flags, ctx);
    } else if (flags->config.empty()) {
      ctx.Fail(Error{ErrorCode::kInvalidArgument, "give --config FILE or --compare FILES",
                     "--config"});
    } else {
      RunSingle(*flags, ctx);
    }
  });
}

}  // namespace gpuscale::cli
