#include "cli/serve_server.h"

#include <utility>

#include "cli/command.h"

namespace gpuscale::cli {

Result<std::unique_ptr<ServeServer>> ServeServer::Start(ServeServerOptions options, Clock& clock) {
  std::unique_ptr<ServeServer> server(new ServeServer());
  GS_ASSIGN_OR_RETURN(server->daemon_.daemon,
                      daemon::Daemon::Open(options.config, clock, options.daemon));
  if (options.daemon.gateway) {
    GS_ASSIGN_OR_RETURN(server->gateway_, gateway::GatewayServer::Start(options.daemon.gateway));
  }
  server->api_ = std::make_unique<api::ApiServer>(server->daemon(), options.api);
  GS_ASSIGN_OR_RETURN(server->api_port_, server->api_->Start());
  if (!options.keda_listen.empty()) {
    daemon::ApiConfig where;
    if (Status ok =
            ParseListenFlag(options.keda_listen, "--keda-scaler-listen", where.host, where.port);
        !ok) {
      return Unexpected<Error>(ok.error());
    }
    server->keda_ = std::make_unique<k8s::ExternalScalerServer>(
        server->daemon(), k8s::ExternalScalerOptions{where.host, where.port});
    GS_ASSIGN_OR_RETURN(server->keda_port_, server->keda_->Start());
  }
  return server;
}

}  // namespace gpuscale::cli
