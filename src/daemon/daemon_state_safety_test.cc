// State that cannot be stolen (issue 44): a daemon whose replicas table cannot be read adopts
// the replica processes marked for its state directory (or refuses to start when one cannot
// be identified) instead of placing new replicas over their GPUs; a daemon on a copy of a
// state directory neither adopts nor signals the other directory's replicas; /readyz follows
// the store's health both ways; the shutdown line about replicas left running is said only
// when some are. Real `sleep` replicas, simulated GPUs, a manual clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "daemon/daemon.h"
#include "orch/process_util.h"
#include "store/store.h"
#include "testing/daemon_test_fixture.h"
#include "testing/wait_until.h"

extern char** environ;

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;

class DaemonStateSafetyTest : public DaemonFixture {
 protected:
  DaemonStateSafetyTest() : DaemonFixture("gpuscale_state_safety") {}

  void TearDown() override {
    if (stranger_ > 0) kill(-stranger_, SIGKILL), waitpid(stranger_, nullptr, 0);
    DaemonFixture::TearDown();
  }

  // Service "svc" of `sleep` replicas (ready once running), one GPU each, on `gpus`
  // simulated GPUs; state in <dir>/<state>.
  DaemonConfig Config(int min, int max, int gpus = 4, const std::string& state = "state") {
    std::ofstream inventory(dir_ + "/inventory.yaml");
    inventory << "gpus:\n";
    for (int i = 0; i < gpus; ++i) inventory << "  - index: " << i << "\n";
    DaemonConfig c;
    c.gpu.backend.kind = "simulated";
    c.gpu.backend.inventory_path = dir_ + "/inventory.yaml";
    c.state_dir = dir_ + "/" + state;
    ServiceConfig s;
    s.name = "svc";
    s.command = {"sleep", "300"};
    s.readiness_path = "";
    s.min_replicas = min;
    s.max_replicas = max;
    c.services.push_back(s);
    return c;
  }

  // Quiet options whose log lines land in logged_.
  DaemonOptions LoggingOptions() {
    DaemonOptions options = QuietOptions();
    options.log = [this](std::string_view m) { logged_.emplace_back(m); };
    return options;
  }
  int LoggedLinesWith(const std::string& text) const {
    int n = 0;
    for (const std::string& line : logged_) n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }

  std::vector<ReplicaView> Replicas() {
    auto r = daemon_->ListReplicas("svc");
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? *r : std::vector<ReplicaView>{};
  }

  // The daemon dies: its replicas keep running.
  void Crash() {
    daemon_->Shutdown(/*stop_replicas=*/false);
    daemon_.reset();
  }

  // Runs `sql` on the state database through a connection of its own (another process's,
  // as far as the daemon's connection can tell).
  void ExecSql(const std::string& sql, const std::string& state = "state") {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/" + state + "/gpuscale.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    const std::string message = error != nullptr ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << message;
  }

