// FleetServer: many emulated replicas in one process, for testing the control plane at
// fleet scale (`gpuscale fleet`): 10,000 `gpuscale emulate` processes would not fit on one
// machine, 10,000 listening ports in one asynchronous process do. Each replica has a port of
// its own answering GET /health (200) and GET /metrics (vLLM's exposition for the load it was
// given: running and waiting requests, KV usage); it runs no engine and serves no
// completions. A control API on the fleet's own port adds and removes replicas, and is what
// the daemon's `engine: fleet` drives (orch/fleet_orchestrator.h):
//   POST   /replicas               {"id": "svc-3"} -> 200 {"id", "port"} (the same port again
//                                  for an id that exists)
//   DELETE /replicas/{id}          204; 404 for an unknown id
//   PUT    /replicas/{id}/load     {"running": n, "waiting": m, "metrics_delay_ms": d} -> 204
//                                  (d: how long its /metrics takes to answer, a straggler;
//                                  each field 0 when absent)
//   GET    /replicas               {"replicas": [{"id", "port", "running", "waiting"}]}
//   GET    /health                 200
// Bodies that are not what is expected get 400 with a JSON error naming the field.
//
// A replica's port keeps accepting through a shortage of descriptors (EMFILE, ENFILE: the
// fleet needs one per replica and one per connection): a failed accept pauses 100 ms and
// retries, and the first failure of a burst is logged (and the recovery after it).
//
// Threads: the control server's I/O threads run every replica's listener and connections.
// Ownership and thread-safety: Start() returns the owner; every method is safe from any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::emulator {

struct FleetOptions {
  std::string host = "127.0.0.1";  // control and replica ports listen here
  int port = 0;                    // the control API; 0 = any free port
  int threads = 1;                 // I/O threads for everything
  std::string model_name = "fleet-model";
  // Operational messages (failing accepts); default: stderr. Called on I/O threads.
  std::function<void(std::string_view)> log;
};

class FleetServer {
 public:
  // Errors: kInvalidArgument for a bad option (naming the flag), kUnavailable when the
  // control port cannot be bound.
  static Result<std::unique_ptr<FleetServer>> Start(const FleetOptions& options);
  ~FleetServer();  // Stop()
  FleetServer(const FleetServer&) = delete;
  FleetServer& operator=(const FleetServer&) = delete;

  int port() const;  // the control API's
  // Adds replica `id` on a new port (or returns the port it has). Errors: kInvalidArgument for
  // an empty id, kUnavailable when no port can be bound.
  Result<int> AddReplica(const std::string& id);
  // Closes the replica's port and its connections; false for an unknown id.
  bool RemoveReplica(const std::string& id);
  // The load /metrics reports. Errors: kNotFound, kInvalidArgument for a negative count.
  Status SetLoad(const std::string& id, int running, int waiting);
  // How long the replica's /metrics takes to answer from now on (0: at once); /health still
  // answers at once. Errors: kNotFound, kInvalidArgument for a negative delay.
  Status SetMetricsDelay(const std::string& id, Seconds delay);
  // Accepts that failed (e.g. EMFILE) and were retried, over all replicas.
  int64_t accept_failures() const;
  size_t replica_count() const;
  void Stop();

  struct Impl;

 private:
  explicit FleetServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::emulator
