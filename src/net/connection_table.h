// ConnectionTable: who holds net::HttpServer's connection slots, and whom a newcomer may
// displace. A server that is full closes new connections; if the connections filling it are
// idle (half-open sockets that never send a request, or a keep-alive pool nobody uses), a
// health check or an operator's request is then locked out for as long as the flood lasts
// (4,096 idle connections held the REST API's /healthz until their header timeout). So:
//   - a peer address may hold at most `max_per_peer` connections (0 = no cap): one client
//     cannot take every slot;
//   - a newcomer over a cap displaces the connection that has waited longest for a request
//     header (of the same peer when the peer cap is hit, of anyone when the total is),
//     nginx's "reuse idle keepalive connections" rule extended to connections that never
//     sent a request; only when every connection of that scope is busy with a request is
//     the newcomer refused.
// Connections busy with a request are never displaced. Pure bookkeeping: the server closes
// what Admit names (on the evictee's own I/O thread, through the callback it registered).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "core/mutex.h"

namespace gpuscale::net {

class ConnectionTable {
 public:
  using Id = uint64_t;

  ConnectionTable(int max_total, int max_per_peer)
      : max_total_(max_total), max_per_peer_(max_per_peer) {}

  struct Admission {
    bool admitted = false;
    Id id = 0;  // when admitted
    // Called (outside the lock) to close a displaced connection; empty when none is.
    std::function<void()> evict;
  };
  // A new connection from `peer` (its address).
  Admission Admit(const std::string& peer);
  // The connection waits for a request header from now on; `close` closes it (any thread;
  // it must be safe to call until Active or Remove returns).
  void Waiting(Id id, std::function<void()> close);
  // A header arrived: the connection is busy with a request. False when it was displaced
  // meanwhile (the caller then ends the connection without serving the request).
  bool Active(Id id);
  // The connection closed.
  void Remove(Id id);
  // Whether `id` is still open and was displaced (its close should run).
  bool Displaced(Id id) const;

  int size() const;
  int displaced() const;  // connections displaced since start

 private:
  enum class State { kBusy, kWaiting, kDisplaced };
  struct Entry {
    std::string peer;
    State state = State::kBusy;
    uint64_t waiting_since = 0;  // order of entering kWaiting
    std::function<void()> close;
  };
  // The entry waiting longest, of `peer` (or of anyone when empty). Requires mu_.
  Entry* OldestWaiting(const std::string& peer) GS_REQUIRES(mu_);

  const int max_total_;
  const int max_per_peer_;
  mutable Mutex mu_;
  std::map<Id, Entry> entries_ GS_GUARDED_BY(mu_);
  std::map<uint64_t, Id> waiting_ GS_GUARDED_BY(mu_);       // by waiting_since: oldest first
  std::map<std::string, int> per_peer_ GS_GUARDED_BY(mu_);  // live (not displaced) ones
  int live_ GS_GUARDED_BY(mu_) = 0;                         // entries not displaced
  Id next_id_ GS_GUARDED_BY(mu_) = 1;
  uint64_t next_wait_ GS_GUARDED_BY(mu_) = 1;
  int displaced_ GS_GUARDED_BY(mu_) = 0;
};

}  // namespace gpuscale::net
