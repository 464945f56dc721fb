// FakeScalerDaemon: a minimal in-memory daemon::DaemonApi for the k8s tests (test-only).
// Holds services and their desired replica counts; everything the external scaler does not
// use answers empty or kUnavailable. Tests change desired counts while the server runs.
//
// Thread-safety: every method locks mu_ (gRPC handlers call it from their own threads).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon_api/daemon_api.h"

namespace gpuscale::k8s {

class FakeScalerDaemon : public daemon::DaemonApi {
 public:
  // Adds or updates a service with this desired count.
  void SetDesired(const std::string& service, int desired) {
    std::lock_guard lock(mu_);
    daemon::ServiceView& view = services_[service];
    view.config.name = service;
    view.desired_replicas = desired;
  }
  // The next GetService calls fail with `error` (e.g. kUnavailable); OkStatus() clears it.
  void SetFailure(Status failure) {
    std::lock_guard lock(mu_);
    failure_ = std::move(failure);
  }

  std::vector<daemon::ServiceView> ListServices() override {
    std::lock_guard lock(mu_);
    std::vector<daemon::ServiceView> out;
    for (const auto& [name, view] : services_) out.push_back(view);
    return out;
  }
  Result<daemon::ServiceView> GetService(const std::string& name) override {
    std::lock_guard lock(mu_);
    if (!failure_) return Unexpected<Error>(failure_.error());
    auto it = services_.find(name);
    if (it == services_.end()) return NotFound("no service '" + name + "'", "name");
    return it->second;
  }

  // --- not used by the scaler ---
  Result<gpu::GpuSnapshot> Gpus() override { return Unavailable("fake"); }
  gpu::ScoreWeights ScoreWeights() const override { return {}; }
  std::vector<gpu::HistoryPoint> GpuHistory(Seconds) override { return {}; }
  Result<daemon::ServiceView> CreateService(const daemon::ServiceConfig&) override {
    return Unavailable("fake");
  }
  Result<daemon::ServiceView> UpdateService(const daemon::ServiceConfig&) override {
    return Unavailable("fake");
  }
  Status DeleteService(const std::string&) override { return Unavailable("fake"); }
  Result<std::vector<daemon::RuleView>> ListRules(const std::string&) override {
    return Unavailable("fake");
  }
  Result<daemon::RuleView> AddRule(const std::string&, const daemon::RuleView&) override {
    return Unavailable("fake");
  }
  Status DeleteRule(const std::string&, int64_t) override { return Unavailable("fake"); }
  Result<daemon::ServiceView> SetDesiredReplicas(const std::string&, std::optional<int>) override {
    return Unavailable("fake");
  }
  Result<std::vector<daemon::ReplicaView>> ListReplicas(const std::string&) override {
    return Unavailable("fake");
  }
  Result<daemon::PreemptNotice> PreemptReplica(const std::string&,
                                               std::optional<Seconds>) override {
    return Unavailable("fake");
  }
  Result<daemon::HistorySeries> History(const std::string&, std::optional<Seconds>,
                                        std::optional<Seconds>, Seconds) override {
    return Unavailable("fake");
  }
  std::vector<alloc::Lease> Leases() override { return {}; }
  Result<std::vector<daemon::EventView>> Events(const daemon::EventQuery&) override {
    return Unavailable("fake");
  }
  int64_t WaitForEvents(int64_t after_id, Seconds) override { return after_id; }
  Result<task::TaskRecord> SubmitTask(task::TaskDefinition, std::string) override {
    return Unexpected<Error>(Error{ErrorCode::kUnavailable, "no tasks in this fake", ""});
  }
  std::vector<task::TaskRecord> ListTasks() override { return {}; }
  Result<task::TaskRecord> GetTask(int64_t) override {
    return Unexpected<Error>(Error{ErrorCode::kNotFound, "no tasks in this fake", ""});
  }
  Result<task::TaskRecord> CancelTask(int64_t) override {
    return Unexpected<Error>(Error{ErrorCode::kNotFound, "no tasks in this fake", ""});
  }
  Result<std::vector<task::ExperimentRecord>> ListExperiments(int64_t) override {
    return Unexpected<Error>(Error{ErrorCode::kNotFound, "no tasks in this fake", ""});
  }
  Result<task::ExperimentRecord> GetExperiment(int64_t) override {
    return Unexpected<Error>(Error{ErrorCode::kNotFound, "no tasks in this fake", ""});
  }
  std::string MetricsText() override { return {}; }
  Status Ready() override { return OkStatus(); }

 private:
  std::mutex mu_;  // guards services_ and failure_
  std::map<std::string, daemon::ServiceView> services_;
  Status failure_;
};

}  // namespace gpuscale::k8s
