#include "workload/bench_options.h"

#include <fmt/format.h>

#include <cmath>

#include "workload/server_url.h"

namespace gpuscale::loadgen {
namespace {

Status CheckSeconds(double value, const char* flag, bool allow_zero) {
  if (!std::isfinite(value) || value < 0 || (!allow_zero && value == 0)) {
    return InvalidArgument(
        fmt::format("expected a number of seconds {} 0, got {}", allow_zero ? ">=" : ">", value),
        flag);
  }
  return OkStatus();
}

// "" is allowed: that header is not sent.
Status CheckHeaderName(const std::string& name, const char* flag) {
  if (name.find_first_of(" :\r\n\t") != std::string::npos) {
    return InvalidArgument(fmt::format("expected a header name, got '{}'", name), flag);
  }
  return OkStatus();
}

}  // namespace

Status ValidateBenchOptions(const BenchOptions& options) {
  GS_RETURN_IF_ERROR(ParseServerUrl(options.url));
  GS_RETURN_IF_ERROR(ValidateWorkloadSpec(options.workload));
  if (options.concurrency < 1 || options.concurrency > 10000) {
    return InvalidArgument(fmt::format("expected 1..10000, got {}", options.concurrency),
                           "--concurrency");
  }
  GS_RETURN_IF_ERROR(CheckSeconds(options.duration_seconds, "--duration", false));
  GS_RETURN_IF_ERROR(CheckSeconds(options.drain_timeout_seconds, "--drain-timeout", true));
  GS_RETURN_IF_ERROR(CheckSeconds(options.client.read_timeout_seconds, "--request-timeout", false));
  GS_RETURN_IF_ERROR(CheckSeconds(options.slo.ttft_seconds, "--slo-ttft", true));
  GS_RETURN_IF_ERROR(CheckSeconds(options.slo.tpot_seconds, "--slo-tpot", true));
  GS_RETURN_IF_ERROR(CheckHeaderName(options.client.priority_header, "--priority-header"));
  GS_RETURN_IF_ERROR(CheckHeaderName(options.client.tenant_header, "--tenant-header"));
  return OkStatus();
}

}  // namespace gpuscale::loadgen
