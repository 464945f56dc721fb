// What the gateway's relay keeps per I/O thread (net::HttpServer keeps each client
// connection on one thread, each thread running an io_context of its own): idle kept-alive
// connections to replicas (UpstreamPool) and the relays in flight, watched for their
// timeouts and for clients that hang up (RelayWatch). Each thread's share is used by that thread
// alone, so neither takes a lock. Private to gateway_server.cc (it includes net's Asio headers,
// heavy to compile).
//
// Ownership: RelayThreads outlives the HttpServer whose coroutines use it (their frames
// unregister from the watch when an io_context is destroyed); CloseIdle() must run after the
// I/O threads are joined and before the io_contexts are destroyed.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "net/http_server.h"

namespace gpuscale::gateway {

// Sends what `socket` takes now, without waiting, and says how many bytes went (all of them
// in the usual case: a request or an event is small and the kernel's send buffer has room);
// an error other than would-block is left in `ec`, and the caller writes the rest with
// async_write. Why not async_write alone: its completion resumes the coroutine only after
// every handler already queued on this I/O thread, which at 1,000 streams is a replica's
// whole decode step of events, so a request waited behind other streams before its next
// step (gpuscale_gateway_added_latency_seconds, docs/gateway.md "Benchmark"), and every
// write paid a handler dispatch. nginx and HAProxy write at once as well. Used by the relay
// (gateway_server.cc) and the prefill step (prefill_step.cc).
template <typename Buffers>
size_t SendNow(net::tcp::socket& socket, const Buffers& buffers, boost::system::error_code& ec) {
  // Only synchronous calls see this flag; the socket's async operations are unaffected.
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
  if (ec) return 0;
  const size_t sent = socket.write_some(buffers, ec);
  if (ec == net::asio::error::would_block || ec == net::asio::error::try_again) ec = {};
  return sent;
}

using net::Peek;
using net::PeekResult;

// Idle kept-alive connections to replicas, by "host:port", so that a request does not pay a
// TCP connect (and the replica an accept) each time: connecting per request cost about
// 60 us of gateway CPU per short request and held it to 0.4x HAProxy's requests/s
// (scripts/gateway-bench). A pooled socket stays registered with its thread's reactor, so
// taking one and giving it back costs no system call (handing bare descriptors through one
// shared pool cost two epoll_ctl calls, an ioctl, a getsockname and a setsockopt per
// request). A connection idle longer than kPooledIdle is closed (vLLM's server, uvicorn,
// closes idle ones after 5 s); one idle past kCheckedIdle is checked for the replica's close
// before use; a reused one that fails before the replica's first byte is retried once on a
// fresh connection (the relay does).
class UpstreamPool {
 public:
  static constexpr auto kPooledIdle = std::chrono::seconds(2);
  static constexpr auto kCheckedIdle = std::chrono::milliseconds(100);
  // Streams that end together (a replica's batch finishing in one step) give their
  // connections back at once, and the requests that follow would each connect anew past the
  // cap: at 64, 1,000 streams opened ~500 connections a wave and the gateway's own p99 rose
  // past a millisecond (docs/gateway.md, "Benchmark"). Idle ones close after kPooledIdle,
  // so the cap bounds a burst, not what stays open.
  static constexpr size_t kMaxIdlePerReplica = 1024;

