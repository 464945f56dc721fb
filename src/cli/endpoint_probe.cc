#include "cli/endpoint_probe.h"

#include <fmt/format.h>

#include "loadgen/bench_runner.h"
#include "profile/point_summary.h"

namespace gpuscale::cli {
namespace {

bool ConnectionFailure(const std::string& kind) {
  return kind == "connection_error" || kind == "connect_timeout";
}

}  // namespace

EndpointProbe::EndpointProbe(EndpointProbeOptions options) : options_(std::move(options)) {}

Result<profile::CurvePoint> EndpointProbe::Measure(const profile::Mix& mix, double rate_rps) {
  loadgen::BenchOptions o;
  o.url = options_.url;
  o.model = options_.model;
  o.workload.mode = loadgen::ArrivalMode::kPoisson;
  o.workload.rate_per_second = rate_rps;
  o.workload.input = {mix.prompt_tokens, 0};
  o.workload.output = {mix.output_tokens, 0};
  o.workload.seed = options_.seed;
  o.concurrency = options_.max_in_flight;
  o.duration_seconds = options_.warmup_seconds + options_.step_seconds;
  o.drain_timeout_seconds = options_.drain_timeout_seconds;
  o.client.read_timeout_seconds = options_.request_timeout_seconds;
  o.client.ignore_eos = options_.ignore_eos;
  o.keep_outcomes = true;
  GS_ASSIGN_OR_RETURN(loadgen::BenchReport report, loadgen::RunBench(o));
  if (!report.model.empty()) options_.model = report.model;
  std::erase_if(report.outcomes, [this](const loadgen::RequestOutcome& outcome) {
    return outcome.due_seconds < options_.warmup_seconds;
  });
  if (report.outcomes.empty()) {
    return InvalidArgument(fmt::format("no request was due in a {} s step at {} req/s; "
                                       "lengthen the step or raise the start rate",
                                       options_.step_seconds, rate_rps),
                           "--duration");
  }
  bool unreachable = report.requests_completed == 0;
  for (const auto& [kind, count] : report.errors_by_kind) {
    unreachable = unreachable && ConnectionFailure(kind);
  }
  if (unreachable) {
    return Unavailable(fmt::format("no request to {} completed ({} sent; first error: {})",
                                   options_.url, report.requests_sent, report.first_error_detail),
                       "--url");
  }
  return profile::SummarizePoint(rate_rps, profile::LatenciesOf(report.outcomes), options_.slo);
}

}  // namespace gpuscale::cli
