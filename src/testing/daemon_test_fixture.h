// Base fixture of the in-process Daemon tests (daemon_test, daemon_tasks_test,
// daemon_restart_test, daemon_reload_test): a fresh directory under /tmp per test, a manual
// clock, and a daemon that TearDown shuts down with its replicas stopped, so that no test
// leaves processes or GPU leases behind even after a failed assertion; then the directory is
// removed. Open and Tick are the common way in: quiet options, one clock second per tick.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "daemon/daemon.h"

namespace gpuscale::daemon {

class DaemonFixture : public ::testing::Test {
 protected:
  // `prefix` names the directory (/tmp/<prefix>_XXXXXX), so a leftover shows which test made it.
  explicit DaemonFixture(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    std::string tmpl = "/tmp/" + prefix_ + "_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    StopDaemon();
    std::filesystem::remove_all(dir_);
  }
  void StopDaemon() {
    if (daemon_) daemon_->Shutdown(/*stop_replicas=*/true);
    daemon_.reset();
  }

  // Options for tests: no health probes, short scrapes, no log lines; a test adjusts more.
  static DaemonOptions QuietOptions() {
    DaemonOptions options;
    options.health_interval = Seconds{0};
    options.scrape_timeout = Seconds{0.2};
    options.log = [](std::string_view) {};
    options.engine_calls = orch::SerialCalls::Mode::kInline;
    return options;
  }

  // Opens daemon_ on clock_ (fails the test when Open fails).
  void Open(DaemonConfig config, DaemonOptions options = QuietOptions()) {
    auto d = Daemon::Open(std::move(config), clock_, std::move(options));
    ASSERT_TRUE(d) << d.error().ToString();
    daemon_ = std::move(*d);
  }

  // `n` ticks, one clock second apart.
  void Tick(int n = 1) {
    for (int i = 0; i < n; ++i) {
      clock_.Advance(Seconds{1});
      daemon_->Tick();
    }
  }

  // daemon_'s stored events of `kind` (fails the test when they cannot be read).
  std::vector<EventView> EventsOfKind(events::EventKind kind) {
    EventQuery query;
    query.kind = kind;
    auto events = daemon_->Events(query);
    EXPECT_TRUE(events) << events.error().ToString();
    return events ? *events : std::vector<EventView>{};
  }

  std::string prefix_;
  std::string dir_;
  ManualClock clock_{Seconds{1000}};
  std::unique_ptr<Daemon> daemon_;
};

}  // namespace gpuscale::daemon
