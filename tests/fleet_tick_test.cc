// The daemon's control loop against an in-process `gpuscale fleet` (emulator::FleetServer)
// where one replica is a straggler: its /metrics answers only after 30 s, far past the
// tick's cutoff, while its /health answers at once (so it stays ready). Ticks must not wait
// for it: the other replicas' load is seen fresh every tick and the straggler is reported
// stale, once. A tick that waited for the slowest scrape would block for the 60 s scrape
// timeout and report a timeout instead.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/daemon.h"
#include "emulator/fleet_server.h"
#include "testing/daemon_test_fixture.h"

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;

class FleetTickTest : public DaemonFixture {
 protected:
  FleetTickTest() : DaemonFixture("gpuscale_fleet_tick_test") {}

  void TearDown() override {
    DaemonFixture::TearDown();  // the daemon first: its scrapes of the fleet end with it
    fleet_.reset();
  }

  DaemonConfig Config(int replicas) {
    DaemonConfig c;
    c.gpu.backend.kind = "simulated";
    c.state_dir = dir_ + "/state";
    // Collect's cutoff is half of 4 s: far past what the other replicas' answers take, even
    // under sanitizers on a busy machine. Ticks are the test's, not the loop's.
    c.loop_interval = Seconds{4};
    ServiceConfig s;
    s.name = "svc";
    s.engine = "fleet";
    s.fleet_url = "http://127.0.0.1:" + std::to_string(fleet_->port());
    s.command = {"fleet"};
    s.gpus_per_replica = 0;
    s.min_replicas = replicas;
    s.max_replicas = replicas;
    // A policy that reads the replicas' scrapes: they are scraped every tick.
    s.policy_yaml = PolicyReading("vllm:num_requests_waiting");
    s.policy_family = "target";
    c.services.push_back(s);
    return c;
  }

  static std::string PolicyReading(const std::string& metric) {
    return "family: target\ntarget:\n  metrics:\n    - {name: \"" + metric +
           "\", average_value: 5}\n";
  }

  void StartFleet() {
    Result<std::unique_ptr<emulator::FleetServer>> fleet =
        emulator::FleetServer::Start(emulator::FleetOptions{});
    ASSERT_TRUE(fleet.has_value()) << fleet.error().ToString();
    fleet_ = std::move(*fleet);
  }

  // Each replica's outstanding requests as the daemon last scraped them.
  std::map<std::string, int> Outstanding() {
    std::map<std::string, int> out;
    Result<std::vector<daemon::ReplicaView>> replicas = daemon_->ListReplicas("svc");
    EXPECT_TRUE(replicas.has_value());
    if (replicas) {
      for (const daemon::ReplicaView& r : *replicas) out[r.id] = r.outstanding_requests;
    }
    return out;
  }

  std::vector<std::string> MetricEvents() {
    daemon::EventQuery query;
    query.service = "svc";
    Result<std::vector<daemon::EventView>> rows = daemon_->Events(query);
    EXPECT_TRUE(rows.has_value());
    std::vector<std::string> out;
    if (!rows) return out;
    for (const daemon::EventView& e : *rows) {
      if (e.kind.starts_with("metrics_")) out.push_back(e.kind + ": " + e.message);
    }
    return out;
  }

  std::unique_ptr<emulator::FleetServer> fleet_;
};

TEST_F(FleetTickTest, AStragglerNeitherHoldsTheTickNorStalesTheOtherReplicas) {
  StartFleet();
  DaemonOptions options = QuietOptions();
  options.scrape_timeout = Seconds{60};
  options.probe_interval = Seconds{4};  // the settling loop's interval too
  Open(Config(3), options);
  Tick();  // the replicas start on the fleet
  ASSERT_EQ(fleet_->replica_count(), 3u);
  ASSERT_TRUE(fleet_->SetMetricsDelay("svc-2", Seconds{30}).has_value());

  for (int tick = 1; tick <= 4; ++tick) {
    ASSERT_TRUE(fleet_->SetLoad("svc-0", tick, 0).has_value());
    ASSERT_TRUE(fleet_->SetLoad("svc-1", 0, 10 * tick).has_value());
    ASSERT_TRUE(fleet_->SetLoad("svc-2", 5, 5).has_value());
    Tick();
    const std::map<std::string, int> outstanding = Outstanding();
    EXPECT_EQ(outstanding.at("svc-0"), tick) << "tick " << tick;
    EXPECT_EQ(outstanding.at("svc-1"), 10 * tick) << "tick " << tick;
    EXPECT_EQ(outstanding.at("svc-2"), 0) << "never scraped";
    Result<ServiceView> view = daemon_->GetService("svc");
    ASSERT_TRUE(view.has_value());
    EXPECT_EQ(view->ready_replicas, 3);
    if (tick < 3) {
      EXPECT_THAT(view->metric_errors, ::testing::IsEmpty()) << "tick " << tick;
    } else {
      ASSERT_EQ(view->metric_errors.size(), 1u) << "tick " << tick;
      EXPECT_THAT(view->metric_errors[0], HasSubstr("replica svc-2: metrics stale"));
    }
  }
  // One event when it turned stale, not one a tick.
  const std::vector<std::string> events = MetricEvents();
  ASSERT_EQ(events.size(), 1u) << ::testing::PrintToString(events);
  EXPECT_THAT(events[0], HasSubstr("metrics_error: replica svc-2: metrics stale"));
  const std::string text = daemon_->MetricsText();
  EXPECT_THAT(text, HasSubstr("gpuscale_scrapes_in_flight 1"));
  EXPECT_THAT(text, HasSubstr("gpuscale_scrapes_total 8")) << "the fast ones, four ticks";
}

// A service whose policy reads only what the gateway measures has its replicas scraped for
// the API's view only: every scrape.view_only_interval, not every tick.
TEST_F(FleetTickTest, ReplicasNoPolicyReadsAreScrapedOnlyEveryViewOnlyInterval) {
  StartFleet();
  DaemonConfig config = Config(2);
  config.services[0].policy_yaml = PolicyReading("gateway:in_flight");
  config.scrape.view_only_interval = Seconds{5};
  Open(config, QuietOptions());
  Tick();  // the replicas start on the fleet
  ASSERT_EQ(fleet_->replica_count(), 2u);
  ASSERT_TRUE(fleet_->SetLoad("svc-0", 3, 0).has_value());
  Tick(5);  // the first scrape of the ready replicas comes within the interval
  EXPECT_EQ(Outstanding().at("svc-0"), 3);
  ASSERT_TRUE(fleet_->SetLoad("svc-0", 7, 0).has_value());
  Tick();
  EXPECT_EQ(Outstanding().at("svc-0"), 3) << "not due yet: the last scraped count stands";
  Tick(5);
  EXPECT_EQ(Outstanding().at("svc-0"), 7);
  // Eleven ticks, two replicas: 22 scrapes had they been scraped every tick.
  const std::string text = daemon_->MetricsText();
  const size_t at = text.find("\ngpuscale_scrapes_total ");
  ASSERT_NE(at, std::string::npos);
  const int scrapes = std::stoi(text.substr(at + 24));
  EXPECT_GE(scrapes, 4);
  EXPECT_LE(scrapes, 6);
  Result<ServiceView> view = daemon_->GetService("svc");
  ASSERT_TRUE(view.has_value());
  EXPECT_THAT(view->metric_errors, ::testing::IsEmpty()) << "kept values never turn stale";
}

}  // namespace
}  // namespace gpuscale::daemon
