// The lease ledger: which GPU is handed to which owner. Metrics alone cannot keep two
// requests apart (a GPU just handed out still reads idle until its engine loads), so a GPU
// leased to one owner is never handed to another until the owner releases it or is found
// gone by Reap().
//
// Leases are keyed by GPU uuid, or "<node>#<index>" when the backend reports no uuid
// (LeaseKeyOf in gpu_selector.h). Owners are opaque strings chosen by the caller
// ("replica/chat-0", "pid:4242"). Whether an owner is still alive is asked of an injected
// predicate (e.g. "is this pid alive"), so the ledger itself does no I/O.
//
// Thread-safety: every public member is safe to call from several threads at once; one
// mutex (mu_) guards the lease table, and Allocate() selects and leases under it, so two
// concurrent requests never receive the same GPU. The liveness predicate is called without
// the lock held (it may be slow); it must itself be thread-safe. So is the release listener
// (SetReleaseListener): waiters for GPUs may call back into the ledger from it.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "alloc/gpu_selector.h"
#include "core/clock.h"
#include "core/result.h"
#include "gpu/gpu_info.h"

namespace gpuscale::alloc {

struct Lease {
  std::string key;    // GPU uuid, or "<node>#<index>"
  int gpu_index = 0;  // device index on its node
  std::string node;
  std::string owner;
  Seconds acquired_at{0};
  std::string gpu_type;  // type key of the GPU when leased; empty = unknown
};

// True while `owner` still exists (its process, job or replica).
using OwnerAlive = std::function<bool(std::string_view owner)>;

class LeaseLedger {
 public:
  // `alive` is consulted by Reap(); the default considers every owner alive.
  explicit LeaseLedger(OwnerAlive alive = {});

  LeaseLedger(const LeaseLedger&) = delete;
  LeaseLedger& operator=(const LeaseLedger&) = delete;

  // Selects request.gpu_count GPUs of `snapshot` that no one holds and leases them to
  // `owner`, as one atomic step; with request.gpu_type, only GPUs of that type. Errors: those of
  // SelectGpus (the exhaustion message names leased GPUs and their owners); kInvalidArgument when
  // `owner` is empty.
  Result<Selection> Allocate(const gpu::GpuSnapshot& snapshot, const SelectionRequest& request,
                             std::string_view owner, Seconds now);

  // Releases one GPU. kNotFound when `key` is not leased; kFailedPrecondition when it is
  // leased to someone else (the message names the holder).
  Status Release(std::string_view key, std::string_view owner);
  // Releases every GPU of `owner`; returns how many.
  size_t ReleaseOwner(std::string_view owner);

  // Releases the leases of every owner the predicate reports gone; returns them.
  std::vector<Lease> Reap();

  // `listener` is called after Release, ReleaseOwner or Reap actually released at least one
  // lease, on the releasing thread, without the ledger's lock held (so it may call back into
  // the ledger, e.g. to wake a waiter that allocates). Replaces any previous listener; an
  // empty function removes it. It must be thread-safe and quick (e.g. notify a condition).
  void SetReleaseListener(std::function<void()> listener);

  // All leases, ordered by key (a copy: callers need no lock).
  std::vector<Lease> Leases() const;
  std::vector<Lease> LeasesOf(std::string_view owner) const;
  size_t size() const;

 private:
  OwnerAlive alive_;  // immutable after construction
  void NotifyReleased();  // calls the listener (a copy, taken under listener_mu_)

  mutable std::mutex mu_;
  std::unordered_map<std::string, Lease> leases_;  // by key; guarded by mu_
  // Its own mutex so that setting the listener never waits for an allocation, and calling it
  // never holds mu_.
  std::mutex listener_mu_;
  std::function<void()> release_listener_;  // guarded by listener_mu_
};

}  // namespace gpuscale::alloc
