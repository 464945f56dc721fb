// `gpuscale serve`: the daemon (daemon::Daemon) plus the REST API (api::ApiServer), wired by
// ServeServer (serve_server.h), until SIGINT/SIGTERM; SIGHUP reads the config file again and
// applies its services, prometheus, tasks and loop_interval_seconds (Daemon::Reload); SIGCHLD
// (a replica exited) wakes the control loop at once. Signals are blocked before any thread
// starts and taken with sigwait on this thread, so no work happens in a signal handler and
// every thread inherits the mask (replica processes get a clean mask from the orchestrator).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cli/command.h"
#include "cli/descriptor_plan.h"
#include "cli/serve_server.h"
#include "core/clock.h"
#include "daemon/daemon.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::cli {
namespace {

struct ServeFlags {
  std::string config_path;
  std::string listen;
  std::string port;  // not a serve flag: given, it is refused with a pointer to --listen
  std::string state_dir;
  std::string token;
  double loop_interval_seconds = 0;  // 0 = the config's
  bool keep_replicas = false;
  std::string web_root;  // "" = look next to the binary (DefaultWebRoot)
  std::string keda_scaler_listen;  // "" = no KEDA external scaler
  std::string gateway_listen;      // "" = the config's; "off" = no gateway
  std::string gateway_token;
};

std::string SelfExe() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("gpuscale") : p.string();
}

// The built dashboard when the binary runs from a build tree (build/gpuscale ->
// web/dist) or an install prefix (bin/gpuscale -> share/gpuscale/web); "" when neither exists,
// so the daemon runs without the UI rather than failing.
std::string DefaultWebRoot() {
  const std::filesystem::path exe_dir = std::filesystem::path(SelfExe()).parent_path();
  for (const std::filesystem::path& candidate :
       {exe_dir.parent_path() / "web" / "dist", exe_dir.parent_path() / "share" / "gpuscale" / "web"}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate / "index.html", ec)) return candidate.string();
  }
  return "";
}

// "host:port" (host may be empty for 127.0.0.1). Errors name --listen.
Status ApplyListen(const std::string& listen, daemon::ApiConfig& api) {
  return ParseListenFlag(listen, "--listen", api.host, api.port);
}

Result<daemon::DaemonConfig> LoadConfig(const ServeFlags& flags) {
  daemon::DaemonConfig config;
  if (flags.config_path.empty()) {
    config = daemon::EmbeddedDefaultConfig(SelfExe());
  } else {
    GS_ASSIGN_OR_RETURN(config, daemon::LoadDaemonConfig(flags.config_path));
  }
  if (!flags.listen.empty()) GS_RETURN_IF_ERROR(ApplyListen(flags.listen, config.api));
  if (flags.gateway_listen == "off") {
    config.gateway.enabled = false;
  } else if (!flags.gateway_listen.empty()) {
    daemon::ApiConfig where{config.gateway.host, config.gateway.port, ""};
    if (Status ok = ApplyListen(flags.gateway_listen, where); !ok) {
      Error e = ok.error();
      e.field = "--gateway-listen";
      return Unexpected<Error>(e);
    }
    config.gateway.enabled = true;
    config.gateway.host = where.host;
    config.gateway.port = where.port;
  }
  if (!flags.gateway_token.empty()) config.gateway.token = flags.gateway_token;
  if (!flags.state_dir.empty()) config.state_dir = flags.state_dir;
  if (!flags.token.empty()) config.api.token = flags.token;
  if (flags.loop_interval_seconds < 0) {
    return InvalidArgument("must be > 0 seconds", "--loop-interval");
  }
  if (flags.loop_interval_seconds > 0) config.loop_interval = Seconds{flags.loop_interval_seconds};
  return config;
}

