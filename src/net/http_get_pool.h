// net::HttpGetPool: many HTTP/1.1 GETs at once on one thread, over kept-alive connections.
// What the daemon's scrapes need at fleet scale: net::HttpGet opens a connection per request
// and blocks a thread for it, so 10,000 replicas cost 10,000 connects and a thread pool every
// tick. Here a batch runs as coroutines on one io_context (at most max_in_flight at once),
// and a connection whose response allowed keep-alive is kept for the next batch to the same
// host:port -- but only for idle_timeout (below the 5 s keep-alive of uvicorn, vLLM's server,
// so the pool rarely writes to a socket the server already closed). A request that fails on
// a reused connection before any byte of the answer came (the server closed it meanwhile) is
// retried once on a fresh one. Each request has HttpGet's contract: one deadline for the
// whole exchange, a body limit, the same errors.
//
// Two ways to use it: GetAll (a batch, blocking until every request ended), or Submit and Run
// (requests that may outlive one Run: the daemon's scrapes, where a tick works on them until
// its cutoff and a straggler goes on in the next tick's Run). Nothing progresses between
// Runs, but each request keeps its own deadline, so one left over ends at the latest in the
// first Run after its timeout.
//
// Thread-safety: GetAll, Submit and Run run on the calling thread and must not be called
// concurrently (one caller, e.g. the daemon's control loop); the counters may be read from
// any thread. Requests still pending at destruction are dropped without calling `done`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "net/http_client.h"

namespace gpuscale::net {

struct HttpGetPoolOptions {
  size_t max_in_flight = 256;    // requests in progress at once
  Seconds idle_timeout{4};       // an idle connection older than this is closed, not reused
  size_t max_idle_per_host = 4;  // idle connections kept per host:port
  bool keep_alive = true;        // false: "Connection: close", nothing kept (one-off GETs)
  // Each worker's read buffer, kept from one of its requests to the next, so that a response
  // comes in a few large reads (a 23 KB vLLM exposition in one or two). 0: none kept, every
  // response's reads start at 512 bytes and double (Beast's default: a dozen reads for the
  // same answer; 4x the scraping CPU at fleet scale, bench/scrape_cpu_bench.cc). Default 64 KiB.
  size_t read_buffer_bytes = 64 * 1024;
};

class HttpGetPool {
 public:
  explicit HttpGetPool(HttpGetPoolOptions options = {});
  ~HttpGetPool();
  HttpGetPool(const HttpGetPool&) = delete;
  HttpGetPool& operator=(const HttpGetPool&) = delete;

  // Every request, concurrently; the results in the same order. Blocks until all are done
  // (each bounded by its own timeout).
  std::vector<Result<HttpGetResponse>> GetAll(const std::vector<HttpGetRequest>& requests);

  // Called with a submitted request's outcome, on the thread in Run.
  using Done = std::function<void(Result<HttpGetResponse>)>;
  // Queues `request` behind the others (at most max_in_flight in progress); it starts in the
  // next Run, and `done` is called there or in a later Run. Does no I/O itself.
  void Submit(HttpGetRequest request, Done done);
  // Works on the submitted requests: first on all that is ready (answers that came since the
  // last Run), then until `finished()` is true (checked after each step), none is left, or
  // `deadline` passes; what is left stays for the next Run.
  void Run(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& finished);
  // Submitted requests whose `done` has not been called yet (queued or in progress).
  size_t pending() const;

  // Connections opened since construction, and requests answered on a reused one.
  int64_t connections_opened() const { return opened_.load(); }
  int64_t requests_reused() const { return reused_.load(); }
  // Idle connections kept right now.
  size_t idle_connections() const;

  struct Impl;  // the io_context and the idle connections (http_get_pool.cc)

 private:
  std::unique_ptr<Impl> impl_;
  std::atomic<int64_t> opened_{0};
  std::atomic<int64_t> reused_{0};
};

}  // namespace gpuscale::net
