// ApiServer: gpuscale's REST API (JSON under /v1/...), a live event stream (SSE), the
// daemon's own Prometheus metrics (/metrics), health probes and, optionally, the static
// files of the web dashboard, all over one daemon::DaemonApi. What `gpuscale serve` runs;
// the endpoints, bodies and status codes are documented in docs/api.md.
//
// The server holds no business logic: it parses requests, calls DaemonApi and maps each
// ErrorCode to one HTTP status (400/404/409/503/500). When options.token is set, every
// endpoint except /healthz and /readyz requires `Authorization: Bearer <token>`.
//
// Threads: the asynchronous server layer (net::HttpServer: Boost.Asio + Beast) reads and
// writes every connection on `io_threads`; handlers run on a pool of `worker_threads`, so a
// slow DaemonApi call holds one worker while connections, event streams and other requests
// go on. Open connections cost no thread: hundreds of event streams and slow clients cannot
// lock the API out (each request has header_timeout to arrive whole; headers over 64 KiB or
// 100 fields get 431, bodies over 1 MiB, chunked or not, 413; past max_event_streams a new
// stream gets 503). One EventHub thread waits for new events and wakes the streams.
//
// Ownership and thread-safety: the DaemonApi must outlive the server. Start() and Stop() may
// be called from one thread at a time (the owner's); Stop() is idempotent and also runs in
// the destructor. port() is safe from any thread after Start().
#pragma once

#include <memory>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "daemon_api/daemon_api.h"

namespace gpuscale::api {

struct ApiServerOptions {
  std::string host = "127.0.0.1";  // listen address; loopback unless asked otherwise
  int port = 8080;                 // 0 = the kernel picks a free port (read back from Start)
  std::string token = "";          // bearer token; empty = no authentication
  std::string web_root = "";       // directory of static files served at "/" (index.html
                                   // for "/"); empty = no static files
  int io_threads = 1;              // threads serving connections (reads, writes, streams)
  int worker_threads = 4;          // threads running handlers (DaemonApi calls, JSON)
  int max_connections = 4096;      // open connections (net/connection_table.h: past it a
                                   // newcomer displaces a connection waiting for a request)
  int max_connections_per_client = 1024;  // per client address, the same way; 0 = no cap
  int max_event_streams = 1024;    // open GET /v1/events/stream; past it 503
  Seconds header_timeout{10};      // a new connection's whole request (slow-header bound)
  Seconds idle_timeout{30};        // a kept-alive connection's next request
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
  // "io_threads", "worker_threads", "max_connections", "max_event_streams", "web_root" when
  // it is set but not a directory).
  Result<int> Start();

  // Stops accepting connections, ends open event streams (each gets the chunked stream's
  // end), and joins the server threads; requests in flight are cut.
  // Idempotent; safe to call when Start() failed or was never called.
  void Stop();

  // The bound port after a successful Start(), else 0.
  int port() const;
  // Open event streams (for tests and the daemon's metrics).
  int event_streams() const;

  struct Impl;  // in api_server.cc; public only so that the .cc's helpers can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::api
