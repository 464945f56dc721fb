// FakeOrchestrator: an in-memory scale::ReplicaOrchestrator for controller/reconciler tests.
// It has room for `slots` placed replicas (a stand-in for free GPUs); a replica becomes
// ready `cold_start` after placement when the test calls Advance(now). Tests can crash a
// replica (it vanishes, as a dead process would) and make the next call fail.
//
// Ownership: owns its replicas. Thread-safety: single-threaded, like the controller.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/result.h"
#include "scale/replica_orchestrator.h"

namespace gpuscale::testing {

class FakeOrchestrator final : public scale::ReplicaOrchestrator {
 public:
  FakeOrchestrator(int slots, Seconds cold_start) : slots_(slots), cold_start_(cold_start) {}

  // The capacity in reference replicas each replica started from now on reports (a mixed
  // fleet's variant); 1 by default.
  double next_capacity = 1;

  std::vector<scale::ReplicaStatus> ListReplicas() const override { return replicas_; }

  Result<scale::ReplicaStatus> Start(Seconds now) override {
    if (fail_next_) {
      fail_next_ = false;
      return Unavailable("fake backend down");
    }
    scale::ReplicaStatus r{"r" + std::to_string(next_id_++), scale::ReplicaPhase::kPending, now,
                           0};
    r.capacity = next_capacity;
    if (Placed() < slots_) r.phase = scale::ReplicaPhase::kStarting;
    replicas_.push_back(r);
    return r;
  }
  Status Place(const std::string& id, Seconds now) override {
    auto* r = Find(id);
    if (r == nullptr) return NotFound("no replica " + id);
    if (r->phase != scale::ReplicaPhase::kPending) return FailedPrecondition("not pending");
    if (Placed() >= slots_) return ResourceExhausted("no free slot");
    r->phase = scale::ReplicaPhase::kStarting;
    r->phase_since = now;
    return OkStatus();
  }
  Status Drain(const std::string& id, Seconds now) override {
    return Move(id, scale::ReplicaPhase::kReady, scale::ReplicaPhase::kDraining, now);
  }
  Status Resume(const std::string& id, Seconds now) override {
    return Move(id, scale::ReplicaPhase::kDraining, scale::ReplicaPhase::kReady, now);
  }
  Status Stop(const std::string& id, Seconds) override {
    auto it = std::find_if(replicas_.begin(), replicas_.end(),
                           [&](const auto& r) { return r.id == id; });
    if (it == replicas_.end()) return NotFound("no replica " + id);
    replicas_.erase(it);
    return OkStatus();
  }

  // Starting replicas whose cold start has passed become ready.
  void Advance(Seconds now) {
    for (auto& r : replicas_) {
      if (r.phase == scale::ReplicaPhase::kStarting && now - r.phase_since >= cold_start_) {
        r.phase = scale::ReplicaPhase::kReady;
        r.phase_since = now;
      }
    }
  }
  void SetOutstanding(const std::string& id, int n) { Find(id)->outstanding_requests = n; }
  void Crash(const std::string& id) { (void)Stop(id, Seconds{0}); }
  void FailNextStart() { fail_next_ = true; }
  void set_slots(int slots) { slots_ = slots; }
  int Count(scale::ReplicaPhase phase) const {
    return static_cast<int>(std::count_if(replicas_.begin(), replicas_.end(),
                                          [&](const auto& r) { return r.phase == phase; }));
  }

 private:
  int Placed() const {
    return static_cast<int>(replicas_.size()) - Count(scale::ReplicaPhase::kPending);
  }
  scale::ReplicaStatus* Find(const std::string& id) {
    for (auto& r : replicas_) {
      if (r.id == id) return &r;
    }
    return nullptr;
  }
  Status Move(const std::string& id, scale::ReplicaPhase from, scale::ReplicaPhase to,
              Seconds now) {
    auto* r = Find(id);
    if (r == nullptr) return NotFound("no replica " + id);
    if (r->phase != from) return FailedPrecondition("wrong phase");
    r->phase = to;
    r->phase_since = now;
    return OkStatus();
  }

  int slots_;
  Seconds cold_start_;
  int next_id_ = 0;
  bool fail_next_ = false;
  std::vector<scale::ReplicaStatus> replicas_;
};

// A policy that returns whatever the test sets, recording the inputs it saw.
class ScriptedPolicy final : public scale::Policy {
 public:
  ScriptedPolicy(int min_replicas, int max_replicas) : min_(min_replicas), max_(max_replicas) {}
  std::string_view Family() const override { return "scripted"; }
  int MinReplicas() const override { return min_; }
  int MaxReplicas() const override { return max_; }
  scale::Decision Evaluate(const scale::ScalingInput& input) override {
    inputs.push_back(input);
    return {desired, "scripted", {}, {}, decision_inputs};
  }
  std::vector<std::string> MetricNames() const override { return metric_names; }
  int desired = 1;
  std::vector<scale::DecisionInput> decision_inputs;  // what each decision says it read
  std::vector<scale::ScalingInput> inputs;
  // What MetricNames() says the policy reads; set it before a ServiceRuntime gets the policy
  // (the runtime learns a policy's metrics once, as they never change for a real one).
  std::vector<std::string> metric_names;

 private:
  int min_, max_;
};

// Asks for `desired` replicas and appends each tick's input to a vector the test owns, so
// what the policy saw outlives an engine that owns and destroys the policy (the simulator).
class RecordingPolicy final : public scale::Policy {
 public:
  // `seen` must outlive the policy.
  RecordingPolicy(int desired, std::vector<scale::ScalingInput>* seen)
      : desired_(desired), seen_(seen) {}
  std::string_view Family() const override { return "recording"; }
  int MinReplicas() const override { return 1; }
  int MaxReplicas() const override { return std::max(desired_, 1); }
  scale::Decision Evaluate(const scale::ScalingInput& input) override {
    seen_->push_back(input);
    return {desired_, "recording", {}, {}, {}};
  }

 private:
  int desired_;
  std::vector<scale::ScalingInput>* seen_;
};

}  // namespace gpuscale::testing
