// ReplicaBook on its own: ids, the command guards and their messages, drain grace accounting,
// restart backoff, events, and the views every adapter builds on.
#include "orch/replica_book.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscale::orch {
namespace {

using scale::ReplicaPhase;

// An adapter's record: the shared entry plus something of its own.
struct TestReplica : ReplicaEntry {
  int handle = 0;
};

// The error of a result, or a kInternal "succeeded" one when it holds a value.
template <typename T>
Error ErrorOf(const T& result) {
  return result ? Error{ErrorCode::kInternal, "succeeded", ""} : result.error();
}

ReplicaBookConfig TestConfig() {
  ReplicaBookConfig config;
  config.service = "svc";
  config.drain_grace = Seconds{30};
  config.restart_backoff_initial = Seconds{1};
  config.restart_backoff_max = Seconds{5};
  return config;
}

class ReplicaBookTest : public ::testing::Test {
 protected:
  // Adds a replica in `phase` with the next id.
  TestReplica& AddIn(ReplicaPhase phase, Seconds now = Seconds{0}) {
    TestReplica r;
    r.id = book_.NextId();
    r.phase = phase;
    r.phase_since = now;
    return book_.Add(std::move(r));
  }

  ReplicaBook<TestReplica> book_{TestConfig()};
};

TEST_F(ReplicaBookTest, IdsCountUpAndAdoptionReservesRecordedOnes) {
  EXPECT_EQ(book_.NextId(), "svc-0");
  EXPECT_EQ(book_.NextId(), "svc-1");
  // Ids of another shape (other service, not a number, trailing text) reserve nothing.
  // Nor do a sign or INT_MAX (an id may come from a stray Slurm job's name): the next index
  // would be negative or overflow.
  for (const char* id :
       {"other-9", "svc-x", "svc-", "svc-7a", "svc9", "svcx-8", "svc--5", "svc-2147483647"}) {
    book_.ReserveId(id);
  }
  EXPECT_EQ(book_.NextId(), "svc-2");
  book_.ReserveId("svc-6");
  book_.ReserveId("svc-4");  // lower than one already reserved: no step back
  EXPECT_EQ(book_.NextId(), "svc-7");
}

TEST_F(ReplicaBookTest, CheckRoomRefusesAtMaxReplicasNamingTheField) {
  EXPECT_TRUE(book_.CheckRoom(100, 0));  // 0 = no limit
  EXPECT_TRUE(book_.CheckRoom(1, 2));
  Status full = book_.CheckRoom(2, 2);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(full.error().field, "max_replicas");
  EXPECT_EQ(full.error().message,
            "too many replicas: service 'svc' already has 2 (max_replicas 2)");
}

// Each command against each phase: the guard's outcome and, on refusal, its message.
TEST_F(ReplicaBookTest, CommandGuardsAllowOnlyTheirPhase) {
  struct Case {
    ReplicaPhase phase;
    bool place_ok, drain_ok, resume_ok;
    const char* drain_refusal;
    const char* resume_refusal;
  };
  const Case cases[] = {
      {ReplicaPhase::kPending, true, false, false,
       "replica 'svc-0' is pending; only ready replicas drain",
       "replica 'svc-0' is pending, not draining"},
      {ReplicaPhase::kStarting, false, false, false,
       "replica 'svc-0' is starting; only ready replicas drain",
       "replica 'svc-0' is starting, not draining"},
      {ReplicaPhase::kReady, false, true, false, "", "replica 'svc-0' is ready, not draining"},
      {ReplicaPhase::kDraining, false, false, true,
       "replica 'svc-0' is draining; only ready replicas drain", ""},
  };
  for (const Case& c : cases) {
    const std::string name(scale::ReplicaPhaseName(c.phase));
    SCOPED_TRACE(name);
    ReplicaBook<TestReplica> book(TestConfig());
    TestReplica r;
    r.id = book.NextId();
    r.phase = c.phase;
    book.Add(r);

    Result<TestReplica*> place = book.GetPending("svc-0", Seconds{1});
    EXPECT_EQ(place.has_value(), c.place_ok);
    if (!c.place_ok) {
      EXPECT_EQ(place.error().code, ErrorCode::kFailedPrecondition);
      EXPECT_EQ(place.error().message, "replica 'svc-0' is " + name + ", not pending");
    }
    Status drain = book.Drain("svc-0", Seconds{2});
    EXPECT_EQ(drain.has_value(), c.drain_ok);
    if (!c.drain_ok) {
      EXPECT_EQ(drain.error().code, ErrorCode::kFailedPrecondition);
      EXPECT_EQ(drain.error().message, c.drain_refusal);
    }
    // Resume on a fresh copy so that a successful Drain above does not change the case.
    ReplicaBook<TestReplica> fresh(TestConfig());
    fresh.Add(r);
    Status resume = fresh.Resume("svc-0", Seconds{3});
    EXPECT_EQ(resume.has_value(), c.resume_ok);
    if (!c.resume_ok) {
      EXPECT_EQ(resume.error().code, ErrorCode::kFailedPrecondition);
      EXPECT_EQ(resume.error().message, c.resume_refusal);
    }
  }
}

TEST_F(ReplicaBookTest, UnknownAndStoppingReplicasAreNotFound) {
  AddIn(ReplicaPhase::kReady);
  ASSERT_TRUE(book_.BeginStop("svc-0", Seconds{1}));
  for (const char* id : {"svc-0", "nope"}) {
    SCOPED_TRACE(id);
    const std::string message = fmt::format("no replica '{}'", id);
    const std::vector<Error> errors = {
        ErrorOf(book_.Drain(id, Seconds{2})), ErrorOf(book_.Resume(id, Seconds{2})),
        ErrorOf(book_.GetPending(id, Seconds{2})), ErrorOf(book_.BeginStop(id, Seconds{2})),
        ErrorOf(book_.ReportOutstanding(id, 1))};
    for (const Error& e : errors) {
      EXPECT_EQ(e.code, ErrorCode::kNotFound);
      EXPECT_EQ(e.message, message);
      EXPECT_EQ(e.field, "id");
    }
  }
}

TEST_F(ReplicaBookTest, DrainAndResumeMovePhaseAndItsStartTime) {
  TestReplica& r = AddIn(ReplicaPhase::kReady, Seconds{5});
  ASSERT_TRUE(book_.Drain("svc-0", Seconds{10}));
  EXPECT_EQ(r.phase, ReplicaPhase::kDraining);
  EXPECT_EQ(r.phase_since, Seconds{10});
  EXPECT_EQ(r.drain_started, Seconds{10});
  ASSERT_TRUE(book_.Resume("svc-0", Seconds{12}));
  EXPECT_EQ(r.phase, ReplicaPhase::kReady);
  EXPECT_EQ(r.phase_since, Seconds{12});
  // SetPhase to the phase a replica is already in keeps its start time.
  ReplicaBookBase::SetPhase(r, ReplicaPhase::kReady, Seconds{20});
  EXPECT_EQ(r.phase_since, Seconds{12});
}

TEST_F(ReplicaBookTest, DrainingReplicaWithoutReportCountsAsBusyForTheGrace) {
  AddIn(ReplicaPhase::kReady);
  ASSERT_TRUE(book_.ReportOutstanding("svc-0", 4));
  EXPECT_EQ(book_.ListReplicas()[0].outstanding_requests, 4);
  // Drain forgets the report taken while the replica was still routed to.
  ASSERT_TRUE(book_.Drain("svc-0", Seconds{100}));
  EXPECT_EQ(book_.ListReplicas()[0].outstanding_requests, 1);
  book_.Touch(Seconds{129.9});
  EXPECT_EQ(book_.ListReplicas()[0].outstanding_requests, 1);
  book_.Touch(Seconds{130});  // drain_grace (30 s) over
  EXPECT_EQ(book_.ListReplicas()[0].outstanding_requests, 0);
  book_.Touch(Seconds{50});  // time never goes back
  EXPECT_EQ(book_.ListReplicas()[0].outstanding_requests, 0);
}

TEST_F(ReplicaBookTest, ReportAfterDrainWinsOverTheGrace) {
  AddIn(ReplicaPhase::kReady);
  ASSERT_TRUE(book_.Drain("svc-0", Seconds{0}));
  ASSERT_TRUE(book_.ReportOutstanding("svc-0", 0));
  EXPECT_EQ(book_.ListReplicas()[0].outstanding_requests, 0);  // inside the grace
  ASSERT_TRUE(book_.ReportOutstanding("svc-0", 2));
  book_.Touch(Seconds{1000});
  EXPECT_EQ(book_.ListReplicas()[0].outstanding_requests, 2);  // after it
  ASSERT_TRUE(book_.ReportOutstanding("svc-0", -3));
  EXPECT_EQ(book_.ListReplicas()[0].outstanding_requests, 0);
}

TEST_F(ReplicaBookTest, RestartBackoffDoublesUpToTheCapAndEmitsEachRetry) {
  TestReplica& r = AddIn(ReplicaPhase::kReady);
  const double expected_delays[] = {1, 2, 4, 5, 5};
  Seconds now{100};
  for (double expected : expected_delays) {
    const Seconds delay = book_.ScheduleRestart(r, now, "exited 1", "restarting");
    EXPECT_EQ(delay, Seconds{expected});
    EXPECT_EQ(r.restart_at, now + Seconds{expected});
    now += Seconds{10};
  }
  EXPECT_EQ(r.restarts, 5);
  EXPECT_EQ(r.crash_streak, 5);
  EXPECT_EQ(r.phase, ReplicaPhase::kStarting);
  EXPECT_EQ(r.phase_since, Seconds{100});  // starting since the first failure
  EXPECT_EQ(r.last_error, "exited 1");
  const std::vector<OrchestratorEvent> events = book_.TakeEvents();
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].kind, events::EventKind::kReplicaRestartScheduled);
  EXPECT_EQ(events[0].replica, "svc-0");
  EXPECT_EQ(events[0].at, Seconds{100});
  EXPECT_EQ(events[0].message, "exited 1; restarting in 1 s (failure 1 in a row)");
  EXPECT_EQ(events[3].message, "exited 1; restarting in 5 s (failure 4 in a row)");
  // A stable run resets the streak (the adapter does that): the doubling starts over.
  r.crash_streak = 0;
  EXPECT_EQ(book_.ScheduleRestart(r, now, "again", "resubmitting"), Seconds{1});
  EXPECT_EQ(book_.TakeEvents()[0].message, "again; resubmitting in 1 s (failure 1 in a row)");
}

