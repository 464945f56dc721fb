// orch::FleetOrchestrator against a real in-process `gpuscale fleet` (emulator::FleetServer):
// replicas get ports from the fleet and turn ready on their probe, stop removes them, a new
// orchestrator adopts what the fleet still lists, and an unreachable fleet leaves replicas
// pending with the reason until it answers.
#include "orch/fleet_orchestrator.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "emulator/fleet_server.h"
#include "testing/loopback_server.h"

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

// Polls until `done` or 20 polls, letting the fleet calls finish before each: the calls run
// on the orchestrator's own thread, and a Poll applies the answers that came.
template <typename Done>
bool PollUntil(FleetOrchestrator& orch, double& now, Done done) {
  for (int i = 0; i < 20 && !done(); ++i) {
    orch.WaitForCalls();
    orch.Poll(Seconds{now += 1});
  }
  return done();
}

TEST(FleetOrchestratorTest, StartsProbesStopsAndAdoptsReplicasOnTheFleet) {
  auto fleet = StartFleet();
  ASSERT_NE(fleet, nullptr);
  auto orch = Orchestrator(fleet->port(), /*max_replicas=*/3);
  for (int i = 0; i < 3; ++i) {
    Result<scale::ReplicaStatus> started = orch->Start(Seconds{i});
    ASSERT_TRUE(started.has_value()) << started.error().ToString();
    EXPECT_EQ(started->phase, scale::ReplicaPhase::kPending);  // until the fleet answers
  }
  EXPECT_EQ(orch->Start(Seconds{3}).error().code, ErrorCode::kResourceExhausted);
  orch->WaitForCalls();
  EXPECT_EQ(fleet->replica_count(), 3u);
  double now = 3;
  ASSERT_TRUE(
      PollUntil(*orch, now, [&] { return CountPhase(*orch, scale::ReplicaPhase::kReady) == 3; }));
  EXPECT_LE(now, 5) << "answers applied and probes posted in the same Poll";
  for (const ReplicaInfo& info : orch->Replicas(Seconds{now})) {
    EXPECT_GT(info.port, 0);
    EXPECT_EQ(info.host, "127.0.0.1");
  }
  ASSERT_TRUE(orch->Stop("svc-1", Seconds{now}).has_value());
  EXPECT_EQ(orch->ListReplicas().size(), 2u);  // gone for the daemon at once
  orch->WaitForCalls();
  EXPECT_EQ(fleet->replica_count(), 2u);

  // A restarted daemon: the records of replicas the fleet still has are adopted, ready;
  // one it lost is cleaned up; new ids continue after the recorded ones.
  std::vector<ReplicaRecord> records = orch->Records();
  ReplicaRecord lost = records[0];
  lost.id = "svc-7";
  records.push_back(lost);
  auto again = Orchestrator(fleet->port());
  AdoptionReport report = again->Adopt(records, Seconds{now});
  EXPECT_EQ(report.adopted, (std::vector<std::string>{"svc-0", "svc-2"}));
  EXPECT_EQ(report.cleaned_up, std::vector<std::string>{"svc-7"});
  EXPECT_EQ(CountPhase(*again, scale::ReplicaPhase::kReady), 2);
  Result<scale::ReplicaStatus> next = again->Start(Seconds{now});
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, "svc-8");
  // Stopped while its POST may still be in flight: the DELETE runs after it, so the fleet
  // keeps no port for it.
  again->StopAll(Seconds{now});
  EXPECT_TRUE(again->ListReplicas().empty());
  EXPECT_TRUE(again->HasProcesses());  // the DELETEs are not answered yet
  ASSERT_TRUE(PollUntil(*again, now, [&] { return !again->HasProcesses(); }));
  EXPECT_EQ(fleet->replica_count(), 0u);
}

// A fleet that hangs holds only its own service: Start and Poll return while its call is
// still unanswered (ordering, not timing: the call can only end when the test closes the
// socket).
TEST(FleetOrchestratorTest, AHungFleetHoldsNeitherStartNorPoll) {
  // A listening socket that never accepts: the connect succeeds, nothing ever answers.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  FleetConfig config;
  config.service = "svc";
  config.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  config.timeout = Seconds{600};
  Result<std::unique_ptr<FleetOrchestrator>> orch = FleetOrchestrator::Create(config);
  ASSERT_TRUE(orch.has_value());
  ASSERT_TRUE((*orch)->Start(Seconds{0}).has_value());
  (*orch)->Poll(Seconds{1});
  (*orch)->Poll(Seconds{2});
  EXPECT_TRUE((*orch)->HasProcesses()) << "the POST is still unanswered";
  EXPECT_EQ((*orch)->ListReplicas()[0].phase, scale::ReplicaPhase::kPending);
  close(listener);  // resets the waiting connection: the call fails
  (*orch)->WaitForCalls();
  (*orch)->Poll(Seconds{3});
  EXPECT_FALSE((*orch)->Replicas(Seconds{3})[0].last_error.empty());
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
  orch->WaitForCalls();
  orch->Poll(Seconds{0});
  EXPECT_NE(orch->Replicas(Seconds{0})[0].last_error.find("the fleet did not answer"),
            std::string::npos)
      << orch->Replicas(Seconds{0})[0].last_error;
  const std::vector<OrchestratorEvent> events = orch->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, events::EventKind::kReplicaPending);
  auto fleet = StartFleet(port);
  ASSERT_NE(fleet, nullptr);
  double now = 0;
  ASSERT_TRUE(
      PollUntil(*orch, now, [&] { return CountPhase(*orch, scale::ReplicaPhase::kReady) == 1; }));
  EXPECT_EQ(fleet->replica_count(), 1u);
}

// A fleet that answers with a port no TCP socket has, and a body far longer than a message:
// the replica stays pending, its reason names the port, and no reason carries the whole body.
TEST(FleetOrchestratorTest, APortOutsideTheTcpRangeOrAnOverlongErrorIsReportedNotUsed) {
  gpuscale::testing::LoopbackServer fleet;
  int answers = 0;
  fleet.server().Post("/replicas", [&](const httplib::Request&, httplib::Response& res) {
    if (answers++ == 0) {
      res.set_content(R"({"port": 70000})", "application/json");
    } else {
      res.status = 500;
      res.set_content(std::string(100000, 'x'), "text/plain");
    }
  });
  ASSERT_TRUE(fleet.Start());
  auto orch = Orchestrator(fleet.port());
  ASSERT_TRUE(orch->Start(Seconds{0}).has_value());
  orch->WaitForCalls();
  orch->Poll(Seconds{0});
  const std::string first = orch->Replicas(Seconds{0})[0].last_error;
  EXPECT_NE(first.find("port 70000, not one of 1..65535"), std::string::npos) << first;
  EXPECT_EQ(CountPhase(*orch, scale::ReplicaPhase::kPending), 1);
  (void)orch->Place(orch->ListReplicas()[0].id, Seconds{1});  // asks the fleet again
  orch->WaitForCalls();
  orch->Poll(Seconds{1});
  const std::string second = orch->Replicas(Seconds{1})[0].last_error;
  EXPECT_NE(second.find("HTTP 500"), std::string::npos) << second.substr(0, 300);
  EXPECT_LT(second.size(), 400u);
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
