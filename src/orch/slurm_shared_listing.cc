#include "orch/slurm_shared_listing.h"

#include <utility>

namespace gpuscale::orch {

template <typename T, typename Fetch>
Result<T> SlurmListingHub::Get(Shared<T>& shared, Fetch fetch) {
  std::unique_lock<std::mutex> lock(mu_);
  ++callers_;
  // Any fetch that begins from now on has at least this generation; one that began before
  // has a lower one and may predate what the caller must see (its own sbatch, say).
  const int64_t wanted = shared.started + 1;
  while (shared.finished < wanted) {
    if (shared.running) {
      cv_.wait(lock);
      continue;
    }
    shared.running = true;
    const int64_t generation = ++shared.started;
    ++fetches_;
    lock.unlock();
    Result<T> result = fetch();  // the transports report errors as values, never throw
    lock.lock();
    shared.running = false;
    shared.finished = generation;
    shared.last = std::move(result);
    cv_.notify_all();
  }
  --callers_;
  return shared.last;
}

SlurmListingHub::SlurmListingHub(std::shared_ptr<SlurmTransport> lister)
    : lister_(std::move(lister)) {}

Result<std::vector<SlurmJob>> SlurmListingHub::ListJobs() {
  return Get(jobs_, [this] { return lister_->ListJobs(); });
}

Result<std::vector<SlurmNode>> SlurmListingHub::ListNodes() {
  return Get(nodes_, [this] { return lister_->ListNodes(); });
}

int64_t SlurmListingHub::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

int SlurmListingHub::callers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return callers_;
}

std::unique_ptr<SlurmTransport> SlurmClusters::Share(const std::string& key,
                                                     std::unique_ptr<SlurmTransport> transport,
                                                     std::shared_ptr<SlurmTransport> lister) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<SlurmListingHub> hub = hubs_[key].lock();
  if (!hub) {
    hub = std::make_shared<SlurmListingHub>(std::move(lister));
    hubs_[key] = hub;
  }
  // Forget the clusters no service uses any more (a renamed URL, a deleted service).
  std::erase_if(hubs_, [](const auto& entry) { return entry.second.expired(); });
  return std::make_unique<SharedListingTransport>(std::move(transport), std::move(hub));
}

size_t SlurmClusters::hubs() {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(hubs_, [](const auto& entry) { return entry.second.expired(); });
  return hubs_.size();
}

}  // namespace gpuscale::orch
