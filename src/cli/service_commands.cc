// `gpuscale services [-w]`: a running daemon's services at a glance, `kubectl get hpa`-style:
// replicas ready/desired against the bounds, the gateway's traffic and TTFT, and the last
// decision's reason (which names the metric and its target), or why its replicas cannot
// start (the API's `failure`), or why its spec is not applied yet (`apply_failure`); a
// disaggregated service's pools each get a line below it (their replicas and GPUs of the shared
// budget). `-w` prints the table again whenever it changes; `-o json` is the API's body (GET
// /v1/services).
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/api_flags.h"
#include "cli/command.h"
#include "core/clock.h"

namespace gpuscale::cli {
namespace {

using Json = ApiClient::Json;

struct ServicesFlags {
  ApiFlags api;
  bool watch = false;
  double interval_seconds = 2;
  int watch_count = 0;  // polls before -w stops; 0 = until interrupted
};

std::string Cell(const Json& value, std::string_view format) {
  if (!value.is_number()) return "-";
  return fmt::format(fmt::runtime(format), value.get<double>());
}

// The reason, cut to `width` characters (the table stays one line per service).
std::string Cut(std::string text, size_t width) {
  if (text.size() <= width) return text;
  text.resize(width - 3);
  return text + "...";
}

// A disaggregated service's pools, a line each under the service's: their replicas, bounds,
// GPUs held of the shared budget and their policy's last reason.
std::string PoolRows(const Json& service) {
  const Json pools = service.value("pools", Json::array());
  const Json budget = service.value("gpu_budget", Json::object());
  std::string out;
  for (const Json& p : pools) {
    if (!p.is_object() || !budget.is_object()) continue;
    out += fmt::format(
        "{:<20} {:<8} {:>11} {:>7} {:>8} {:>9} {}\n", "  " + p.value("role", std::string()),
        p.value("policy_family", ""),
        fmt::format("{}/{}", p.value("ready_replicas", 0), p.value("desired_replicas", 0)),
        fmt::format("{}-{}", p.value("min_replicas", 0), p.value("max_replicas", 0)), "", "",
        Cut(fmt::format("GPUs {} of {}: {}", p.value("gpus_held", 0), budget.value("gpus", 0),
                        p.value("last_reason", "")),
            90));
  }
  return out;
}

std::string Table(const Json& body) {
  std::string out = fmt::format("{:<20} {:<8} {:>11} {:>7} {:>8} {:>9} {}\n", "NAME", "POLICY",
                                "READY/WANT", "MIN-MAX", "REQ/S", "TTFT P50", "LAST DECISION");
  for (const Json& s : body.value("services", Json::array())) {
    const Json gateway = s.value("gateway", Json());
    const Json decision = s.value("last_decision", Json());
    std::string reason = decision.is_object() ? decision.value("reason", "") : "(no tick yet)";
    const Json errors = s.value("metric_errors", Json::array());
    if (errors.is_array() && !errors.empty() && errors[0].is_string()) {
      reason = "metric error: " + errors[0].get<std::string>();
    }
    // Replicas that cannot start matter more than the policy's reading of no metrics.
    if (const Json failure = s.value("failure", Json()); failure.is_string()) {
      reason = "CANNOT START: " + failure.get<std::string>();
    }
    // A spec the daemon could not apply yet explains everything else on the line.
    if (const Json unapplied = s.value("apply_failure", Json()); unapplied.is_object()) {
      reason = fmt::format("NOT APPLIED ({} tries): {}", unapplied.value("attempts", 0),
                           unapplied.value("message", ""));
    }
    const Json manual = s.value("manual_replicas", Json());
    out += fmt::format(
        "{:<20} {:<8} {:>11} {:>7} {:>8} {:>9} {}\n", s.value("name", ""),
        s.value("policy_family", ""),
        fmt::format("{}/{}{}", s.value("ready_replicas", 0), s.value("desired_replicas", 0),
                    manual.is_number() ? "*" : ""),
        fmt::format("{}-{}", s.value("min_replicas", 0), s.value("max_replicas", 0)),
        gateway.is_object() ? Cell(gateway.value("request_rate_per_second", Json()), "{:.1f}")
                            : "-",
        gateway.is_object() ? Cell(gateway.value("ttft_p50_seconds", Json()), "{:.3f}s") : "-",
        Cut(reason, 90));
    out += PoolRows(s);
  }
  return out;
}

int RunServices(const ServicesFlags& flags, CommandContext& ctx) {
  const ApiClient client = MakeClient(flags.api);
  std::string shown;
  for (int polls = 0;; ++polls) {
    Result<Json> body = client.Get("/v1/services");
    if (!body) return ctx.Fail(body.error());
    if (flags.api.format == OutputFormat::kJson) {
      const std::string text = body->dump(2);
      if (text != shown) ctx.out << text << "\n" << std::flush;
      shown = text;
    } else {
      const std::string table = Table(*body);
      if (table != shown) {
        if (flags.watch) ctx.out << FormatRfc3339(SystemClock::Instance().Now()) << "\n";
        ctx.out << table << std::flush;
      }
      shown = table;
    }
    if (!flags.watch || (flags.watch_count > 0 && polls + 1 >= flags.watch_count)) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(flags.interval_seconds));
  }
  return kExitOk;
}

}  // namespace

void AddServiceCommands(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<ServicesFlags>();
  CLI::App* cmd = app.add_subcommand(
      "services",
      "A running daemon's services: replicas ready/desired (* = manual override), bounds, "
      "gateway traffic and TTFT, and the last decision (its metric against the target); -w "
      "prints the table again whenever it changes");
  AddApiFlags(cmd, flags->api);
  cmd->add_flag("-w,--watch", flags->watch, "Keep polling; print the table when it changes");
  cmd->add_option("--interval", flags->interval_seconds, "Seconds between polls with -w")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  cmd->add_option("--watch-count", flags->watch_count,
                  "With -w: stop after this many polls (0 = until Ctrl-C)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->callback([flags, &ctx] { RunServices(*flags, ctx); });
}

}  // namespace gpuscale::cli