TEST_F(ReplicaBookTest, EventsComeOutOldestFirstAndOnlyOnce) {
  book_.Emit(Seconds{1}, "svc-0", events::EventKind::kReplicaStarted, "a");
  book_.Emit(Seconds{2}, "", events::EventKind::kEngineUnavailable, "b");
  const std::vector<OrchestratorEvent> events = book_.TakeEvents();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].message, "a");
  EXPECT_EQ(events[1].kind, events::EventKind::kEngineUnavailable);
  EXPECT_EQ(events[1].replica, "");
  EXPECT_TRUE(book_.TakeEvents().empty());
}

TEST_F(ReplicaBookTest, StoppingReplicaLeavesTheListButStaysInTheRecords) {
  AddIn(ReplicaPhase::kReady);
  AddIn(ReplicaPhase::kPending);
  AddIn(ReplicaPhase::kStarting);
  Result<TestReplica*> stopped = book_.BeginStop("svc-1", Seconds{1});
  ASSERT_TRUE(stopped);
  EXPECT_TRUE((*stopped)->stopping);
  EXPECT_EQ(book_.Find("svc-1"), nullptr);
  EXPECT_EQ(book_.ActiveCount(), 2);
  ASSERT_EQ(book_.ListReplicas().size(), 2u);
  EXPECT_EQ(book_.ListReplicas()[1].id, "svc-2");
  ASSERT_EQ(book_.records().size(), 3u);
  book_.Remove(**stopped);
  ASSERT_EQ(book_.records().size(), 2u);
  EXPECT_EQ(book_.records()[1].id, "svc-2");
}

