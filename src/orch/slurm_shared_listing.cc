#include "orch/slurm_shared_listing.h"

#include <utility>

namespace gpuscale::orch {

template <typename T>
template <typename Fetch>
Result<T> SlurmListingHub::Shared<T>::Get(Fetch fetch, std::mutex& mu, std::condition_variable& cv,
                                          int64_t& fetches, int& callers) {
  std::unique_lock<std::mutex> lock(mu);
  ++callers;
  // Any fetch that begins from now on has at least this generation; one that began before
  // has a lower one and may predate what the caller must see (its own sbatch, say).
  const int64_t wanted = started_ + 1;
  while (finished_ < wanted) {
    if (running_) {
      cv.wait(lock);
      continue;
    }
    running_ = true;
    const int64_t generation = ++started_;
    ++fetches;
    lock.unlock();
    Result<T> result = fetch();  // the transports report errors as values, never throw
    lock.lock();
    running_ = false;
    finished_ = generation;
    last_ = std::move(result);
    cv.notify_all();
  }
  --callers;
  return last_;
}

SlurmListingHub::SlurmListingHub(std::shared_ptr<SlurmTransport> lister)
    : lister_(std::move(lister)) {}

Result<std::vector<SlurmJob>> SlurmListingHub::ListJobs() {
  return jobs_.Get([this] { return lister_->ListJobs(); }, mu_, cv_, fetches_, callers_);
}

Result<std::vector<SlurmNode>> SlurmListingHub::ListNodes() {
  return nodes_.Get([this] { return lister_->ListNodes(); }, mu_, cv_, fetches_, callers_);
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
