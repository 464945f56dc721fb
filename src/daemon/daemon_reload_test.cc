// Daemon::Reload (SIGHUP): a re-read config applied through the API's create/update paths,
// with simulated GPUs, `sleep` replicas and a manual clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/daemon.h"
#include "daemon/daemon_test_fixture.h"

namespace gpuscale::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class DaemonReloadTest : public DaemonFixture {
 protected:
  DaemonReloadTest() : DaemonFixture("gpuscale_daemon_reload") {}

  static ServiceConfig Service(const std::string& name, int min, int max) {
    ServiceConfig s;
    s.name = name;
    s.command = {"sleep", "300"};
    s.readiness_path = "";  // ready once the process runs
    s.min_replicas = min;
    s.max_replicas = max;
    return s;
  }

  DaemonConfig Config(std::vector<ServiceConfig> services) const {
    DaemonConfig c;
    c.gpu.backend.kind = "simulated";
    c.state_dir = dir_ + "/state";
    c.services = std::move(services);
    return c;
  }

  // Messages of the events of `kind`, oldest first.
  std::vector<std::string> EventMessages(const std::string& kind) {
    store::EventQuery query;
    query.kind = kind;
    auto events = daemon_->Events(query);
    EXPECT_TRUE(events) << events.error().ToString();
    std::vector<std::string> messages;
    if (events) {
      for (const auto& e : *events) messages.push_back(e.message);
    }
    return messages;
  }
};

TEST_F(DaemonReloadTest, CreatesUpdatesAndLeavesAloneByTheFilesServices) {
  Open(Config({Service("a", 1, 2), Service("b", 1, 1), Service("gone", 1, 1)}));
  Tick(2);
  ASSERT_TRUE(daemon_->SetDesiredReplicas("a", 2));  // within the new bounds: stays

  DaemonConfig reread = Config({Service("a", 1, 3), Service("b", 1, 1), Service("c", 1, 1)});
  reread.gpu.sample_interval = Seconds{30};
  const ReloadReport report = daemon_->Reload(reread);
  EXPECT_THAT(report.created, ElementsAre("c"));
  EXPECT_THAT(report.updated, ElementsAre("a"));
  EXPECT_THAT(report.unchanged, ElementsAre("b"));
  EXPECT_THAT(report.kept, ElementsAre("gone"));  // as after a restart with this file
  EXPECT_THAT(report.needs_restart, ElementsAre("gpu"));
  EXPECT_THAT(report.errors, IsEmpty());

  EXPECT_EQ(daemon_->GetService("a")->config.max_replicas, 3);
  EXPECT_EQ(daemon_->GetService("a")->manual_replicas, 2);
  Tick(2);
  auto c = daemon_->ListReplicas("c");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->size(), 1u);  // the new service runs
  EXPECT_THAT(EventMessages("config_reloaded"),
              ElementsAre("created c; updated a; unchanged b; kept (no longer in the file; "
                          "DELETE /v1/services/NAME removes one) gone; changed but read only at "
                          "start (restart to apply) gpu"));

  // The same file again changes nothing.
  const ReloadReport again = daemon_->Reload(reread);
  EXPECT_THAT(again.created, IsEmpty());
  EXPECT_THAT(again.updated, IsEmpty());
  EXPECT_THAT(again.unchanged, ElementsAre("a", "b", "c"));
}

TEST_F(DaemonReloadTest, AnInvalidServiceIsLeftAsItWasAndTheRestApply) {
  Open(Config({Service("a", 1, 2), Service("b", 1, 1)}));
  Tick();
  ServiceConfig bad = Service("a", 1, 2);
  bad.command.clear();  // a replica needs a command
  const ReloadReport report = daemon_->Reload(Config({bad, Service("b", 1, 2)}));
  EXPECT_THAT(report.updated, ElementsAre("b"));
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_THAT(report.errors[0], HasSubstr("service 'a' left as it was"));
  EXPECT_THAT(report.errors[0], HasSubstr("services[0]."));
  EXPECT_EQ(daemon_->GetService("a")->config.command, Service("a", 1, 2).command);
  EXPECT_EQ(daemon_->GetService("b")->config.max_replicas, 2);
  EXPECT_THAT(EventMessages("config_reloaded")[0], HasSubstr("errors: service 'a' left as it was"));
}

TEST_F(DaemonReloadTest, AFileThatCannotBeReadChangesNothing) {
  Open(Config({Service("a", 1, 2)}));
  Tick();
  const ReloadReport report =
      daemon_->Reload(InvalidArgument("expected an integer, got 'x' (line 7)", "services[0].max_replicas"));
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_THAT(report.errors[0], HasSubstr("services[0].max_replicas"));
  EXPECT_FALSE(report.applied);
  EXPECT_THAT(report.created, IsEmpty());
  EXPECT_EQ(daemon_->GetService("a")->config.max_replicas, 2);
  const std::vector<std::string> failed = EventMessages("config_reload_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0],
            "not applied, nothing changed: services[0].max_replicas: expected an integer, got "
            "'x' (line 7)");
}

}  // namespace
}  // namespace gpuscale::daemon