TEST_F(ReplicaBookTest, RetainIfDropsRecordsInOrder) {
  for (int i = 0; i < 5; ++i) AddIn(ReplicaPhase::kReady).handle = i;
  std::vector<int> visited;
  book_.RetainIf([&](TestReplica& r) {
    visited.push_back(r.handle);
    return r.handle % 2 == 0;
  });
  EXPECT_EQ(visited, (std::vector<int>{0, 1, 2, 3, 4}));
  std::vector<std::string> ids;
  for (const TestReplica& r : book_.records()) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"svc-0", "svc-2", "svc-4"}));
}

TEST_F(ReplicaBookTest, InfoShowsStateAndRunTimeOnlyWhileRunning) {
  TestReplica& r = AddIn(ReplicaPhase::kStarting, Seconds{3});
  r.port = 8001;
  r.started_at = Seconds{10};
  r.restarts = 2;
  r.last_error = "boom";
  ReplicaInfo running = book_.InfoOf(r, Seconds{25}, /*running=*/true, /*backoff=*/false);
  EXPECT_EQ(running.state, ReplicaState::kStarting);
  EXPECT_EQ(running.port, 8001);
  EXPECT_EQ(running.uptime, Seconds{15});
  EXPECT_EQ(running.restarts, 2);
  EXPECT_EQ(running.last_error, "boom");
  ReplicaInfo waiting = book_.InfoOf(r, Seconds{25}, /*running=*/false, /*backoff=*/true);
  EXPECT_EQ(waiting.state, ReplicaState::kRestarting);
  EXPECT_EQ(waiting.port, 0);
  EXPECT_EQ(waiting.uptime, Seconds{0});
  r.stopping = true;
  EXPECT_EQ(book_.InfoOf(r, Seconds{25}, true, true).state, ReplicaState::kStopping);
}

