// GatewayServer: the OpenAI-compatible front door of `gpuscale serve` (docs/gateway.md).
//
//   POST /v1/chat/completions, /v1/completions, /v1/embeddings: the body's `model` picks the
//        service (GatewayState's route table); the request goes, bytes unchanged, to the
//        replica route::Picker chooses, and the response comes back as it arrives (SSE chunk
//        by chunk, never buffered whole). A connection refused or reset before the replica's
//        first response byte is retried once on another replica; after it, the error reaches
//        the client. A client that goes away closes the replica's connection, which cancels
//        the request there.
//   GET  /v1/models: the union of the services' models. GET /health: 200 while listening.
// A service with no ready replica holds the request in its activator queue (bounded, with a
// timeout) and tells the daemon at once; a full queue or an expired wait answers 503 with
// Retry-After. Errors use OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
//
// Built on Boost.Asio + Beast with C++20 coroutines: one coroutine per connection, each on
// one of a few I/O threads, for thousands of streams (cpp-httplib's thread per connection
// does not scale to that), timeouts on every read, back-pressure instead of buffers: a chunk
// is read from the replica only after the previous one was written to the client.
//
// Ownership: shares GatewayState with the daemon. Thread-safety: Start/Stop from one thread.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "gateway/gateway_state.h"

namespace gpuscale::gateway {

class GatewayServer {
 public:
  // Binds state->config()'s host:port and starts its I/O threads. Errors: kUnavailable
  // naming the address when it cannot be bound, kInvalidArgument for a bad host.
  static Result<std::unique_ptr<GatewayServer>> Start(std::shared_ptr<GatewayState> state);
  ~GatewayServer();  // Stop()
  GatewayServer(const GatewayServer&) = delete;
  GatewayServer& operator=(const GatewayServer&) = delete;

  // Closes the listener and every connection, then joins the threads. Idempotent.
  void Stop();
  int port() const;
  std::string url() const;  // "http://host:port"

 private:
  struct Impl;
  explicit GatewayServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::gateway
