// orch::FleetOrchestrator against a real in-process `gpuscale fleet` (emulator::FleetServer):
// replicas get ports from the fleet and turn ready on their probe, stop removes them, a new
// orchestrator adopts what the fleet still lists, and an unreachable fleet leaves replicas
// pending with the reason until it answers.
#include "orch/fleet_orchestrator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/fleet_server.h"

namespace gpuscale::orch {
namespace {

std::unique_ptr<emulator::FleetServer> StartFleet(int port = 0) {
  emulator::FleetOptions options;
  options.port = port;
  Result<std::unique_ptr<emulator::FleetServer>> fleet = emulator::FleetServer::Start(options);
  EXPECT_TRUE(fleet.has_value()) << fleet.error().ToString();
  return fleet ? std::move(*fleet) : nullptr;
}

std::unique_ptr<FleetOrchestrator> Orchestrator(int port, int max_replicas = 0) {
  FleetConfig config;
  config.service = "svc";
  config.url = "http://127.0.0.1:" + std::to_string(port);
  config.max_replicas = max_replicas;
  Result<std::unique_ptr<FleetOrchestrator>> orch = FleetOrchestrator::Create(config);
  EXPECT_TRUE(orch.has_value()) << orch.error().ToString();
  return orch ? std::move(*orch) : nullptr;
}

int CountPhase(const FleetOrchestrator& orch, scale::ReplicaPhase phase) {
  int n = 0;
  for (const scale::ReplicaStatus& r : orch.ListReplicas()) n += r.phase == phase ? 1 : 0;
  return n;
}

TEST(FleetOrchestratorTest, StartsProbesStopsAndAdoptsReplicasOnTheFleet) {
  auto fleet = StartFleet();
  ASSERT_NE(fleet, nullptr);
  auto orch = Orchestrator(fleet->port(), /*max_replicas=*/3);
  for (int i = 0; i < 3; ++i) {
    Result<scale::ReplicaStatus> started = orch->Start(Seconds{i});
    ASSERT_TRUE(started.has_value()) << started.error().ToString();
    EXPECT_EQ(started->phase, scale::ReplicaPhase::kStarting);
  }
  EXPECT_EQ(orch->Start(Seconds{3}).error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(fleet->replica_count(), 3u);
  orch->Poll(Seconds{4});
  EXPECT_EQ(CountPhase(*orch, scale::ReplicaPhase::kReady), 3);
  for (const ReplicaInfo& info : orch->Replicas(Seconds{4})) {
    EXPECT_GT(info.port, 0);
    EXPECT_EQ(info.host, "127.0.0.1");
  }
  ASSERT_TRUE(orch->Stop("svc-1", Seconds{5}).has_value());
  EXPECT_EQ(fleet->replica_count(), 2u);
  EXPECT_EQ(orch->ListReplicas().size(), 2u);

  // A restarted daemon: the records of replicas the fleet still has are adopted, ready;
  // one it lost is cleaned up; new ids continue after the recorded ones.
  std::vector<ReplicaRecord> records = orch->Records();
  ReplicaRecord lost = records[0];
  lost.id = "svc-7";
  records.push_back(lost);
  auto again = Orchestrator(fleet->port());
  AdoptionReport report = again->Adopt(records, Seconds{6});
  EXPECT_EQ(report.adopted, (std::vector<std::string>{"svc-0", "svc-2"}));
  EXPECT_EQ(report.cleaned_up, std::vector<std::string>{"svc-7"});
  EXPECT_EQ(CountPhase(*again, scale::ReplicaPhase::kReady), 2);
  Result<scale::ReplicaStatus> next = again->Start(Seconds{7});
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, "svc-8");
  again->StopAll(Seconds{8});
  EXPECT_EQ(fleet->replica_count(), 0u);
  EXPECT_FALSE(again->HasProcesses());
}

TEST(FleetOrchestratorTest, UnreachableFleetLeavesReplicasPendingUntilItAnswers) {
  auto probe = StartFleet();
  ASSERT_NE(probe, nullptr);
  const int port = probe->port();
  probe.reset();  // nothing listens there now
  auto orch = Orchestrator(port);
  Result<scale::ReplicaStatus> started = orch->Start(Seconds{0});
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(started->phase, scale::ReplicaPhase::kPending);
  EXPECT_NE(orch->Replicas(Seconds{0})[0].last_error.find("the fleet did not answer"),
            std::string::npos)
      << orch->Replicas(Seconds{0})[0].last_error;
  auto fleet = StartFleet(port);
  ASSERT_NE(fleet, nullptr);
  orch->Poll(Seconds{1});  // placed on the fleet
  orch->Poll(Seconds{2});  // probed ready
  EXPECT_EQ(CountPhase(*orch, scale::ReplicaPhase::kReady), 1);
  EXPECT_EQ(fleet->replica_count(), 1u);
}

TEST(FleetOrchestratorTest, UrlMustBeHttpHostPort) {
  for (const std::string url : {"", "127.0.0.1:9300", "http://host", "http://h:0", "http://h:x"}) {
    FleetConfig config;
    config.service = "svc";
    config.url = url;
    Result<std::unique_ptr<FleetOrchestrator>> orch = FleetOrchestrator::Create(config);
    ASSERT_FALSE(orch.has_value()) << url;
    EXPECT_EQ(orch.error().field, "fleet.url") << url;
  }
}

}  // namespace
}  // namespace gpuscale::orch