void PrintStartup(CommandContext& ctx, const daemon::DaemonConfig& config, int port,
                  const std::string& web_root, daemon::Daemon& d,
                  const gateway::GatewayServer* gateway) {
  // The gateway line comes first: scripts and tests that wait for the API line have it then.
  if (gateway != nullptr) {
    ctx.out << fmt::format(
        "gpuscale serve: gateway {}/v1 (OpenAI API: chat/completions, completions, "
        "embeddings, models)\n",
        gateway->url());
  }
  const std::string base = fmt::format("http://{}:{}", config.api.host, port);
  ctx.out << fmt::format("gpuscale serve: API {}  metrics {}/metrics\n", base, base);
  ctx.out << (web_root.empty()
                  ? std::string("dashboard: not built (scripts/setup builds web/dist)\n")
                  : fmt::format("dashboard: {}/ (from {})\n", base, web_root));
  ctx.out << fmt::format("state: {}\n", config.state_dir);
  for (const daemon::ServiceView& s : d.ListServices()) {
    ctx.out << fmt::format("services: {} ({}, {}..{} replicas, models: {})\n", s.config.name,
                           s.policy_family, s.config.min_replicas, s.config.max_replicas,
                           fmt::join(s.config.ServedModels(), ", "));
  }
  ctx.out << std::flush;
}

// SIGHUP: the config file again, with the same command-line overrides as at start.
void Reload(const ServeFlags& flags, daemon::Daemon& d, CommandContext& ctx) {
  const daemon::ReloadReport report = d.Reload(LoadConfig(flags));
  ctx.err << fmt::format("gpuscale serve: SIGHUP: {}: {}\n",
                         flags.config_path.empty() ? "the embedded default" : flags.config_path,
                         daemon::FormatReloadReport(report))
          << std::flush;
}

void RunServe(const ServeFlags& flags, CommandContext& ctx) {
  if (!flags.port.empty()) {
    ctx.Fail(Error{ErrorCode::kInvalidArgument,
                   fmt::format("serve takes addresses, not ports: --listen 127.0.0.1:{} for the "
                               "REST API, --gateway-listen 127.0.0.1:{} for the OpenAI gateway",
                               flags.port, flags.port),
                   "--port"});
    return;
  }
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  // A replica process that exits wakes the control loop at once (it reaps and restarts it)
  // instead of at the next tick. Blocked and taken here, SIGCHLD leaves waitpid as it is.
  sigaddset(&stop_signals, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  struct RestoreMask {
    sigset_t mask;
    ~RestoreMask() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous};

  Result<daemon::DaemonConfig> config = LoadConfig(flags);
  if (!config) {
    // Any config problem is the user's input: exit 2 with the field and line.
    Error e = config.error();
    if (e.code != ErrorCode::kInvalidArgument) e.code = ErrorCode::kInvalidArgument;
    ctx.Fail(e);
    return;
  }
  RaiseOpenFilesLimit();  // API streams and gateway clients hold a descriptor each
  // The control plane keeps its descriptors whatever the gateway's clients do
  // (descriptor_plan.h); lowered limits are said once, here.
  const auto [fd_limit, fd_in_use] = DescriptorUsage();
  Result<DescriptorPlan> fds = PlanDescriptors(
      {.limit = fd_limit,
       .in_use = fd_in_use,
       .api_max_connections = config->api.max_connections,
       .gateway_max_connections = config->gateway.enabled ? config->gateway.max_connections : 0,
       .gateway_max_idle_upstream = config->gateway.max_idle_upstream});
  if (!fds) {
    ctx.Fail(fds.error());
    return;
  }
  for (const std::string& note : fds->notes) ctx.err << "gpuscale serve: " << note << "\n";
  config->api.max_connections = fds->api_max_connections;
  if (config->gateway.enabled) {
    config->gateway.max_connections = fds->gateway_max_connections;
    config->gateway.max_idle_upstream = fds->gateway_max_idle_upstream;
  }
  daemon::DaemonOptions options;
  if (config->gateway.enabled) {
    options.gateway = std::make_shared<gateway::GatewayState>(config->gateway);
    options.gateway->SetProbeListener([&ctx](const std::string& replica, bool down) {
      ctx.err << (down ? fmt::format("gpuscale serve: gateway: replica {} stopped answering "
                                     "health checks: out of rotation\n",
                                     replica)
                       : fmt::format("gpuscale serve: gateway: replica {} answers again: back "
                                     "in rotation\n",
                                     replica))
              << std::flush;
    });
  }
  ServeServerOptions serve{*config, std::move(options), {}, flags.keda_scaler_listen};
  serve.api.host = config->api.host;
  serve.api.port = config->api.port;
  serve.api.token = config->api.token;
  serve.api.max_connections = config->api.max_connections;
  serve.api.max_connections_per_client = config->api.max_connections_per_client;
  serve.api.max_event_streams = config->api.max_event_streams;
  const std::string web_root = flags.web_root.empty() ? DefaultWebRoot() : flags.web_root;
  serve.api.web_root = web_root;
  // What started before a failure is stopped by the server's destruction, replicas left.
  Result<std::unique_ptr<ServeServer>> server =
      ServeServer::Start(std::move(serve), SystemClock::Instance());
  if (!server) {
    ctx.Fail(server.error());
    return;
  }
  daemon::Daemon& d = (*server)->daemon();
  if (std::optional<int> keda_port = (*server)->keda_port()) {
    const size_t colon = flags.keda_scaler_listen.rfind(':');
    const std::string host = colon > 0 ? flags.keda_scaler_listen.substr(0, colon) : "127.0.0.1";
    ctx.out << fmt::format("KEDA external scaler: {}:{} (gRPC)\n", host, *keda_port);
  }
  (*server)->Run();
  PrintStartup(ctx, *config, (*server)->api_port(), web_root, d, (*server)->gateway());
  int signal_number = 0;
  while (sigwait(&stop_signals, &signal_number) == 0 &&
         (signal_number == SIGHUP || signal_number == SIGCHLD)) {
    if (signal_number == SIGCHLD) {
      d.OnChildExited();
    } else {
      Reload(flags, d, ctx);
    }
  }
  ctx.err << fmt::format("gpuscale serve: received {}; {}\n",
                         signal_number == SIGTERM ? "SIGTERM" : "SIGINT",
                         flags.keep_replicas ? "leaving replicas running" : "stopping replicas")
          << std::flush;
  // The KEDA scaler, the gateway, the API, then the daemon stop as `server` goes.
  (*server)->StopReplicasOnExit(!flags.keep_replicas);
}

}  // namespace

