// `gpuscale bench`: a streaming load generator for OpenAI-compatible servers
// (loadgen/bench_runner.h). Prints a table for people or, with -o json, one JSON object whose
// shape is documented in kJsonHelp below and kept stable for scripts.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/trace_file.h"
#include "loadgen/bench_runner.h"
#include "route/admission_queue.h"
#include "sim/trace.h"
#include "task/task_json.h"

namespace gpuscale::cli {
namespace {

using ojson = nlohmann::ordered_json;

constexpr char kJsonHelp[] = R"(
JSON output (-o json), one object; times in seconds, rates per second:
  url, model, mode ("concurrency" | "rate" | "trace"), concurrency (clients, or most
  requests in flight for rate/trace), rate_per_second (null unless --rate), seed,
  duration_seconds, elapsed_seconds,
  requests_sent, requests_completed, requests_failed,
  errors: {kind: count}  kinds: connection_error, connect_timeout, read_error, write_error,
          cancelled, client_error, http_<status>, incomplete_stream, invalid_event,
          server_error_event,
  input_tokens_total, output_tokens_total (completed requests),
  request_throughput_per_second, output_token_throughput_per_second,
  input_token_throughput_per_second,
  ttft_seconds, inter_token_latency_seconds, time_per_output_token_seconds,
  e2e_latency_seconds: each {p50, p90, p99, mean, min, max, count} (null values when count
  is 0),
  requests_queued, queue_wait_max_seconds (rate/trace: arrivals that waited 1 ms or more for
  a free client because --concurrency were in flight, and the longest wait; latencies start
  at the send and leave it out),
  priorities (only when the trace gives requests a priority or tenant): a list, critical
  first, of {priority ("critical" | "standard" | "sheddable" | "none"), sent, within_slo,
  late (completed outside --slo-ttft / --slo-tpot), shed (answered 429), failed (any other
  error, timeouts included), completed_by_tenant: {tenant: count}}.
--outcomes FILE writes every request's outcome, one JSON object a line, in the order they
ended: ok, error_kind, due_seconds, queued_seconds, ttft_seconds, e2e_seconds,
input_tokens, output_tokens, priority and tenant (null when not sent) (what scripts/sim-fidelity scores against the simulator).
Exit status: 0 when at least one request completed, 1 otherwise or when the server cannot
be reached, 2 for bad flags or an unreadable trace.)";

struct BenchFlags {
  loadgen::BenchOptions options;
  double rate = 0;
  std::string trace;
  std::string trace_format = "auto";
  double trace_speedup = 1;
  bool skip_bad_rows = false;
  double stddev = 0;
  bool no_progress = false;
  std::string outcomes_path;  // --outcomes: JSON lines of every request's outcome
  OutputFormat format = OutputFormat::kTable;
  CLI::Option* concurrency = nullptr;
  CLI::Option* rate_option = nullptr;
  CLI::Option* input_stddev = nullptr;
  CLI::Option* output_stddev = nullptr;
};

std::string_view ModeName(loadgen::ArrivalMode mode) {
  switch (mode) {
    case loadgen::ArrivalMode::kPoisson:
      return "rate";
    case loadgen::ArrivalMode::kTrace:
      return "trace";
    default:
      return "concurrency";
  }
}

ojson PrioritiesJson(const std::vector<loadgen::PriorityClassReport>& rows) {
  ojson out = ojson::array();
  for (const loadgen::PriorityClassReport& row : rows) {
    out.push_back({{"priority", loadgen::PriorityClassName(row)},
                   {"sent", row.sent},
                   {"within_slo", row.within_slo},
                   {"late", row.late},
                   {"shed", row.shed},
                   {"failed", row.failed},
                   {"completed_by_tenant", row.completed_by_tenant}});
  }
  return out;
}

// The report's keys come from task::BenchReportJson (what experiments store and the API
// serves), with the options echoed after url and model, so the two cannot drift apart.
ojson ReportJson(const loadgen::BenchReport& r, const loadgen::BenchOptions& o) {
  const bool poisson = o.workload.mode == loadgen::ArrivalMode::kPoisson;
  ojson report = task::BenchReportJson(r);
  ojson out{{"url", report["url"]},
            {"model", report["model"]},
            {"mode", ModeName(o.workload.mode)},
            {"concurrency", o.concurrency},
            {"rate_per_second", poisson ? ojson(o.workload.rate_per_second) : ojson(nullptr)},
            {"seed", o.workload.seed},
            {"duration_seconds", o.duration_seconds}};
  for (auto& [key, value] : report.items()) {
    if (key != "url" && key != "model") out[key] = std::move(value);
  }
  if (!r.priorities.empty()) out["priorities"] = PrioritiesJson(r.priorities);
  return out;
}

std::string Millis(const loadgen::LatencySummary& s, double v) {
  return s.count > 0 ? fmt::format("{:.1f}", v * 1000) : "-";
}

std::string LoadDescription(const loadgen::BenchOptions& o) {
  switch (o.workload.mode) {
    case loadgen::ArrivalMode::kPoisson:
      return fmt::format("{} req/s Poisson, at most {} in flight", o.workload.rate_per_second,
                         o.concurrency);
    case loadgen::ArrivalMode::kTrace:
      return fmt::format("trace replay, at most {} in flight", o.concurrency);
    default:
      return fmt::format("{} clients", o.concurrency);
  }
}

// Completions per tenant, as "tenant-0 12, tenant-1 3".
std::string TenantCounts(const std::map<std::string, int64_t>& counts) {
  std::string text;
  for (const auto& [tenant, count] : counts) {
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", tenant.empty() ? "-" : tenant, count);
  }
  return text;
}

void PrintPriorities(const std::vector<loadgen::PriorityClassReport>& rows, std::ostream& out) {
  if (rows.empty()) return;
  out << fmt::format("{:<10} {:>7} {:>7} {:>7} {:>7} {:>7}  {}\n", "PRIORITY", "SENT", "IN SLO",
                     "LATE", "SHED", "FAILED", "COMPLETED BY TENANT");
  for (const loadgen::PriorityClassReport& row : rows) {
    out << fmt::format("{:<10} {:>7} {:>7} {:>7} {:>7} {:>7}  {}\n",
                       loadgen::PriorityClassName(row), row.sent, row.within_slo, row.late,
                       row.shed, row.failed, TenantCounts(row.completed_by_tenant));
  }
}

void PrintTable(const loadgen::BenchReport& r, const loadgen::BenchOptions& o, std::ostream& out) {
  out << fmt::format("bench: {} model '{}', {}, {:.1f} s (elapsed {:.2f} s)\n", r.url, r.model,
                     LoadDescription(o), o.duration_seconds, r.elapsed_seconds);
  std::string errors;
  for (const auto& [kind, count] : r.errors_by_kind) {
    errors += fmt::format("{}{}: {}", errors.empty() ? " (" : ", ", kind, count);
  }
  if (!errors.empty()) errors += ")";
  out << fmt::format("requests: {} sent, {} completed, {} failed{}\n", r.requests_sent,
                     r.requests_completed, r.requests_failed, errors);
  out << fmt::format("throughput: {:.2f} req/s, {:.1f} output tok/s, {:.1f} input tok/s\n",
                     r.request_throughput_per_second, r.output_token_throughput_per_second,
                     r.input_token_throughput_per_second);
  out << fmt::format("{:<24} {:>9} {:>9} {:>9} {:>9}\n", "LATENCY (ms)", "P50", "P90", "P99",
                     "MEAN");
  const std::pair<const char*, const loadgen::LatencySummary*> rows[] = {
      {"time to first token", &r.ttft_seconds},
      {"inter-token latency", &r.inter_token_latency_seconds},
      {"time per output token", &r.time_per_output_token_seconds},
      {"end-to-end", &r.e2e_latency_seconds}};
  for (const auto& [name, s] : rows) {
    out << fmt::format("{:<24} {:>9} {:>9} {:>9} {:>9}\n", name, Millis(*s, s->p50),
                       Millis(*s, s->p90), Millis(*s, s->p99), Millis(*s, s->mean));
  }
  if (r.requests_queued > 0) {
    out << fmt::format(
        "queued: {} arrival{} waited for a free client (all {} in flight), the longest {:.1f} "
        "ms: the server got less than the rate asked, and latencies start at the send; raise "
        "--concurrency\n",
        r.requests_queued, r.requests_queued == 1 ? "" : "s", o.concurrency,
        r.queue_wait_max_seconds * 1000);
  }
  if (!r.first_error_detail.empty()) out << "first error: " << r.first_error_detail << "\n";
  PrintPriorities(r.priorities, out);
}

Result<sim::Trace> LoadTrace(const BenchFlags& flags, std::ostream& err) {
  GS_ASSIGN_OR_RETURN(sim::Trace trace,
                      ReadOrGenerateTrace(flags.trace, flags.trace_format, flags.skip_bad_rows,
                                          flags.options.workload.seed));
  if (trace.skipped_rows > 0) {
    err << fmt::format("bench: {} bad trace row{} skipped, the first: {}\n", trace.skipped_rows,
                       trace.skipped_rows == 1 ? "" : "s", trace.first_skipped_row);
  }
  sim::TraceTransform transform{1.0, flags.trace_speedup, 1};
  if (!sim::ValidateTraceTransform(transform)) {
    return InvalidArgument("expected a factor in (0, 1e6]", "--trace-speedup");
  }
  return sim::TransformTrace(trace, transform);
}

// Turns the flags into BenchOptions (the mode follows --rate / --trace).
Status ResolveOptions(BenchFlags& flags, CommandContext& ctx) {
  loadgen::BenchOptions& o = flags.options;
  if (flags.input_stddev->count() == 0) o.workload.input.stddev_tokens = flags.stddev;
  if (flags.output_stddev->count() == 0) o.workload.output.stddev_tokens = flags.stddev;
  if (!flags.trace.empty()) {
    o.workload.mode = loadgen::ArrivalMode::kTrace;
    GS_ASSIGN_OR_RETURN(sim::Trace trace, LoadTrace(flags, ctx.err));
    o.workload.trace = std::move(trace.requests);
    // Rows with block hashes are sent with their blocks' text (workload/workload.h).
    o.workload.trace_hash_ids = std::move(trace.hash_ids);
    o.workload.trace_hash_block_tokens = trace.hash_block_tokens;
    // Rows with a priority or tenant are sent with them as headers (--priority-header).
    o.workload.trace_tenants = std::move(trace.tenants);
  } else if (flags.rate_option->count() > 0) {
    o.workload.mode = loadgen::ArrivalMode::kPoisson;
    o.workload.rate_per_second = flags.rate;
  }
  // Open loop: --concurrency caps requests in flight; 256 unless given.
  if (o.workload.mode != loadgen::ArrivalMode::kClosedLoop && flags.concurrency->count() == 0) {
    o.concurrency = 256;
  }
  if (!flags.no_progress) o.progress = &ctx.err;
  return OkStatus();
}

// One JSON line per request outcome. Errors: Unavailable naming "--outcomes" when the file
// cannot be written (not a usage error: the run itself went through).
Status WriteOutcomes(const std::vector<loadgen::RequestOutcome>& outcomes,
                     const std::string& path) {
  std::ofstream file(path);
  for (const loadgen::RequestOutcome& o : outcomes) {
    file << ojson{{"ok", o.ok},
                  {"error_kind", o.error_kind},
                  {"due_seconds", o.due_seconds},
                  {"queued_seconds", o.queued_seconds},
                  {"ttft_seconds", o.ttft_seconds},
                  {"e2e_seconds", o.e2e_seconds},
                  {"input_tokens", o.input_tokens},
                  {"output_tokens", o.output_tokens},
                  {"priority", o.priority ? ojson(route::PriorityName(*o.priority)) : ojson()},
                  {"tenant", o.tenant.empty() ? ojson() : ojson(o.tenant)}}
                .dump()
         << "\n";
  }
  file.flush();
  if (!file) {
    return Unavailable(fmt::format("cannot write '{}'", path), "--outcomes");
  }
  return OkStatus();
}

int RunBench(BenchFlags& flags, CommandContext& ctx) {
  if (Status status = ResolveOptions(flags, ctx); !status) return ctx.Fail(status.error());
  flags.options.keep_outcomes = !flags.outcomes_path.empty();
  Result<loadgen::BenchReport> report = loadgen::RunBench(flags.options);
  if (!report) return ctx.Fail(report.error());
  if (flags.options.keep_outcomes) {
    if (Status written = WriteOutcomes(report->outcomes, flags.outcomes_path); !written) {
      return ctx.Fail(written.error());
    }
  }
  if (flags.format == OutputFormat::kJson) {
    ctx.out << ReportJson(*report, flags.options).dump(2) << "\n";
  } else {
    PrintTable(*report, flags.options, ctx.out);
  }
  if (report->requests_completed == 0) {
    return ctx.Fail(Error{ErrorCode::kUnavailable,
                          fmt::format("no request completed ({} sent)", report->requests_sent),
                          ""});
  }
  return kExitOk;
}

void AddWorkloadFlags(CLI::App* cmd, BenchFlags& f) {
  loadgen::WorkloadSpec& w = f.options.workload;
  cmd->add_option("--input-tokens", w.input.mean_tokens, "Mean prompt length in tokens (words)")
      ->capture_default_str();
  cmd->add_option("--output-tokens", w.output.mean_tokens, "Mean max_tokens per request")
      ->capture_default_str();
  cmd->add_option("--stddev", f.stddev,
                  "Standard deviation (tokens) of both lengths, normal distribution")
      ->capture_default_str();
  f.input_stddev = cmd->add_option("--input-stddev", w.input.stddev_tokens,
                                   "Standard deviation of prompt lengths (overrides --stddev)");
  f.output_stddev = cmd->add_option("--output-stddev", w.output.stddev_tokens,
                                    "Standard deviation of output lengths (overrides --stddev)");
  cmd->add_option("--seed", w.seed,
                  "Seed for Poisson arrivals and lengths, and a tenants: workload")
      ->capture_default_str();
  cmd->add_option("--max-requests", w.max_requests, "Stop after this many requests (0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--trace-format", f.trace_format,
                  "auto, azure_csv, mooncake_jsonl, plain_csv, plain_jsonl")
      ->capture_default_str();
  cmd->add_option("--trace-speedup", f.trace_speedup, "Replay the trace this many times faster")
      ->capture_default_str();
  cmd->add_flag("--skip-bad-rows", f.skip_bad_rows,
                "Skip malformed trace rows (counted on stderr) instead of failing on the first");
}

}  // namespace

