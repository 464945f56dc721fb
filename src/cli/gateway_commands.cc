// `gpuscale gateway`: the serving gateway (gateway/gateway_server.h) on its own, in front of
// replicas that gpuscale does not run: existing vLLM/SGLang servers, or the upstreams of a
// benchmark (scripts/gateway-bench). Each --route names the models one service serves and
// its replicas:
//   gpuscale gateway --listen 127.0.0.1:8000
//       --route llama-3-8b=10.0.0.5:8000,10.0.0.6:8000 --route embed,bge=127.0.0.1:9000
// A disaggregated service (docs/gateway.md) names its prefill and decode replicas apart:
//       --route 'llama-70b=prefill:10.0.0.7:8000,10.0.0.8:8000;decode:10.0.0.9:8000'
// The routes are fixed for the process's life and every replica counts as warm (no slow
// start). The gateway's own health checks (gateway/health_checker.h) take a replica that
// stops answering out of rotation and bring it back when it answers; passive health
// (gateway.eject_after_failures) takes out one that refuses requests. Under
// `gpuscale serve` the daemon publishes the routes instead. Prints "gateway http://HOST:PORT"
// on stdout once bound; runs until SIGINT/SIGTERM. Its GET /metrics serves the
// gpuscale_gateway_* families (docs/gateway.md), there being no daemon API to scrape.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <signal.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "cli/descriptor_plan.h"
#include "cli/router_flags.h"
#include "gateway/gateway_server.h"
#include "gateway/gateway_state.h"