  // Another writer fills the state database up to `cap_bytes` (the daemon's size cap) with
  // events of service "filler", in ever smaller rows until not even a small one fits.
  void FillStore(int64_t cap_bytes) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/state/gpuscale.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    const std::string cap = "PRAGMA max_page_count = " + std::to_string(cap_bytes / 4096);
    ASSERT_EQ(sqlite3_exec(db, cap.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    for (int size : {4000, 500, 50}) {
      const std::string insert =
          "INSERT INTO events (at, service, kind, replica, message, data) VALUES (0, 'filler', "
          "'filler', '', printf('%." + std::to_string(size) + "c', 'x'), '')";
      int rows = 0;
      while (rows < 10000 && sqlite3_exec(db, insert.c_str(), nullptr, nullptr, nullptr) ==
                                 SQLITE_OK) {
        ++rows;
      }
      ASSERT_LT(rows, 10000) << "the cap was never reached";
    }
    sqlite3_close(db);
  }

  std::string Marker(const std::string& state = "state") const {
    return std::string(orch::kReplicaMarkerEnv) + "=" +
           orch::ReplicaMarkerValue(dir_ + "/" + state);
  }
  std::set<int> MarkedPids(const std::string& state = "state") const {
    std::set<int> pids;
    for (const orch::MarkedProcess& p : orch::FindProcessesWithEnv(Marker(state))) {
      pids.insert(p.pid);
    }
    return pids;
  }

  static std::set<int> PidsOf(const std::vector<ReplicaView>& replicas) {
    std::set<int> pids;
    for (const ReplicaView& r : replicas) pids.insert(r.pid);
    return pids;
  }

  // `sleep 300` in a process group of its own carrying only the marker (as a replica started
  // by a gpuscale before replicas said which they are); TearDown kills it.
  void StartUnidentifiedReplica() {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    env_strings.push_back(Marker());
    std::vector<char*> env;
    for (std::string& e : env_strings) env.push_back(e.data());
    env.push_back(nullptr);
    char sleep_arg[] = "sleep", seconds[] = "300";
    char* argv[] = {sleep_arg, seconds, nullptr};
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    ASSERT_EQ(posix_spawnp(&stranger_, "sleep", nullptr, &attr, argv, env.data()), 0);
    posix_spawnattr_destroy(&attr);
    // posix_spawn returns once exec has begun, slightly before /proc shows the new image.
    gpuscale::testing::WaitUntil([&] { return MarkedPids().count(stranger_) != 0; });
    ASSERT_EQ(MarkedPids().count(stranger_), 1u);
  }

  std::vector<std::string> logged_;
  pid_t stranger_ = -1;
};

// Item 9: the replica rows cannot be read (a damaged row), but the two replica processes say
// which replicas they are: the next daemon adopts them on their GPUs, starts no third, and
// stops them at its shutdown.
TEST_F(DaemonStateSafetyTest, UnreadableReplicasTableIsRebuiltFromTheMarkedProcesses) {
  Open(Config(2, 2, /*gpus=*/2));
  Tick(2);
  const std::vector<ReplicaView> before = Replicas();
  ASSERT_EQ(before.size(), 2u);
  Crash();
  ExecSql("UPDATE replicas SET gpus = 'not json'");
  {
    std::unique_ptr<store::Store> store =
        *store::Store::Open(dir_ + "/state/gpuscale.db", clock_.Now());
    ASSERT_FALSE(store->replicas().List()) << "the table must be unreadable for this test";
  }

  Open(Config(2, 2, /*gpus=*/2), LoggingOptions());
  EXPECT_EQ(LoggedLinesWith("cannot be read"), 1);
  EXPECT_EQ(daemon_->Leases().size(), 2u);
  Tick(2);
  const std::vector<ReplicaView> after = Replicas();
  ASSERT_EQ(after.size(), 2u);
  for (const ReplicaView& r : after) {
    EXPECT_TRUE(r.adopted) << r.id;
    const auto was = std::find_if(before.begin(), before.end(),
                                  [&](const ReplicaView& b) { return b.id == r.id; });
    ASSERT_NE(was, before.end()) << r.id;
    EXPECT_EQ(r.pid, was->pid);
    EXPECT_EQ(r.gpus, was->gpus);
    EXPECT_EQ(r.port, was->port);
  }
  EXPECT_EQ(MarkedPids(), PidsOf(before)) << "no replica placed over the adopted ones";
  EXPECT_TRUE(daemon_->Ready()) << "the table was rewritten";

  StopDaemon();
  EXPECT_TRUE(MarkedPids().empty()) << "no replica outlives the daemon's shutdown";
}

// Item 9: a marked process that does not say which replica it is cannot be adopted without
// the table: the daemon refuses to start, naming the database, the pid and what to do.
TEST_F(DaemonStateSafetyTest, UnreadableReplicasTableWithAnUnidentifiedProcessRefusesToStart) {
  Open(Config(1, 1));
  Tick(2);
  Crash();
  ExecSql("UPDATE replicas SET gpus = 'not json'");
  StartUnidentifiedReplica();

  auto refused = Daemon::Open(Config(1, 1), clock_, QuietOptions());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(refused.error().message, HasSubstr(dir_ + "/state/gpuscale.db"));
  EXPECT_THAT(refused.error().message, HasSubstr("pids " + std::to_string(stranger_)));
  EXPECT_THAT(refused.error().message, HasSubstr("kill -TERM"));
  EXPECT_EQ(MarkedPids().size(), 2u) << "nothing was signalled";

  // Done what it says: the stranger stopped, the next start adopts svc-0 from its process.
  kill(-stranger_, SIGKILL);
  waitpid(stranger_, nullptr, 0);
  stranger_ = -1;
  Open(Config(1, 1));
  ASSERT_EQ(Replicas().size(), 1u);
  EXPECT_TRUE(Replicas()[0].adopted);
}

// A replica row whose phase this version does not know (written by a newer one) is not
// adopted as a guess: the start is refused, naming the row; with the phase restored, the next
// start adopts the replica.
TEST_F(DaemonStateSafetyTest, AStoredReplicaPhaseThisVersionDoesNotKnowRefusesToStart) {
  Open(Config(1, 1));
  Tick(2);
  ASSERT_EQ(Replicas().size(), 1u);
  Crash();
  ExecSql("UPDATE replicas SET phase = 'hibernating'");

  auto refused = Daemon::Open(Config(1, 1), clock_, QuietOptions());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(refused.error().field, "replicas.phase");
  EXPECT_THAT(refused.error().message, HasSubstr("replica 'svc-0' of service 'svc'"));
  EXPECT_THAT(refused.error().message, HasSubstr("'hibernating'"));

  ExecSql("UPDATE replicas SET phase = 'ready'");
  Open(Config(1, 1));
  ASSERT_EQ(Replicas().size(), 1u);
  EXPECT_TRUE(Replicas()[0].adopted);
}

// Item 10: a daemon on a copy of a state directory (sqlite3 .backup) finds rows whose live
// processes are marked for the original directory: it drops them (logged once), releases
// their leases in its own ledger, starts its own replicas, and its shutdown leaves the
// original's running.
TEST_F(DaemonStateSafetyTest, ReplicasOfACopiedStateDirectoryAreNeitherAdoptedNorSignalled) {
  Open(Config(2, 2));
  Tick(2);
  const std::set<int> originals = PidsOf(Replicas());
  ASSERT_EQ(originals.size(), 2u);
  Crash();
  std::filesystem::create_directories(dir_ + "/copy");
  {
    std::unique_ptr<store::Store> store =
        *store::Store::Open(dir_ + "/state/gpuscale.db", clock_.Now());
    ASSERT_TRUE(store->database().BackupTo(dir_ + "/copy/gpuscale.db"));
  }

  Open(Config(2, 2, 4, "copy"), LoggingOptions());
  EXPECT_TRUE(daemon_->Leases().empty()) << "no lease re-acquired for another's replicas";
  EXPECT_EQ(LoggedLinesWith("another state directory"), 1);
  Tick(2);
  const std::set<int> own = PidsOf(Replicas());
  ASSERT_EQ(own.size(), 2u);
  for (int pid : own) EXPECT_EQ(originals.count(pid), 0u) << pid;
  StopDaemon();
  for (int pid : originals) EXPECT_TRUE(orch::ProcessAlive(pid)) << pid;
  EXPECT_EQ(LoggedLinesWith("another state directory"), 1) << "said once";

  // The original directory's daemon still adopts them (TearDown stops them).
  Open(Config(2, 2));
  EXPECT_EQ(PidsOf(Replicas()), originals);
}

// Item 11: an API write the store refuses (a full disk: a size cap here) makes the daemon not
// ready at once; the next tick's probe write finds that the store takes writes again.
TEST_F(DaemonStateSafetyTest, AnApiWriteThatFailsOnAFullStoreMakesTheDaemonNotReadyAtOnce) {
  DaemonOptions options = QuietOptions();
  options.store_max_bytes = 400 * 1024;
  Open(Config(1, 1), options);
  Tick(2);
  ASSERT_TRUE(daemon_->Ready());
  ServiceConfig big = Config(1, 1).services[0];
  big.name = "big";
  big.command = {"sleep", "300", std::string(600 * 1024, 'x')};  // a spec past the cap
  auto created = daemon_->CreateService(big);
  ASSERT_FALSE(created);
  ASSERT_EQ(created.error().code, ErrorCode::kUnavailable) << created.error().ToString();
  Status ready = daemon_->Ready();
  ASSERT_FALSE(ready);
  EXPECT_THAT(ready.error().message, HasSubstr("creating service big"));
  Tick();
  EXPECT_TRUE(daemon_->Ready()) << "a 16 KiB probe write fits: the store takes writes";
}

// Item 11: the disk fills up (another writer takes the room left under the size cap that
// stands in for it) and events cannot be appended: not ready. Once the room is back, the
// daemon is ready on the next tick although no event is due.
TEST_F(DaemonStateSafetyTest, ReadinessReturnsOnTheFirstTickAfterTheStoreTakesWritesAgain) {
  constexpr int64_t kCapBytes = 1 << 20;
  DaemonOptions options = QuietOptions();
  options.store_max_bytes = kCapBytes;
  Open(Config(1, 2), options);
  Tick(3);
  ASSERT_TRUE(daemon_->Ready());
  FillStore(kCapBytes);
  ASSERT_TRUE(daemon_->SetDesiredReplicas("svc", 2));
  Tick(3);  // the override, the start and the readiness of svc-1: their events fail
  ASSERT_EQ(Replicas().size(), 2u);
  Status ready = daemon_->Ready();
  ASSERT_FALSE(ready);
  EXPECT_THAT(ready.error().message, HasSubstr("appending event"));
  Tick();
  EXPECT_FALSE(daemon_->Ready()) << "the probe write fails too while the disk is full";
  ExecSql("DELETE FROM events WHERE service = 'filler'");
  Tick();
  EXPECT_TRUE(daemon_->Ready());
}

// Item 13: a daemon that stops without stopping replicas (a start that failed on a busy
// port, --keep-replicas) says it leaves replicas running only when some run.
TEST_F(DaemonStateSafetyTest, LeavingReplicasRunningIsSaidOnlyWhenSomeRun) {
  Open(Config(0, 1), LoggingOptions());
  Crash();
  EXPECT_EQ(LoggedLinesWith("leaving"), 0);
  Open(Config(1, 1), LoggingOptions());
  Tick(2);
  Crash();
  EXPECT_EQ(LoggedLinesWith("leaving the replicas of 1 service running"), 1);
  Open(Config(1, 1));  // adopts it; TearDown stops it
}

}  // namespace
}  // namespace gpuscale::daemon