TEST(ReplicaReadyTest, AnAdoptedReplicaIsTimedFromItsAdoptionNotItsProcessStart) {
  TestReplica fresh;
  fresh.started_at = Seconds{100};
  fresh.phase_since = Seconds{100};
  EXPECT_EQ(StartingSince(fresh), Seconds{100});
  EXPECT_EQ(ReadyMessage(fresh, Seconds{102.5}, "port 8001"), "ready after 2.5 s on port 8001");
  // Adopted by a daemon restarted at 459 s: the process has run since 100 s.
  TestReplica adopted = fresh;
  adopted.adopted = true;
  adopted.phase_since = Seconds{459};
  EXPECT_EQ(StartingSince(adopted), Seconds{459}) << "its startup timeout starts now";
  EXPECT_EQ(ReadyMessage(adopted, Seconds{459.25}, "port 8001"),
            "ready again 0.25 s after adoption on port 8001 (process up 359 s)");
  // Restarted later (a crash): a new process, timed from its own start again.
  adopted.started_at = Seconds{600};
  adopted.phase_since = Seconds{600};
  EXPECT_EQ(ReadyMessage(adopted, Seconds{601}, "port 8001"), "ready after 1 s on port 8001");
}

TEST_F(ReplicaBookTest, RecordRoundTripsTheSharedFieldsAndMarksAdoption) {
  TestReplica& r = AddIn(ReplicaPhase::kReady, Seconds{7});
  r.port = 9000;
  r.argv = {"serve", "--port", "9000"};
  r.log_path = "/tmp/x.log";
  r.restarts = 3;
  r.started_at = Seconds{6};
  const ReplicaRecord record = ReplicaBookBase::RecordOf(r);
  EXPECT_EQ(record.phase, ReplicaPhase::kReady);
  EXPECT_EQ(record.phase_since, Seconds{7});
  EXPECT_FALSE(record.stopping);
  TestReplica restored;
  ReplicaBookBase::Restore(restored, record);
  EXPECT_EQ(restored.id, "svc-0");
  EXPECT_TRUE(restored.adopted);
  EXPECT_EQ(restored.port, 9000);
  EXPECT_EQ(restored.argv, r.argv);
  EXPECT_EQ(restored.log_path, "/tmp/x.log");
  EXPECT_EQ(restored.restarts, 3);
  EXPECT_EQ(restored.started_at, Seconds{6});
  EXPECT_EQ(restored.phase, ReplicaPhase::kPending);  // the adapter decides the phase
}

}  // namespace
}  // namespace gpuscale::orch
