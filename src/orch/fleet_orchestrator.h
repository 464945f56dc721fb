// FleetOrchestrator: a service whose replicas are emulated by a `gpuscale fleet` process
// (emulator/fleet_server.h) instead of processes of their own -- the simulated-fleet mode
// of the local engine (`engine: fleet` in a service), so that the daemon can be run against
// thousands of replicas on one machine: every replica has a real port that answers /health
// and vLLM's /metrics, and the daemon scrapes, probes, scales and routes exactly as for
// processes; only starting and stopping differ.
//
// Life of a replica: Start asks the fleet for a port (POST /replicas) -> `starting`; Poll
// probes each starting replica's /health -> `ready`; Stop removes it from the fleet (DELETE
// /replicas/{id}) and it is gone at once (there is no process to wait for). A fleet that
// cannot be reached leaves a started replica `pending` with the reason, retried every Poll.
//
// Calls: the control calls and the probes run on the service's own SerialCalls thread
// (serial_calls.h), so a slow or hung fleet delays only this service, never the daemon's
// tick. Start returns the replica `pending` at once; the fleet's answer is applied by a
// later Poll. The calls run in posting order, so the DELETE of a replica stopped while its
// POST was in flight runs after that POST and frees the port it got. HasProcesses() holds
// while calls are unanswered, so a shutdown's DELETEs are sent before the daemon exits.
// Fleet replicas hold no GPUs (gpus_per_replica must be 0: the daemon's config says so).
// Adoption after a daemon restart: a recorded replica the fleet still lists on the same port
// is adopted as ready; any other record is cleaned up. Ids, drain accounting and events
// follow replica_book.h.
//
// Time: every call takes `now`. Ownership: owns the bookkeeping. Thread-safety: one control
// loop thread calls every method; its calls to the fleet take at most `timeout` each, on
// the calls' thread (Adopt's listing on the caller's).
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "orch/replica_book.h"
#include "orch/serial_calls.h"
#include "orch/service_orchestrator.h"

namespace gpuscale::orch {

struct FleetConfig {
  std::string service;  // replicas are "<service>-<n>"; required
  std::string url;      // the fleet's control API, http://host:port; required
  std::string readiness_path = "/health";
  int max_replicas = 0;  // Start refuses beyond this many; 0 = no limit
  Seconds timeout{2};    // per control call and probe
  Seconds drain_grace{30};
};

class FleetOrchestrator final : public ServiceOrchestrator {
 public:
  // Errors: kInvalidArgument naming the field for a missing service or a url that is not
  // http://host:port.
  // `calls`: kInline runs the fleet calls inside Start/Poll/Stop (tests that step time).
  static Result<std::unique_ptr<FleetOrchestrator>> Create(
      FleetConfig config, SerialCalls::Mode calls = SerialCalls::Mode::kThread);

  // scale::ReplicaOrchestrator
  std::vector<scale::ReplicaStatus> ListReplicas() const override;
  Result<scale::ReplicaStatus> Start(Seconds now) override;
  Status Place(const std::string& id, Seconds now) override;
  Status Drain(const std::string& id, Seconds now) override;
  Status Resume(const std::string& id, Seconds now) override;
  Status Stop(const std::string& id, Seconds now) override;

  // ServiceOrchestrator
  void Poll(Seconds now) override;
  AdoptionReport Adopt(const std::vector<ReplicaRecord>& records, Seconds now) override;
  // Its own records and one GET to its fleet.
  bool AdoptsConcurrently() const override { return true; }
  Status ReportOutstanding(const std::string& id, int outstanding) override;
  bool HasProcesses() const override;  // calls to the fleet not answered yet
  std::vector<ReplicaInfo> Replicas(Seconds now) const override;
  std::vector<ReplicaRecord> Records() const override;
  std::vector<OrchestratorEvent> TakeEvents() override;
  scale::AdapterCapacity Capacity(Seconds now) const override;

  // Blocks until the calls posted so far have run; the next Poll applies their answers.
  void WaitForCalls() { calls_.WaitIdle(); }

 private:
  struct Record : ReplicaEntry {
    bool opening = false;  // a POST /replicas is in flight
    bool probing = false;  // a readiness probe is in flight
  };
  FleetOrchestrator(FleetConfig config, std::string host, int port, SerialCalls::Mode calls);
  // Asks the fleet for `r`'s port: `starting` once it answers, else `pending` with the reason.
  void Open(Record& r);
  void ApplyOpen(const std::string& id, Result<int> port, Seconds now);
  void Probe(Record& r);

  FleetConfig config_;
  std::string host_;  // of the fleet; replicas listen there too
  int port_;
  ReplicaBook<Record> book_;
  SerialCalls calls_;
};

}  // namespace gpuscale::orch
