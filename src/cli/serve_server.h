// ServeServer: what `gpuscale serve` runs, wired together -- the daemon, the OpenAI gateway in
// front of its replicas (when configured), the REST API over it and KEDA's external scaler
// (when asked for). Start builds them in that order and, when one cannot start, returns its
// error with what had started already stopped; destruction stops them in the order that lets
// nothing reach a replica about to stop: the KEDA scaler, the gateway, the API, then the
// daemon (Daemon::Shutdown, stopping the replicas only after StopReplicasOnExit(true)). So no
// path out of `serve` repeats the shutdown steps.
//
// Ownership: owns all four. Thread-safety: Start, the accessors and destruction from the
// thread that runs `serve`; the daemon's own methods from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "api/api_server.h"
#include "core/clock.h"
#include "core/result.h"
#include "daemon/daemon.h"
#include "gateway/gateway_server.h"
#include "k8s/external_scaler_server.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::cli {

struct ServeServerOptions {
  daemon::DaemonConfig config;
  daemon::DaemonOptions daemon;  // its gateway state, when there is a gateway
  api::ApiServerOptions api;
  // KEDA's external scaler: HOST:PORT, or "" for none. Errors name --keda-scaler-listen.
  std::string keda_listen;
};

class ServeServer {
 public:
  // Opens the daemon (Daemon::Open's errors), starts the gateway (when options.daemon.gateway
  // is set), the API and the KEDA scaler; the daemon's loop is not started (Run).
  static Result<std::unique_ptr<ServeServer>> Start(ServeServerOptions options, Clock& clock);
  // Stops the KEDA scaler, the gateway and the API, then shuts the daemon down.
  ~ServeServer() = default;
  ServeServer(const ServeServer&) = delete;
  ServeServer& operator=(const ServeServer&) = delete;

  // Starts the daemon's loop.
  void Run() { daemon().Run(); }
  // Whether the daemon's shutdown stops the replicas (default: false, left for adoption, as
  // on every failed start).
  void StopReplicasOnExit(bool stop) { daemon_.stop_replicas = stop; }

  daemon::Daemon& daemon() { return *daemon_.daemon; }
  int api_port() const { return api_port_; }
  std::optional<int> keda_port() const { return keda_port_; }
  const gateway::GatewayServer* gateway() const { return gateway_.get(); }

 private:
  ServeServer() = default;

  // The daemon, shut down when this is destroyed (after every member declared below it).
  struct ShutDownDaemon {
    std::unique_ptr<daemon::Daemon> daemon;
    bool stop_replicas = false;
    ~ShutDownDaemon() {
      if (daemon) daemon->Shutdown(stop_replicas);
    }
  };

  // Declared in the reverse of the stop order (members are destroyed last to first).
  ShutDownDaemon daemon_;
  std::unique_ptr<api::ApiServer> api_;
  // After the API: the gateway stops before it, so no new request reaches replicas that are
  // about to stop; it outlives nothing the daemon's loop needs (the loop publishes routes to
  // the gateway's state, which the daemon shares).
  std::unique_ptr<gateway::GatewayServer> gateway_;
  std::unique_ptr<k8s::ExternalScalerServer> keda_;
  int api_port_ = 0;
  std::optional<int> keda_port_;
};

}  // namespace gpuscale::cli
