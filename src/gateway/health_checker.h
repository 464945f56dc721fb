// HealthChecker: the gateway's active health checks. Every GatewayConfig::health_check_interval
// each published replica is asked GET health_check_path on a fresh connection; an answer
// below 500 within health_check_timeout passes (a server without the path answers 404: it is
// alive), no connection, no answer in time or a 5xx fails. GatewayState::ReportProbe turns
// the outcomes into rotation. Why active checks and not only the passive ejection: a replica
// that stopped (SIGSTOP, a wedged engine) still accepts connections in the kernel's backlog
// and never fails a request, so nothing passive notices; requests then waited for the
// upstream timeout, 600 s. The daemon's own prober restarts such a replica later; the
// gateway stops sending to it within interval x failures + timeout (about 5 s by default),
// in `gpuscale serve` and in the standalone `gpuscale gateway` alike. Envoy's active health
// checking does the same. A probe that fails here for a local reason (no descriptor left)
// reports nothing: the replica is not to blame.
//
// Runs as coroutines on one of the gateway's I/O threads; Stop() (or the io_context's end)
// ends them. Private to the gateway (it includes net's Asio headers).
#pragma once

#include <memory>

#include "gateway/gateway_state.h"
#include "net/http_server.h"

namespace gpuscale::gateway {

class HealthChecker {
 public:
  // Starts the checks on `context` when the config's interval is > 0.
  static std::unique_ptr<HealthChecker> Start(net::asio::io_context& context,
                                              std::shared_ptr<GatewayState> state);
  ~HealthChecker();
  void Stop();

  struct Shared;

 private:
  explicit HealthChecker(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  std::shared_ptr<Shared> shared_;
};

}  // namespace gpuscale::gateway
