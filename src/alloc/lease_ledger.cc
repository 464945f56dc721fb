#include "alloc/lease_ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace gpuscale::alloc {
namespace {

void SortByKey(std::vector<Lease>& leases) {
  std::sort(leases.begin(), leases.end(),
            [](const Lease& a, const Lease& b) { return a.key < b.key; });
}

}  // namespace

LeaseLedger::LeaseLedger(OwnerAlive alive) : alive_(std::move(alive)) {}

Result<Selection> LeaseLedger::Allocate(const gpu::GpuSnapshot& snapshot,
                                        const SelectionRequest& request, std::string_view owner,
                                        Seconds now) {
  if (owner.empty()) return InvalidArgument("expected a non-empty lease owner", "owner");
  std::lock_guard<std::mutex> lock(mu_);
  TakenGpus taken;
  taken.owner_of = [this](const std::string& key) -> const std::string* {
    auto it = leases_.find(key);  // mu_ is held for the whole selection
    return it == leases_.end() ? nullptr : &it->second.owner;
  };
  GS_ASSIGN_OR_RETURN(Selection selection, SelectGpus(snapshot, request, taken));
  for (const SelectedGpu& gpu : selection.gpus) {
    const std::string key = LeaseKeyOf(snapshot.gpus[gpu.position]);
    leases_.emplace(key, Lease{key, gpu.index, gpu.node, std::string(owner), now, gpu.type});
  }
  return selection;
}

Status LeaseLedger::Release(std::string_view key, std::string_view owner) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = leases_.find(std::string(key));
    if (it == leases_.end()) return NotFound(fmt::format("GPU '{}' is not leased", key), "key");
    if (it->second.owner != owner) {
      return FailedPrecondition(
          fmt::format("GPU '{}' is leased to '{}', not '{}'", key, it->second.owner, owner),
          "owner");
    }
    leases_.erase(it);
  }
  NotifyReleased();
  return OkStatus();
}

size_t LeaseLedger::ReleaseOwner(std::string_view owner) {
  size_t released = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    released = std::erase_if(
        leases_, [owner](const auto& entry) { return entry.second.owner == owner; });
  }
  if (released > 0) NotifyReleased();
  return released;
}

void LeaseLedger::SetReleaseListener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(listener_mu_);
  release_listener_ = std::move(listener);
}

void LeaseLedger::NotifyReleased() {
  std::function<void()> listener;
  {
    std::lock_guard<std::mutex> lock(listener_mu_);
    listener = release_listener_;
  }
  if (listener) listener();
}

std::vector<Lease> LeaseLedger::Reap() {
  if (!alive_) return {};
  std::set<std::string> owners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, lease] : leases_) owners.insert(lease.owner);
  }
  // Asked without the lock: the predicate may be slow, and a gone owner stays gone, so the
  // answer is still right when we re-take the lock.
  std::set<std::string, std::less<>> gone;
  for (const std::string& owner : owners) {
    if (!alive_(owner)) gone.insert(owner);
  }
  std::vector<Lease> reaped;
  if (gone.empty()) return reaped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = leases_.begin(); it != leases_.end();) {
      if (gone.contains(it->second.owner)) {
        reaped.push_back(std::move(it->second));
        it = leases_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!reaped.empty()) NotifyReleased();
  SortByKey(reaped);
  return reaped;
}

std::vector<Lease> LeaseLedger::Leases() const {
  std::vector<Lease> leases;
  {
    std::lock_guard<std::mutex> lock(mu_);
    leases.reserve(leases_.size());
    for (const auto& [key, lease] : leases_) leases.push_back(lease);
  }
  SortByKey(leases);
  return leases;
}

std::vector<Lease> LeaseLedger::LeasesOf(std::string_view owner) const {
  std::vector<Lease> leases;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, lease] : leases_) {
      if (lease.owner == owner) leases.push_back(lease);
    }
  }
  SortByKey(leases);
  return leases;
}

size_t LeaseLedger::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leases_.size();
}

}  // namespace gpuscale::alloc
