// `gpuscale gateway`: the serving gateway (gateway/gateway_server.h) on its own, in front of
// replicas that gpuscale does not run: existing vLLM/SGLang servers, or the upstreams of a
// benchmark (scripts/gateway-bench). Each --route names the models one service serves and
// its replicas:
//   gpuscale gateway --listen 127.0.0.1:8000
//       --route llama-3-8b=10.0.0.5:8000,10.0.0.6:8000 --route embed,bge=127.0.0.1:9000
// The routes are fixed for the process's life and every replica counts as warm (no slow
// start); there is no prober, so a dead replica leaves rotation through passive health
// (gateway.eject_after_failures) and returns when a later request to it succeeds. Under
// `gpuscale serve` the daemon publishes the routes instead. Prints "gateway http://HOST:PORT"
// on stdout once bound; runs until SIGINT/SIGTERM.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "gateway/gateway_server.h"
#include "gateway/gateway_state.h"

namespace gpuscale::cli {
namespace {

struct GatewayFlags {
  std::string listen = "127.0.0.1:8000";
  std::vector<std::string> routes;
  std::string token;
  int threads = 2;
  std::string router = "least_outstanding";
  bool prefix_affinity = false;
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

// One `--route MODELS=REPLICAS` value: MODELS is name[,name...] (the first names the
// service), REPLICAS is host:port[,host:port...]. Errors name --route and the bad piece.
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
  for (const std::string& replica : Split(text.substr(eq + 1), ',')) {
    gateway::ReplicaRoute r;
    r.id = fmt::format("{}/{}", service.name, replica);
    r.host = "";
    GS_RETURN_IF_ERROR(ParseListenFlag(replica, "--route", r.host, r.port));
    if (r.host.empty() || r.port == 0) {
      return InvalidArgument(
          fmt::format("replica '{}' in '{}': expected HOST:PORT with a host and a port > 0",
                      replica, text),
          "--route");
    }
    service.replicas.push_back(std::move(r));
  }
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
  if (flags.router == "least_outstanding") {
    config.picker.kind = route::PickerKind::kLeastOutstanding;
  } else if (flags.router == "round_robin") {
    config.picker.kind = route::PickerKind::kRoundRobin;
  } else {
    return InvalidArgument(
        fmt::format("expected least_outstanding or round_robin, got '{}'", flags.router),
        "--router");
  }
  config.picker.prefix_affinity = flags.prefix_affinity;
  config.picker.slow_start_seconds = 0;  // fixed replicas are warm
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
  auto state = std::make_shared<gateway::GatewayState>(*config);
  state->Publish(*routes);
  Result<std::unique_ptr<gateway::GatewayServer>> server = gateway::GatewayServer::Start(state);
  if (!server) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    ctx.Fail(server.error());
    return;
  }
  ctx.out << fmt::format("gateway {}\n", (*server)->url()) << std::flush;
  for (const gateway::ServiceRoute& s : *routes) {
    ctx.err << fmt::format("  {} -> {} replica(s)\n", fmt::join(s.models, ", "),
                           s.replicas.size());
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
                  "replicas (repeat per service)")
      ->required();
  cmd->add_option("--token", flags->token, "Bearer token clients must send");
  cmd->add_option("--threads", flags->threads, "I/O threads")->capture_default_str();
  cmd->add_option("--router", flags->router, "least_outstanding | round_robin")
      ->capture_default_str();
  cmd->add_flag("--prefix-affinity", flags->prefix_affinity,
                "Send requests whose prompts start alike to the same replica (prefix cache "
                "hits) while it is not overloaded");
  cmd->callback([flags, &ctx] { RunGateway(*flags, ctx); });
}

}  // namespace gpuscale::cli
