// Daemon's level-triggered reconcile (reconciler.h): a desired service whose slot
// cannot be made yet is tried again on later ticks, with backoff, and converges without a
// second API request; meanwhile its view and the event log say why. A Slurm service whose
// REST token file does not exist yet fails the way a real one does (its engine cannot be set
// up) and needs no fake; the manual clock steps the backoff.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "daemon/daemon.h"
#include "testing/daemon_test_fixture.h"

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;

class DaemonReconcileTest : public DaemonFixture {
 protected:
  DaemonReconcileTest() : DaemonFixture("gpuscale_daemon_reconcile_test") {}

  DaemonConfig Config() const {
    DaemonConfig c;
    c.gpu.backend.kind = "simulated";
    c.state_dir = dir_ + "/state";
    c.loop_interval = Seconds{2};  // the first retry's wait
    return c;
  }

  // A Slurm service reached over REST with its token in `token_path` (nothing listens at the
  // URL: with no replica wanted, nothing is asked of it but a listing, which fails at once).
  ServiceConfig SlurmRestService(const std::string& token_path) const {
    ServiceConfig s;
    s.name = "gpu";
    s.engine = "slurm";
    s.command = {"srv", "--port", "{port}"};
    s.min_replicas = 0;
    s.max_replicas = 1;
    s.slurm.transport = "rest";
    s.slurm.url = "http://127.0.0.1:9";
    s.slurm.token_file = token_path;
    s.slurm.timeout = Seconds{1};
    return s;
  }

  // The service's apply failure now (fails the test when the service is not shown).
  std::optional<ApplyFailure> FailureOf(const std::string& name) {
    Result<ServiceView> view = daemon_->GetService(name);
    EXPECT_TRUE(view) << view.error().ToString();
    return view ? view->apply_failure : std::nullopt;
  }
};

TEST_F(DaemonReconcileTest, ACreateWhoseSlotFailsOnceConvergesOnALaterTickWithoutASecondApiCall) {
  Open(Config());
  const std::string token = dir_ + "/slurm.jwt";  // not written yet
  ASSERT_TRUE(daemon_->CreateService(SlurmRestService(token)));

  Tick();  // t = 1001: the engine cannot be set up
  std::optional<ApplyFailure> failure = FailureOf("gpu");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->attempts, 1);
  EXPECT_THAT(failure->message, HasSubstr("spec not applied"));
  EXPECT_THAT(failure->message, HasSubstr("slurm.token_file"));
  EXPECT_EQ(failure->next_retry_at, Seconds{1003});  // one loop interval later
  auto errors = EventsOfKind(events::EventKind::kServiceError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].service, "gpu");
  EXPECT_THAT(errors[0].message, HasSubstr("slurm.jwt"));

  Tick();  // t = 1002: backing off, not tried
  ASSERT_TRUE(FailureOf("gpu").has_value());
  EXPECT_EQ(FailureOf("gpu")->attempts, 1);

  Tick();  // t = 1003: tried again, fails the same way; the wait doubles
  failure = FailureOf("gpu");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->attempts, 2);
  EXPECT_EQ(failure->next_retry_at, Seconds{1007});
  EXPECT_EQ(EventsOfKind(events::EventKind::kServiceError).size(),
            1u);  // the same error is not logged again
  EXPECT_TRUE(EventsOfKind(events::EventKind::kServiceCreated).empty());

  std::ofstream(token) << "jwt-token\n";  // the operator provisions the token
  Tick(3);                                // t = 1006: still backing off
  ASSERT_TRUE(FailureOf("gpu").has_value());
  Tick();  // t = 1007: converges, no request in between
  EXPECT_FALSE(FailureOf("gpu").has_value());
  const auto created = EventsOfKind(events::EventKind::kServiceCreated);
  ASSERT_EQ(created.size(), 1u);
  EXPECT_THAT(created[0].message, HasSubstr("after 2 failed attempts"));
  Result<ServiceView> view = daemon_->GetService("gpu");
  ASSERT_TRUE(view);
  ASSERT_TRUE(view->last_decision_at.has_value());  // its runtime ticked
  EXPECT_EQ(*view->last_decision_at, Seconds{1007});
}

TEST_F(DaemonReconcileTest, AFailedUpdateKeepsTheRunningSpecAndANewerOneIsTriedAtOnce) {
  Open(Config());
  const std::string token = dir_ + "/slurm.jwt";
  std::ofstream(token) << "jwt-token\n";
  ASSERT_TRUE(daemon_->CreateService(SlurmRestService(token)));
  Tick();
  ASSERT_FALSE(FailureOf("gpu").has_value());

  ServiceConfig broken = SlurmRestService(dir_ + "/missing.jwt");
  broken.max_replicas = 2;
  ASSERT_TRUE(daemon_->UpdateService(broken));
  Tick();
  Result<ServiceView> view = daemon_->GetService("gpu");
  ASSERT_TRUE(view);
  ASSERT_TRUE(view->apply_failure.has_value());
  EXPECT_THAT(view->apply_failure->message, HasSubstr("missing.jwt"));
  EXPECT_EQ(view->config.max_replicas, 2);  // the spec asked for, not yet running
  EXPECT_TRUE(EventsOfKind(events::EventKind::kServiceUpdated).empty());

  ServiceConfig fixed = SlurmRestService(token);
  fixed.max_replicas = 2;
  ASSERT_TRUE(daemon_->UpdateService(fixed));
  Tick();  // a newer spec does not wait out the old one's backoff
  EXPECT_FALSE(FailureOf("gpu").has_value());
  ASSERT_EQ(EventsOfKind(events::EventKind::kServiceUpdated).size(), 1u);
}

TEST_F(DaemonReconcileTest, ADeletedServiceIsNoLongerRetried) {
  Open(Config());
  ASSERT_TRUE(daemon_->CreateService(SlurmRestService(dir_ + "/missing.jwt")));
  Tick();
  ASSERT_EQ(EventsOfKind(events::EventKind::kServiceError).size(), 1u);
  ASSERT_TRUE(daemon_->DeleteService("gpu"));
  Tick(10);
  EXPECT_FALSE(daemon_->GetService("gpu"));
  EXPECT_TRUE(daemon_->ListServices().empty());
  EXPECT_EQ(EventsOfKind(events::EventKind::kServiceError).size(), 1u);
}

}  // namespace
}  // namespace gpuscale::daemon
