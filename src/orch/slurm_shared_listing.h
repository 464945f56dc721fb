// One job listing and one node listing at a time per Slurm cluster, however many services run
// on it. Each Slurm service lists the whole cluster (squeue --json, sinfo --json, or
// slurmrestd's /jobs and /nodes) once per tick; with a service per model, a thousand services
// ran a thousand squeue processes a second against one slurmctld, which Slurm's own
// documentation asks scripts not to do (every squeue is an RPC the controller serves under
// its locks).
//
// SlurmListingHub is the cluster's: a caller that asks for a listing gets one fetched after
// it asked (never an older one: SlurmOrchestrator relies on a listing posted after an
// sbatch answered seeing that job), and callers that ask while a fetch runs share the next
// one. So at most one fetch of each kind runs per cluster, one more waits for it, and a
// service waits at most about two fetches. SharedListingTransport is a service's transport
// whose listings go through the hub (submit and cancel stay the service's own), and
// SlurmClusters finds the hub of a cluster by a key that names everything a listing depends
// on (transport, URL or binaries, credentials).
//
// Thread-safety: the hub and SlurmClusters are thread-safe; a listing blocks its caller (a
// service's engine-call thread, orch/serial_calls.h, never the control loop).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "orch/slurm_transport.h"

namespace gpuscale::orch {

class SlurmListingHub {
 public:
  // `lister` makes the fetches (its Submit and Cancel are never called here).
  explicit SlurmListingHub(std::shared_ptr<SlurmTransport> lister);

  Result<std::vector<SlurmJob>> ListJobs();
  Result<std::vector<SlurmNode>> ListNodes();

  // Fetches started so far, and callers inside a listing now (waiting or fetching), both
  // kinds: for tests and progress.
  int64_t fetches() const;
  int callers() const;

 private:
  // The state of one kind of listing shared between callers (see the header comment).
  template <typename T>
  struct Shared {
    int64_t started = 0;   // fetches begun; a fetch's generation is the count at its start
    int64_t finished = 0;  // generation of the latest fetch that ended
    bool running = false;
    Result<T> last = T{};  // what the fetch of generation `finished` returned
  };
  // A listing fetched after the call began: `fetch`'s own, or one that began meanwhile.
  template <typename T, typename Fetch>
  Result<T> Get(Shared<T>& shared, Fetch fetch);

  std::shared_ptr<SlurmTransport> lister_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t fetches_ = 0;                   // guarded by mu_
  int callers_ = 0;                       // guarded by mu_
  Shared<std::vector<SlurmJob>> jobs_;    // guarded by mu_
  Shared<std::vector<SlurmNode>> nodes_;  // guarded by mu_
};

// A service's transport: Submit and Cancel through `own`, listings through `hub`.
class SharedListingTransport final : public SlurmTransport {
 public:
  SharedListingTransport(std::unique_ptr<SlurmTransport> own, std::shared_ptr<SlurmListingHub> hub)
      : own_(std::move(own)), hub_(std::move(hub)) {}

  std::string_view Name() const override { return own_->Name(); }
  Result<std::string> Submit(const SlurmJobRequest& request) override {
    return own_->Submit(request);
  }
  Result<std::vector<SlurmJob>> ListJobs() override { return hub_->ListJobs(); }
  Result<std::vector<SlurmNode>> ListNodes() override { return hub_->ListNodes(); }
  Status Cancel(const std::string& job_id) override { return own_->Cancel(job_id); }

 private:
  std::unique_ptr<SlurmTransport> own_;
  std::shared_ptr<SlurmListingHub> hub_;
};

// The hubs of the clusters in use, by key; a hub lives as long as a transport uses it.
class SlurmClusters {
 public:
  // `transport` wrapped so that its listings go through the hub of `key`, made on first use
  // with a transport of its own (`transport` is kept for submit and cancel, so a service's
  // job scripts stay its own).
  std::unique_ptr<SlurmTransport> Share(const std::string& key,
                                        std::unique_ptr<SlurmTransport> transport,
                                        std::shared_ptr<SlurmTransport> lister);

  // Hubs alive now: for tests.
  size_t hubs();

 private:
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<SlurmListingHub>> hubs_;  // guarded by mu_
};

}  // namespace gpuscale::orch
