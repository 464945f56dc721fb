// Daemon::Reload (SIGHUP): a re-read config applied through the API's create/update paths,
// with simulated GPUs, `sleep` replicas and a manual clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/daemon.h"
#include "testing/daemon_test_fixture.h"
#include "testing/loopback_server.h"

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
  std::vector<std::string> EventMessages(events::EventKind kind) {
    EventQuery query;
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
  EXPECT_THAT(EventMessages(events::EventKind::kConfigReloaded),
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
  EXPECT_THAT(EventMessages(events::EventKind::kConfigReloaded)[0],
              HasSubstr("errors: service 'a' left as it was"));
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
  const std::vector<std::string> failed = EventMessages(events::EventKind::kConfigReloadFailed);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0],
            "not applied, nothing changed: services[0].max_replicas: expected an integer, got "
            "'x' (line 7)");
}

// A PromQL endpoint on 127.0.0.1 answering every instant query with `value`.
class FakePrometheus : public testing::LoopbackServer {
 public:
  explicit FakePrometheus(double value) {
    server().Get("/api/v1/query", [value](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status":"success","data":{"resultType":"vector","result":[)"
                      R"({"metric":{},"value":[1700000000,")" +
                          std::to_string(value) + R"("]}]}})",
                      "application/json");
    });
    Start();
  }
};

TEST_F(DaemonReloadTest, PrometheusTasksAndLoopIntervalApplyLive) {
  // A service scaled on a PromQL query; the daemon starts without a server to ask.
  auto service = ParseServiceConfigText(R"yaml(
name: q
command: [sleep, "300"]
readiness_path: ""
min_replicas: 1
max_replicas: 3
policy:
  family: target
  target:
    metrics: [{name: waiting, query: "sum(vllm:num_requests_waiting)", average_value: 2}]
)yaml",
                                        "test");
  ASSERT_TRUE(service) << service.error().ToString();
  Open(Config({*service}));
  Tick(2);
  auto view = daemon_->GetService("q");
  ASSERT_TRUE(view);
  EXPECT_THAT(::testing::PrintToString(view->metric_errors), HasSubstr("prometheus.url"));
  EXPECT_EQ(view->desired_replicas, 1);

  // The file now names a server (6 requests waiting: 3 replicas at 2 each), a new backfill
  // threshold, scrape cutoff and loop interval; all take effect without a restart.
  FakePrometheus prometheus(6);
  DaemonConfig reread = Config({*service});
  reread.prometheus.url = prometheus.Url();
  reread.loop_interval = Seconds{5};
  reread.tasks.max_head_skips = 1;
  reread.scrape.cutoff_ratio = 0.8;
  reread.retention.max_bytes = int64_t{64} << 20;
  const ReloadReport report = daemon_->Reload(reread);
  EXPECT_THAT(report.applied_live,
              ElementsAre("prometheus", "scrape", "retention", "tasks", "loop_interval_seconds"));
  EXPECT_THAT(report.needs_restart, IsEmpty());
  EXPECT_THAT(report.unchanged, ElementsAre("q"));
  EXPECT_THAT(EventMessages(events::EventKind::kConfigReloaded),
              ElementsAre("created none; updated none; unchanged q; applied prometheus, scrape, "
                          "retention, tasks, loop_interval_seconds"));
  Tick(2);
  view = daemon_->GetService("q");
  ASSERT_TRUE(view);
  EXPECT_THAT(::testing::PrintToString(view->metric_errors),
              ::testing::Not(HasSubstr("prometheus.url")));
  EXPECT_EQ(view->desired_replicas, 3);

  // The same file again: nothing left to apply.
  EXPECT_THAT(daemon_->Reload(reread).applied_live, IsEmpty());
}

}  // namespace
}  // namespace gpuscale::daemon