void AddServeCommands(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the autoscaling daemon: GPU monitor, services of replicas, the control loop and "
      "the REST API (docs/api.md). Without --config: simulated GPUs (4 x H100) and one demo "
      "service of emulated replicas. Stops on SIGINT/SIGTERM; SIGHUP re-reads the config "
      "file and applies its services, prometheus, tasks and loop_interval_seconds (gpu, api "
      "and state_dir at the next start).");
  cmd->add_option("--config", flags->config_path, "Daemon config file (YAML), e.g. gpuscale.yaml");
  // Hidden: only to answer the flag other servers (vllm, emulate) take with a hint.
  cmd->add_option("--port", flags->port)->group("");
  cmd->add_option("--listen", flags->listen,
                  "API address HOST:PORT (overrides api.listen; "
                  "port 0 = any free port)");
  cmd->add_option("--state-dir", flags->state_dir,
                  "State directory: SQLite database and replica logs (overrides state_dir)");
  cmd->add_option("--token", flags->token, "Bearer token the API requires (overrides api.token)");
  cmd->add_option("--loop-interval", flags->loop_interval_seconds,
                  "Seconds between control ticks (overrides loop_interval_seconds)");
  cmd->add_option("--web-root", flags->web_root,
                  "Directory of the built dashboard served at / (default: web/dist next to "
                  "the build tree, or share/gpuscale/web of the install prefix)");
  cmd->add_option("--keda-scaler-listen", flags->keda_scaler_listen,
                  "HOST:PORT for KEDA's external scaler (gRPC, docs/cluster.md); off unless "
                  "given");
  cmd->add_option("--gateway-listen", flags->gateway_listen,
                  "OpenAI-compatible gateway address HOST:PORT (overrides gateway.listen, "
                  "default 127.0.0.1:8000; port 0 = any free port; 'off' = no gateway)");
  cmd->add_option("--gateway-token", flags->gateway_token,
                  "Bearer token clients must send to the gateway (overrides gateway.token)");
  cmd->add_flag("--keep-replicas-on-exit", flags->keep_replicas,
                "Leave replicas running on exit, for the next `serve` to adopt");
  cmd->callback([flags, &ctx] { RunServe(*flags, ctx); });
}

}  // namespace gpuscale::cli