namespace gpuscale::cli {
namespace {

struct GatewayFlags {
  std::string listen = "127.0.0.1:8000";
  std::vector<std::string> routes;
  std::string token;
  int threads = 2;
  RouterFlags router;
  double health_check_interval = 2;  // seconds; 0 = off
  // gateway.admission (gateway_config.h says what each does).
  int max_in_flight_per_replica = 0;
  int critical_reserved_per_replica = 0;
  std::string tenant_header;
  double sheddable_max_wait = 2;  // seconds
  double tenant_tokens_per_minute = 0;
};

// Splits `text` at `sep`, keeping empty pieces (so the caller can name them).
std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

// REPLICAS of a --route value: host:port[,host:port...], each replica's id
// "<id_prefix><host:port>". Errors name --route, the replica and the whole value.
Result<std::vector<gateway::ReplicaRoute>> ParseReplicas(const std::string& list,
                                                         const std::string& id_prefix,
                                                         const std::string& text) {
  std::vector<gateway::ReplicaRoute> replicas;
  for (const std::string& replica : Split(list, ',')) {
    gateway::ReplicaRoute r;
    r.id = id_prefix + replica;
    r.host = "";
    if (Status parsed = ParseListenFlag(replica, "--route", r.host, r.port); !parsed) {
      return InvalidArgument(
          fmt::format("replica '{}' in '{}': {}", replica, text, parsed.error().message),
          "--route");
    }
    if (r.host.empty() || r.port == 0) {
      return InvalidArgument(
          fmt::format("replica '{}' in '{}': expected HOST:PORT with a host and a port > 0",
                      replica, text),
          "--route");
    }
    replicas.push_back(std::move(r));
  }
  return replicas;
}

constexpr std::string_view kPrefillRole = "prefill:";
constexpr std::string_view kDecodeRole = "decode:";

// The roles of a disaggregated --route: "prefill:REPLICAS;decode:REPLICAS" (either order),
// each role exactly once. Errors name --route and the piece at fault.
Status ParseRoles(const std::string& roles, const std::string& text,
                  gateway::ServiceRoute& service) {
  service.disaggregated = true;
  bool prefill = false;
  bool decode = false;
  for (const std::string& piece : Split(roles, ';')) {
    const bool is_prefill = piece.starts_with(kPrefillRole);
    if (!is_prefill && !piece.starts_with(kDecodeRole)) {
      return InvalidArgument(
          fmt::format("role piece '{}' in '{}': expected prefill:HOST:PORT[,...] "
                      "or decode:HOST:PORT[,...]",
                      piece, text),
          "--route");
    }
    bool& seen = is_prefill ? prefill : decode;
    if (seen) {
      return InvalidArgument(
          fmt::format("role piece '{}' in '{}': that role is given twice", piece, text), "--route");
    }
    seen = true;
    const std::string role(is_prefill ? "prefill" : "decode");
    const std::string list = piece.substr(role.size() + 1);
    GS_ASSIGN_OR_RETURN(auto replicas,
                        ParseReplicas(list, fmt::format("{}/{}/", service.name, role), text));
    (is_prefill ? service.prefill_replicas : service.replicas) = std::move(replicas);
  }
  if (!prefill || !decode) {
    return InvalidArgument(fmt::format("'{}' has no {} piece: a disaggregated route needs "
                                       "prefill:HOST:PORT[,...];decode:HOST:PORT[,...]",
                                       text, prefill ? "decode" : "prefill"),
                           "--route");
  }
  return OkStatus();
}

// One `--route MODELS=REPLICAS` value: MODELS is name[,name...] (the first names the
// service), REPLICAS is host:port[,host:port...], or for a prefill/decode disaggregated
// service "prefill:host:port[,...];decode:host:port[,...]". Errors name --route and the bad
// piece.
Result<gateway::ServiceRoute> ParseRoute(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument(
        fmt::format("expected MODEL[,MODEL...]=HOST:PORT[,HOST:PORT...], got '{}'", text),
        "--route");
  }
  gateway::ServiceRoute service;
  service.models = Split(text.substr(0, eq), ',');
  for (const std::string& model : service.models) {
    if (model.empty()) {
      return InvalidArgument(fmt::format("empty model name in '{}'", text), "--route");
    }
  }
  service.name = service.models.front();
  const std::string rest = text.substr(eq + 1);
  if (rest.starts_with(kPrefillRole) || rest.starts_with(kDecodeRole)) {
    GS_RETURN_IF_ERROR(ParseRoles(rest, text, service));
    return service;
  }
  GS_ASSIGN_OR_RETURN(service.replicas, ParseReplicas(rest, service.name + "/", text));
  return service;
}

Result<gateway::GatewayConfig> BuildConfig(const GatewayFlags& flags) {
  gateway::GatewayConfig config;
  GS_RETURN_IF_ERROR(ParseListenFlag(flags.listen, "--listen", config.host, config.port));
  config.token = flags.token;
  if (flags.threads < 1 || flags.threads > 64) {
    return InvalidArgument(fmt::format("expected 1..64 I/O threads, got {}", flags.threads),
                           "--threads");
  }
  config.threads = flags.threads;
  // Fixed replicas count as warm: no slow start.
  GS_ASSIGN_OR_RETURN(config.picker, PickerSpecFromFlags(flags.router, {.slow_start_seconds = 0}));
  if (!(flags.health_check_interval >= 0 && flags.health_check_interval <= 3600)) {
    return InvalidArgument(fmt::format("expected 0..3600 seconds (0 = no health checks), got {}",
                                       flags.health_check_interval),
                           "--health-check-interval");
  }
  config.health_check_interval = Seconds(flags.health_check_interval);
  if (flags.max_in_flight_per_replica < 0) {
    return InvalidArgument("expected 0 (no limit) or more", "--max-in-flight-per-replica");
  }
  // As the config's admission block (config/admission_config.cc): the reserve is a share of
  // the limit's slots, so it needs the limit and must leave the others at least one.
  if (flags.critical_reserved_per_replica < 0) {
    return InvalidArgument("expected 0 (none) or more", "--critical-reserved-per-replica");
  }
  if (flags.critical_reserved_per_replica > 0 && flags.max_in_flight_per_replica == 0) {
    return InvalidArgument(
        "reserves slots of --max-in-flight-per-replica, which is 0 (no limit): set it too",
        "--critical-reserved-per-replica");
  }
  if (flags.critical_reserved_per_replica > 0 &&
      flags.critical_reserved_per_replica >= flags.max_in_flight_per_replica) {
    return InvalidArgument(
        fmt::format("expected fewer than --max-in-flight-per-replica ({}), got {}: standard and "
                    "sheddable requests would get no slot",
                    flags.max_in_flight_per_replica, flags.critical_reserved_per_replica),
        "--critical-reserved-per-replica");
  }
  if (!(flags.sheddable_max_wait > 0 && flags.sheddable_max_wait <= 3600)) {
    return InvalidArgument(
        fmt::format("expected seconds in (0, 3600], got {}", flags.sheddable_max_wait),
        "--sheddable-max-wait");
  }
  if (!(flags.tenant_tokens_per_minute >= 0 && std::isfinite(flags.tenant_tokens_per_minute))) {
    return InvalidArgument("expected 0 (no limit) or a positive number of tokens per minute",
                           "--tenant-tokens-per-minute");
  }
  config.admission.max_in_flight_per_replica = flags.max_in_flight_per_replica;
  config.admission.critical_reserved_per_replica = flags.critical_reserved_per_replica;
  config.admission.tenant_header = flags.tenant_header;
  config.admission.sheddable_max_wait = Seconds(flags.sheddable_max_wait);
  config.admission.tenant_tokens_per_minute = flags.tenant_tokens_per_minute;
  return config;
}

// Validates every route, and that no model is routed twice.
Result<std::vector<gateway::ServiceRoute>> BuildRoutes(const std::vector<std::string>& texts) {
  std::vector<gateway::ServiceRoute> services;
  std::map<std::string, std::string> owner;
  for (const std::string& text : texts) {
    GS_ASSIGN_OR_RETURN(gateway::ServiceRoute service, ParseRoute(text));
    for (const std::string& model : service.models) {
      const auto [it, inserted] = owner.emplace(model, text);
      if (!inserted) {
        return InvalidArgument(fmt::format("model '{}' is routed twice ('{}' and '{}')", model,
                                           it->second, text),
                               "--route");
      }
    }
    services.push_back(std::move(service));
  }
  return services;
}

void RunGateway(const GatewayFlags& flags, CommandContext& ctx) {
  Result<gateway::GatewayConfig> config = BuildConfig(flags);
  if (!config) {
    ctx.Fail(config.error());
    return;
  }
  Result<std::vector<gateway::ServiceRoute>> routes = BuildRoutes(flags.routes);
  if (!routes) {
    ctx.Fail(routes.error());
    return;
  }
  // Blocked before the I/O threads start, so they inherit the mask and sigwait takes them.
  sigset_t stop_signals;
  sigset_t previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);