  // An idle, still open connection to `key`; nullopt when none.
  std::optional<net::tcp::socket> Take(const std::string& key);
  // Keeps `socket` (a connection whose last response was read whole) for the next request.
  // At most once per kPooledIdle it also sweeps (below), and while the pool holds any
  // connection a timer on the socket's executor sweeps every kPooledIdle: after the last
  // request nothing would give a connection back, and the pool would keep them all.
  void Give(const std::string& key, net::tcp::socket socket,
            std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  // Closes every connection idle for kPooledIdle or longer, and forgets replicas left with
  // none. Take only looks at the newest of one replica's connections, so without this the
  // oldest of a busy replica's and all of a replica that is gone (scaled in, restarted on
  // another port) would stay open, and the replica's close would leave them in CLOSE_WAIT.
  void Sweep(std::chrono::steady_clock::time_point now);
  void CloseIdle() {
    idle_.clear();
    total_ = 0;
  }
  size_t idle_count() const { return total_; }
  // At most this many idle connections over all replicas (each holds a descriptor).
  void set_max_idle(size_t n) { max_idle_ = n; }

 private:
  struct Idle {
    net::tcp::socket socket;
    std::chrono::steady_clock::time_point since;
  };
  // Sweeps every kPooledIdle until the pool is empty (started by Give).
  net::asio::awaitable<void> SweepLoop();

  std::unordered_map<std::string, std::vector<Idle>> idle_;  // newest last
  size_t total_ = 0;                                         // idle connections in idle_
  size_t max_idle_ = SIZE_MAX;
  std::chrono::steady_clock::time_point last_sweep_{};
  bool sweeping_ = false;  // SweepLoop runs
};

// The relays in flight on one I/O thread, checked every kInterval for four ends: a client
// that hung up while its request waits for the replica's first byte (a non-streaming
// request waits for the whole generation; the replica's connection is then cancelled, which
// stops the work there), a replica that the health checks gave up, a replica silent longer
// than the upstream timeout (or, once its body flows, the stream idle timeout), and a client
// that stopped reading for longer than net::kClientWriteTimeout. A relay only stamps the
// time before each read and write. Beast's per-operation timeouts instead re-armed two
// timers per relayed SSE chunk (each re-arm cancels a wait and starts one), and racing each
// header read against a wait on the client's socket cost about 2.5 us per short request
// (two coroutine frames, a parallel group, an epoll_ctl); scripts/gateway-bench.
class RelayWatch {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kInterval = std::chrono::milliseconds(100);

  enum class Ended { kNo, kClientGone, kUpstreamTimeout, kClientTimeout, kReplicaDown };

  // One relay in flight; lives in the relay's coroutine frame, registered until Remove.
  struct Relay {
    net::beast::tcp_stream* client = nullptr;
    net::beast::tcp_stream* upstream = nullptr;
    Clock::duration upstream_timeout{};
    // Once the body flows (`body_started`), the replica's silence between chunks is bounded
    // by this instead, when shorter: a stream whose replica hung must end in seconds, while
    // a non-streaming answer may take the whole upstream_timeout to begin.
    Clock::duration stream_idle_timeout{};
    bool body_started = false;
    // Set by the gateway's health checks when the replica stopped answering them
    // (GatewayState::ReportProbe): a relay waiting on it ends (kReplicaDown). May be null.
    const std::atomic<bool>* replica_down = nullptr;
    bool awaiting_first_byte = true;     // the client is checked for a hang-up while true
    Clock::time_point upstream_since{};  // waiting on the replica since ({}: not waiting)
    Clock::time_point client_since{};    // writing to the client since ({}: not writing)
    Ended ended = Ended::kNo;            // set by the check, which then cancelled the waiting side
    size_t index = 0;                    // position in relays_

    // How long the replica may stay silent now (upstream_timeout, or the stream idle
    // timeout once the body flows and when it is shorter).
    Clock::duration SilenceLimit() const {
      return body_started && stream_idle_timeout > Clock::duration::zero()
                 ? std::min(upstream_timeout, stream_idle_timeout)
                 : upstream_timeout;
    }
  };

  // Registers `r` until Remove; starts the periodic check on `executor` when none runs.
  void Add(Relay& r, const net::asio::any_io_executor& executor);
  void Remove(Relay& r);

 private:
  net::asio::awaitable<void> CheckLoop();
  void CheckOnce(Clock::time_point now);

  std::vector<Relay*> relays_;
  bool checking_ = false;
};

struct RelayThread {
  UpstreamPool pool;
  RelayWatch watch;
};

// Each I/O thread's RelayThread, found by the calling coroutine's io_context. The lock is
// held for the lookup only (each RelayThread is then used by its thread alone).
class RelayThreads {
 public:
  // Each thread's pool keeps at most `max_idle_per_thread` idle connections.
  explicit RelayThreads(size_t max_idle_per_thread = SIZE_MAX)
      : max_idle_per_thread_(max_idle_per_thread) {}
  RelayThread& For(const net::asio::any_io_executor& executor);
  // Closes every pooled connection (see the ownership note above).
  void CloseIdle();

 private:
  const size_t max_idle_per_thread_;
  Mutex mu_;
  std::vector<std::pair<const void*, std::unique_ptr<RelayThread>>> threads_ GS_GUARDED_BY(mu_);
};

}  // namespace gpuscale::gateway