void AddBenchCommands(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<BenchFlags>();
  loadgen::BenchOptions& o = f->options;
  o.duration_seconds = 0;
  o.url = "http://127.0.0.1:8000";  // the gateway of `gpuscale serve` (docs/gateway.md)
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Load an OpenAI-compatible server with streaming completions and report TTFT, "
      "inter-token latency, end-to-end latency (p50/p90/p99), throughput and errors");
  cmd->footer(kJsonHelp);
  cmd->add_option("--url", o.url,
                  "Server base URL (default: the gateway of a `gpuscale serve` on this "
                  "machine, http://127.0.0.1:8000)");
  cmd->add_option("--model", o.model, "Model name to request (default: first of /v1/models)");
  f->concurrency = cmd->add_option(
      "--concurrency", o.concurrency,
      "Closed loop: clients sending back to back (default 1). With --rate/--trace: most "
      "requests in flight (default 256)");
  f->rate_option = cmd->add_option("--rate", f->rate, "Open loop: Poisson arrivals per second");
  cmd->add_option("--trace", f->trace,
                  "Replay arrivals and lengths of this trace file (its hash_ids, when it has "
                  "them, as shared prompt text), or tenants:KEY=VALUE,... for the multi-tenant "
                  "workload seeded by --seed (keys as in `gpuscale simulate --trace`)")
      ->excludes(f->rate_option);
  cmd->add_option("--duration", o.duration_seconds, "Seconds during which requests start")
      ->required();
  cmd->add_option("--request-timeout", o.client.read_timeout_seconds,
                  "Longest silence inside one response before it fails (read_error)")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", o.drain_timeout_seconds,
                  "After --duration: how long requests in flight may finish")
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", o.client.ignore_eos,
                "Send vLLM's ignore_eos so every output reaches --output-tokens");
  cmd->add_flag("--no-progress", f->no_progress, "No progress line on stderr");
  cmd->add_option("--priority-header", o.client.priority_header,
                  "Header naming a trace request's priority (\"\" = not sent)")
      ->capture_default_str();
  cmd->add_option("--tenant-header", o.client.tenant_header,
                  "Header naming a trace request's tenant (\"\" = not sent); the gateway's "
                  "admission.tenant_header")
      ->capture_default_str();
  cmd->add_option("--slo-ttft", o.slo.ttft_seconds,
                  "Per-priority report: a completion within the SLO has at most this TTFT "
                  "(seconds; 0 = no bound)")
      ->capture_default_str();
  cmd->add_option("--slo-tpot", o.slo.tpot_seconds,
                  "... and at most this time per output token (seconds; 0 = no bound)")
      ->capture_default_str();
  cmd->add_option("--outcomes", f->outcomes_path,
                  "Also write every request's outcome to this file, one JSON object a line");
  AddWorkloadFlags(cmd, *f);
  AddOutputOption(cmd, f->format);
  cmd->callback([f, &ctx] { RunBench(*f, ctx); });
}

}  // namespace gpuscale::cli
