// ApiServer: gpuscale's REST API (JSON under /v1/...), a live event stream (SSE), the
// daemon's own Prometheus metrics (/metrics), health probes and, optionally, the static
// files of the web dashboard, all over one daemon::DaemonApi. What `gpuscale serve` runs;
// the endpoints, bodies and status codes are documented in docs/api.md.
//
// The server holds no business logic: it parses requests, calls DaemonApi and maps each
// ErrorCode to one HTTP status (400/404/409/503/500). When options.token is set, every
// endpoint except /healthz and /readyz requires `Authorization: Bearer <token>`.
//
// Threads: cpp-httplib's listener thread and its worker pool, started by Start(); each open
// connection (an SSE stream included) occupies one worker. Event streams poll
// DaemonApi::WaitForEvents with short timeouts so that Stop() ends them promptly.
//
// Ownership and thread-safety: the DaemonApi must outlive the server. Start() and Stop() may
// be called from one thread at a time (the owner's); Stop() is idempotent and also runs in
// the destructor. port() is safe from any thread after Start().
#pragma once

#include <memory>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "daemon/daemon_api.h"

namespace gpuscale::api {

struct ApiServerOptions {
  std::string host = "127.0.0.1";  // listen address; loopback unless asked otherwise
  int port = 8080;                 // 0 = the kernel picks a free port (read back from Start)
  std::string token = "";          // bearer token; empty = no authentication
  std::string web_root = "";       // directory of static files served at "/" (index.html
                                   // for "/"); empty = no static files
  int http_threads = 32;           // HTTP worker threads = most concurrent connections
                                   // (each open event stream holds one)
  Seconds sse_keepalive{15};       // idle time before an event stream sends `: keepalive`
};

class ApiServer {
 public:
  ApiServer(daemon::DaemonApi& daemon, ApiServerOptions options);
  ~ApiServer();  // Stop()
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds host:port and serves on background threads; returns the bound port (the chosen
  // one when options.port is 0). Errors: kUnavailable naming host:port when the address
  // cannot be bound (in use, bad host; field "api.listen"); kFailedPrecondition when
  // already started (a server starts once); kInvalidArgument naming the option ("port",
  // "http_threads", "web_root" when it is set but not a directory).
  Result<int> Start();

  // Stops accepting connections, ends open event streams and joins the server threads.
  // Idempotent; safe to call when Start() failed or was never called.
  void Stop();

  // The bound port after a successful Start(), else 0.
  int port() const;

  struct Impl;  // in api_server.cc; public only so that the .cc's helpers can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::api
