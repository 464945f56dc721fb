// The engine with a door (SimulationConfig::admission): the gateway's admission queue decides
// who waits, who goes first and who is shed when the offered load is twice what the fleet
// serves.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sim/simulation.h"
#include "testing/fake_orchestrator.h"
#include "testing/fake_replica_model.h"

namespace gpuscale::sim {
namespace {

using testing::AffineCosts;
using testing::AffineReplicaModel;
using testing::ScriptedPolicy;

// `rate` requests/s for `seconds`; request i is critical when i % 10 < critical_in_10,
// else sheddable; its tenant is 1 + i % 13 / 10 (tenant 1 sends 10 of every 13, tenant
// 2..4 one each) when `tenants`, else none.
Trace OverloadTrace(double rate, double seconds, int critical_in_10, bool tenants) {
  Trace t;
  if (tenants) t.tenants = {"", "hot", "a", "b", "c"};
  const int n = static_cast<int>(rate * seconds);
  for (int i = 0; i < n; ++i) {
    TraceRequest r{i / rate, 200, 50};
    r.priority = i % 10 < critical_in_10 ? route::Priority::kCritical : route::Priority::kSheddable;
    if (tenants) r.tenant = i % 13 < 10 ? 1 : static_cast<uint32_t>(i % 13 - 8);
    t.requests.push_back(r);
  }
  return t;
}

// One replica of at most 8 sequences (the door's limit too): about 18 of these requests/s.
SimReport RunDoor(const Trace& trace, std::optional<route::AdmissionConfig> admission) {
  AffineReplicaModel model(AffineCosts{.max_batch_size = 8});
  SimulationConfig c;
  c.cluster = {1, 8, "H100", 81559};
  c.service.min_replicas = 1;
  c.service.max_replicas = 1;
  c.admission = admission;
  auto policy = std::make_unique<ScriptedPolicy>(1, 1);
  auto result = RunSimulation(c, model, std::move(policy), trace);
  EXPECT_TRUE(result) << result.error().ToString();
  return result ? result->report : SimReport{};
}

const ClassReport* Find(const std::vector<ClassReport>& classes, const std::string& name) {
  auto it = std::find_if(classes.begin(), classes.end(),
                         [&](const ClassReport& c) { return c.name == name; });
  return it == classes.end() ? nullptr : &*it;
}

route::AdmissionConfig Door() {
  route::AdmissionConfig door;
  door.max_in_flight_per_replica = 8;
  door.sheddable_max_wait = Seconds{0.5};
  return door;
}

// About twice what one replica serves under the limit of 8 in flight.
constexpr double kOverloadRate = 36;

TEST(EngineAdmissionTest, CriticalRequestsKeepTheirSloWhileSheddableOnesAreShed) {
  const Trace trace = OverloadTrace(kOverloadRate, 60, 3, false);
  const SimReport r = RunDoor(trace, Door());
  ASSERT_EQ(r.priorities.size(), 2u);
  const ClassReport* critical = Find(r.priorities, "critical");
  const ClassReport* sheddable = Find(r.priorities, "sheddable");
  ASSERT_NE(critical, nullptr);
  ASSERT_NE(sheddable, nullptr);
  EXPECT_EQ(critical->requests, 648);
  EXPECT_GE(critical->attainment, 0.99);
  EXPECT_EQ(critical->shed + critical->unfinished + critical->aborted, 0);
  // Overload falls on the sheddable ones: shed (429), none left waiting.
  EXPECT_GT(sheddable->shed, sheddable->requests / 4);
  EXPECT_EQ(sheddable->unfinished, 0);
  EXPECT_EQ(r.shed, sheddable->shed);
  EXPECT_EQ(r.completed + r.shed, r.requests);
  // Without the door every class waits in the replica's queue and the critical ones miss.
  const SimReport fifo = RunDoor(trace, std::nullopt);
  EXPECT_TRUE(fifo.priorities.empty());
  EXPECT_EQ(fifo.shed, 0);
  EXPECT_LT(fifo.attainment, 0.6);
}

// Long requests (1,000 output tokens, ~7.6 s on a replica of 8) at `rate` requests/s for
// 120 s: every tenth critical, the rest standard, which is never shed.
Trace LongStandardTrace(double rate) {
  Trace t;
  const int n = static_cast<int>(rate * 120);
  for (int i = 0; i < n; ++i) {
    TraceRequest r{i / rate, 200, 1000};
    r.priority = i % 10 == 0 ? route::Priority::kCritical : route::Priority::kStandard;
    t.requests.push_back(r);
  }
  return t;
}

TEST(EngineAdmissionTest, AReservedSlotTakesACriticalRequestAtOnceWhileStandardOnesWait) {
  // About twice the ~1 request/s the replica's 8 slots serve: standard requests always
  // wait at the door, so without a reserve a critical one, first in line, still waits for
  // the next slot to free (~1 s apart) and misses its 1 s TTFT about half the time.
  const Trace trace = LongStandardTrace(2);
  route::AdmissionConfig door = Door();
  const SimReport shared = RunDoor(trace, door);
  door.critical_reserved_per_replica = 2;
  const SimReport reserved = RunDoor(trace, door);
  for (const SimReport* r : {&shared, &reserved}) {
    ASSERT_EQ(r->priorities.size(), 2u);
  }
  const ClassReport& critical_shared = *Find(shared.priorities, "critical");
  const ClassReport& critical = *Find(reserved.priorities, "critical");
  const ClassReport& standard = *Find(reserved.priorities, "standard");
  EXPECT_EQ(critical.requests, 24);
  EXPECT_EQ(critical_shared.shed + critical_shared.unfinished + critical_shared.aborted, 0);
  EXPECT_LT(critical_shared.attainment, 0.8);
  // Reserved: every critical request finds a slot on arrival and meets its SLO.
  EXPECT_EQ(critical.slo_met, critical.requests);
  EXPECT_EQ(critical.shed + critical.unfinished + critical.aborted, 0);
  // The others keep the rest of the replica and are all served once the arrivals stop.
  EXPECT_EQ(standard.requests, 216);
  EXPECT_EQ(standard.completed, standard.requests);
}

// Served tokens of tenant `name` over all tenants'.
double ShareOf(const SimReport& r, const std::string& name) {
  int64_t served = 0;
  for (const ClassReport& c : r.tenants) served += c.served_tokens;
  const ClassReport* one = Find(r.tenants, name);
  return one != nullptr && served > 0
             ? static_cast<double>(one->served_tokens) / static_cast<double>(served)
             : -1;
}

TEST(EngineAdmissionTest, TenantsUnderTheirFairShareGetAllTheyAskWhileAHotOneIsShed) {
  // Each other tenant asks 2/13 of the capacity, under a quarter: max-min fairness serves
  // them whole and leaves the hot tenant the rest.
  const Trace trace = OverloadTrace(kOverloadRate, 60, 0, true);
  const SimReport r = RunDoor(trace, Door());
  ASSERT_EQ(r.tenants.size(), 4u);  // "" has no requests
  const ClassReport* hot = Find(r.tenants, "hot");
  ASSERT_NE(hot, nullptr);
  for (const char* other : {"a", "b", "c"}) {
    const ClassReport* c = Find(r.tenants, other);
    ASSERT_NE(c, nullptr);
    EXPECT_LE(c->shed, c->requests / 20) << other;
    EXPECT_GT(hot->shed, hot->requests / 3) << other;
  }
  // One tenant for all: the door sheds in arrival order, the others' requests as the hot's.
  Trace one = trace;
  one.tenants = {"", "all"};
  for (TraceRequest& q : one.requests) q.tenant = 1;
  const SimReport shared = RunDoor(one, Door());
  ASSERT_EQ(shared.tenants.size(), 1u);
  EXPECT_GT(shared.shed, trace.requests.size() / 4);
}

TEST(EngineAdmissionTest, AHotTenantGetsNoMoreThanItsFairShareWhileOthersWait) {
  // At 4x the capacity each other tenant asks 4/13 of it, over a quarter: all four wait,
  // and each gets a quarter, the hot one too.
  const Trace trace = OverloadTrace(4 * kOverloadRate / 2, 60, 0, true);
  const SimReport r = RunDoor(trace, Door());
  ASSERT_EQ(r.tenants.size(), 4u);
  EXPECT_LT(ShareOf(r, "hot"), 0.3);
  for (const char* other : {"a", "b", "c"}) EXPECT_GT(ShareOf(r, other), 0.2) << other;
}

// ClassReport::contended_completed: the requests sent to a replica while another tenant's
// request of the same priority waited, the window in which fair share is owed.
TEST(EngineAdmissionTest, OnlyRequestsSentWhileAnotherTenantWaitedCountAsContended) {
  // One tenant: its requests wait (some long enough to be shed), never behind another's.
  const SimReport alone = RunDoor(OverloadTrace(2 * kOverloadRate, 30, 3, false), Door());
  ASSERT_EQ(alone.priorities.size(), 2u);
  EXPECT_GT(alone.shed, 0);
  for (const ClassReport& c : alone.priorities) EXPECT_EQ(c.contended_completed, 0) << c.name;
  // Four tenants at 4x: all wait, and the hot one gets a quarter of what is served while
  // the others wait.
  const SimReport shared = RunDoor(OverloadTrace(4 * kOverloadRate / 2, 60, 0, true), Door());
  ASSERT_EQ(shared.priority_tenants.size(), 4u);
  int64_t contended = 0;
  for (const ClassReport& c : shared.priority_tenants) {
    EXPECT_LE(c.contended_completed, c.completed) << c.name;
    EXPECT_GT(c.contended_completed, 0) << c.name;
    contended += c.contended_completed;
  }
  const ClassReport* hot = Find(shared.priority_tenants, "sheddable/hot");
  ASSERT_NE(hot, nullptr);
  EXPECT_LT(static_cast<double>(hot->contended_completed), 0.3 * static_cast<double>(contended));
}

TEST(EngineAdmissionTest, EachTenantIsCountedWithinEachPriority) {
  // 3 in 10 critical: each tenant has rows in both priorities, and they add up to its own.
  const SimReport r = RunDoor(OverloadTrace(2 * kOverloadRate, 30, 3, true), Door());
  ASSERT_EQ(r.priority_tenants.size(), 8u);  // 2 priorities x 4 tenants with requests
  EXPECT_EQ(r.priority_tenants.front().name, "critical/hot");
  for (const ClassReport& tenant : r.tenants) {
    const ClassReport* critical = Find(r.priority_tenants, "critical/" + tenant.name);
    const ClassReport* sheddable = Find(r.priority_tenants, "sheddable/" + tenant.name);
    ASSERT_NE(critical, nullptr) << tenant.name;
    ASSERT_NE(sheddable, nullptr) << tenant.name;
    EXPECT_EQ(critical->requests + sheddable->requests, tenant.requests) << tenant.name;
    EXPECT_EQ(critical->shed, 0) << tenant.name;
    EXPECT_EQ(critical->served_tokens + sheddable->served_tokens, tenant.served_tokens)
        << tenant.name;
  }
}

}  // namespace
}  // namespace gpuscale::sim