  RaiseOpenFilesLimit();  // a descriptor per client and per pooled upstream connection
  const auto [fd_limit, fd_in_use] = DescriptorUsage();
  Result<DescriptorPlan> fds =
      PlanDescriptors({.limit = fd_limit,
                       .in_use = fd_in_use,
                       .gateway_max_connections = config->max_connections,
                       .gateway_max_idle_upstream = config->max_idle_upstream});
  if (!fds) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    ctx.Fail(fds.error());
    return;
  }
  for (const std::string& note : fds->notes) ctx.err << "gpuscale gateway: " << note << "\n";
  config->max_connections = fds->gateway_max_connections;
  config->max_idle_upstream = fds->gateway_max_idle_upstream;
  auto state = std::make_shared<gateway::GatewayState>(*config);
  state->SetProbeListener([&ctx](const std::string& replica, bool down) {
    ctx.err << (down ? fmt::format("gpuscale gateway: replica {} stopped answering health "
                                   "checks: out of rotation\n",
                                   replica)
                     : fmt::format("gpuscale gateway: replica {} answers again: back in "
                                   "rotation\n",
                                   replica))
            << std::flush;
  });
  state->Publish(*routes);
  Result<std::unique_ptr<gateway::GatewayServer>> server = gateway::GatewayServer::Start(state);
  if (!server) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    ctx.Fail(server.error());
    return;
  }
  ctx.out << fmt::format("gateway {}\n", (*server)->url()) << std::flush;
  for (const gateway::ServiceRoute& s : *routes) {
    if (s.disaggregated) {
      ctx.err << fmt::format("  {} -> {} prefill, {} decode replica(s)\n",
                             fmt::join(s.models, ", "), s.prefill_replicas.size(),
                             s.replicas.size());
    } else {
      ctx.err << fmt::format("  {} -> {} replica(s)\n", fmt::join(s.models, ", "),
                             s.replicas.size());
    }
  }
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  ctx.err << fmt::format("gpuscale gateway: received {}; closing connections\n",
                         signal_number == SIGTERM ? "SIGTERM" : "SIGINT")
          << std::flush;
  (*server)->Stop();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace

void AddGatewayCommands(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<GatewayFlags>();
  CLI::App* cmd = app.add_subcommand(
      "gateway",
      "Run the OpenAI-compatible gateway alone, in front of fixed replicas (vLLM, SGLang or "
      "`gpuscale emulate`); `gpuscale serve` runs the same gateway over the replicas it scales");
  cmd->add_option("--listen", flags->listen, "HOST:PORT to listen on (port 0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--route", flags->routes,
                  "MODEL[,MODEL...]=HOST:PORT[,HOST:PORT...]: a service's models and its "
                  "replicas (repeat per service); for prefill/decode disaggregation, "
                  "MODEL=prefill:HOST:PORT[,...];decode:HOST:PORT[,...] (quote the ';')")
      ->required();
  cmd->add_option("--token", flags->token, "Bearer token clients must send");
  cmd->add_option("--threads", flags->threads, "I/O threads")->capture_default_str();
  cmd->add_option("--health-check-interval", flags->health_check_interval,
                  "Seconds between the gateway's GET /health to each replica (0 = none); two "
                  "unanswered in a row take the replica out of rotation")
      ->capture_default_str();
  cmd->add_option("--max-in-flight-per-replica", flags->max_in_flight_per_replica,
                  "Requests in flight per replica; past it on every replica requests wait by "
                  "priority (x-gpuscale-priority) and tenant (0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--critical-reserved-per-replica", flags->critical_reserved_per_replica,
                  "Of those slots, how many only critical requests may take (0 = none; below "
                  "--max-in-flight-per-replica)")
      ->capture_default_str();
  cmd->add_option("--tenant-header", flags->tenant_header,
                  "Header naming the tenant (default: a hash of the bearer API key)");
  cmd->add_option("--sheddable-max-wait", flags->sheddable_max_wait,
                  "Seconds a sheddable request may wait for a replica before a 429")
      ->capture_default_str();
  cmd->add_option("--tenant-tokens-per-minute", flags->tenant_tokens_per_minute,
                  "Per-tenant limit in expected tokens per minute (0 = none); past it, 429 with "
                  "x-ratelimit-* headers")
      ->capture_default_str();
  AddRouterFlags(cmd, flags->router);
  cmd->callback([flags, &ctx] { RunGateway(*flags, ctx); });
}

}  // namespace gpuscale::cli
