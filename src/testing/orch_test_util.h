// Shared fixture for orch/ tests: a temporary state directory, a lease ledger over a fake
// GPU inventory, helpers to pump Poll() while real processes change state, and a teardown
// that kills every process a test started and removes the directory.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "alloc/lease_ledger.h"
#include "orch/local_process_orchestrator.h"
#include "orch/process_util.h"

namespace gpuscale::orch {

inline gpu::GpuSnapshot FakeGpus(int count) {
  gpu::GpuSnapshot snapshot;
  snapshot.backend = "simulated";
  for (int i = 0; i < count; ++i) {
    gpu::GpuInfo g;
    g.index = i;
    g.uuid = "GPU-fake-" + std::to_string(i);
    g.memory_total_mb = 81920;
    g.memory_used_mb = 0;
    g.memory_free_mb = 81920;
    g.utilization_percent = 0;
    snapshot.gpus.push_back(g);
  }
  return snapshot;
}

class OrchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuscale-orch-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }

  void TearDown() override {
    for (auto& orch : orchestrators_) {
      orch->StopAll(now_);
      Track(*orch);
    }
    // Every process any test saw, SIGKILLed and reaped (ours are children of this process).
    for (int pid : pids_) {
      if (waitpid(pid, nullptr, WNOHANG) == 0) {  // still our running child
        kill(-pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
    orchestrators_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  LocalProcessConfig Config(std::vector<std::string> command) {
    LocalProcessConfig c;
    c.service = "svc";
    c.command = std::move(command);
    c.state_dir = dir_.string();
    c.readiness_path = "";
    c.probe_interval = Seconds{0};
    c.stop_grace = Seconds{5};
    return c;
  }

  LocalProcessOrchestrator& Make(LocalProcessConfig config, ReadinessProbe probe = {}) {
    auto orch = LocalProcessOrchestrator::Create(
        std::move(config), ledger_, [this](Seconds) { return gpus_; }, std::move(probe));
    EXPECT_TRUE(orch) << orch.error().ToString();
    orchestrators_.push_back(std::move(*orch));
    return *orchestrators_.back();
  }

  // Remembers every pid the orchestrator runs, for teardown.
  void Track(const LocalProcessOrchestrator& orch) {
    for (const ReplicaInfo& info : orch.Replicas(now_)) {
      if (info.pid > 0) pids_.insert(info.pid);
    }
  }

  // Polls at the current (manual) time until `done` holds or 10 s of real time pass.
  bool PumpUntil(LocalProcessOrchestrator& orch, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      orch.Poll(now_);
      Track(orch);
      for (auto& e : orch.TakeEvents()) events_.push_back(e);
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  bool HasEvent(const std::string& kind, const std::string& replica = "") const {
    for (const auto& e : events_) {
      if (events::EventKindName(e.kind) == kind && (replica.empty() || e.replica == replica))
        return true;
    }
    return false;
  }
  const OrchestratorEvent* LastEvent(const std::string& kind) const {
    for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
      if (events::EventKindName(it->kind) == kind) return &*it;
    }
    return nullptr;
  }

  static ReplicaInfo InfoOf(const LocalProcessOrchestrator& orch, const std::string& id,
                            Seconds now) {
    for (const ReplicaInfo& info : orch.Replicas(now)) {
      if (info.id == id) return info;
    }
    return ReplicaInfo{};
  }

  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  std::filesystem::path dir_;
  gpu::GpuSnapshot gpus_ = FakeGpus(2);
  alloc::LeaseLedger ledger_;
  Seconds now_{1000};
  std::vector<OrchestratorEvent> events_;
  std::set<int> pids_;
  std::vector<std::unique_ptr<LocalProcessOrchestrator>> orchestrators_;
};

}  // namespace gpuscale::orch
