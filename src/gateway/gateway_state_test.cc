#include "gateway/gateway_state.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "metrics/metric_lookup.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::gateway {
namespace {

GatewayConfig Config() {
  GatewayConfig c;
  c.picker.slow_start_seconds = 0;
  c.queue_size = 2;
  c.eject_after_failures = 2;
  return c;
}

ServiceRoute Chat(std::vector<std::string> replicas) {
  ServiceRoute s{"chat", {"llama", "llama-8b"}, {}};
  for (const std::string& id : replicas) s.replicas.push_back({id, "127.0.0.1", 9000});
  return s;
}

TEST(GatewayStateTest, ModelsResolveToTheirService) {
  GatewayState state(Config());
  state.Publish({Chat({"r1"}), ServiceRoute{"embed", {"bge"}, {}}});
  EXPECT_EQ(state.ServiceOf("llama-8b"), "chat");
  EXPECT_EQ(state.ServiceOf("bge"), "embed");
  EXPECT_FALSE(state.ServiceOf("gpt-4").has_value());
  auto models = state.Models();
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].first, "bge");
}

TEST(GatewayStateTest, InFlightIsExactAndSpreadsLeastOutstanding) {
  GatewayState state(Config());
  state.Publish({Chat({"r1", "r2"})});
  auto a = state.Acquire("chat", std::nullopt);
  auto b = state.Acquire("chat", std::nullopt);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->replica, b->replica);
  EXPECT_EQ(state.InFlight("r1"), 1);
  EXPECT_EQ(state.InFlight("r2"), 1);
  state.Release(*a, AttemptOutcome::kOk);
  EXPECT_EQ(state.InFlight(a->replica), 0);
  // A draining replica is no longer published: nothing new goes to it, its count stays.
  state.Publish({Chat({a->replica})});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(state.Acquire("chat", std::nullopt)->replica, a->replica);
  EXPECT_EQ(state.InFlight(b->replica), 1);
}

// A disaggregated service: prefill and decode replicas are picked from their own pool, each
// counted in flight, and both show in the service's view and the metrics.
TEST(GatewayStateTest, DisaggregatedServicePicksFromEachPoolApart) {
  GatewayState state(Config());
  ServiceRoute route = Chat({"d1", "d2"});
  route.disaggregated = true;
  route.prefill_replicas = {{"p1", "127.0.0.1", 9001}};
  state.Publish({route});
  EXPECT_TRUE(state.Disaggregated("chat"));
  auto prefill = state.Acquire("chat", std::nullopt, {}, RoutePool::kPrefill);
  auto decode = state.Acquire("chat", std::nullopt);
  ASSERT_TRUE(prefill && decode);
  EXPECT_EQ(prefill->replica, "p1");
  EXPECT_EQ(decode->replica, "d1");
  EXPECT_FALSE(state.Acquire("chat", std::nullopt, {"p1"}, RoutePool::kPrefill).has_value());
  EXPECT_EQ(state.InFlight("p1"), 1);
  EXPECT_EQ(state.StatsOf("chat")->in_flight, 2);
  EXPECT_NE(state.MetricsText().find("replica=\"p1\""), std::string::npos);
  state.Release(*prefill, AttemptOutcome::kOk);
  state.Release(*decode, AttemptOutcome::kOk);
  EXPECT_EQ(state.StatsOf("chat")->in_flight, 0);
}

TEST(GatewayStateTest, AggregatedRoutesIgnoreThePrefillPool) {
  GatewayState state(Config());
  ServiceRoute route = Chat({"r1"});
  route.prefill_replicas = {{"p1", "127.0.0.1", 9001}};  // not disaggregated: unused
  state.Publish({route});
  EXPECT_FALSE(state.Disaggregated("chat"));
  EXPECT_FALSE(state.Acquire("chat", std::nullopt, {}, RoutePool::kPrefill).has_value());
  EXPECT_EQ(state.Acquire("chat", std::nullopt)->replica, "r1");
}

TEST(GatewayStateTest, RepeatedTransportFailuresEjectAReplica) {
  GatewayState state(Config());
  state.Publish({Chat({"bad", "good"})});
  Ticket bad{"chat", "bad", "127.0.0.1", 9000, nullptr};
  state.Acquire("chat", std::nullopt, {"good"});  // counted in flight, then failed twice
  state.Release(bad, AttemptOutcome::kTransportFailure);
  state.Acquire("chat", std::nullopt, {"good"});
  state.Release(bad, AttemptOutcome::kTransportFailure);
  for (int i = 0; i < 4; ++i) {
    auto t = state.Acquire("chat", std::nullopt);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->replica, "good");
  }
  EXPECT_FALSE(state.Acquire("chat", std::nullopt, {"good"}).has_value());
}

TEST(GatewayStateTest, FailedProbesInARowTakeAReplicaOutAndAPassBringsItBack) {
  GatewayConfig config = Config();
  config.health_check_failures = 2;
  GatewayState state(config);
  state.Publish({Chat({"r1", "r2"})});
  std::vector<std::pair<std::string, bool>> said;
  state.SetProbeListener([&said](const std::string& r, bool down) { said.emplace_back(r, down); });
  auto before = state.Acquire("chat", std::nullopt, {"r2"});  // a relay in flight on r1
  ASSERT_TRUE(before && before->down);
  state.ReportProbe("r1", false);
  EXPECT_FALSE(state.Down("r1")) << "one failure is not enough";
  state.ReportProbe("r1", true);  // a pass resets the count
  state.ReportProbe("r1", false);
  EXPECT_FALSE(state.Down("r1"));
  state.ReportProbe("r1", false);
  EXPECT_TRUE(state.Down("r1"));
  EXPECT_TRUE(before->down->load()) << "the relay in flight on r1 is told";
  state.ReportProbe("r1", false);  // still down: said once
  EXPECT_EQ(said, (std::vector<std::pair<std::string, bool>>{{"r1", true}}));
  for (int i = 0; i < 4; ++i) {
    auto t = state.Acquire("chat", std::nullopt);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->replica, "r2");
    state.Release(*t, AttemptOutcome::kOk);
  }
  // Its only service's queue is woken when it comes back.
  state.Publish({Chat({"r1"})});
  bool woken = false;
  ASSERT_TRUE(state.EnterQueue("chat", 1, [&woken] { woken = true; }));
  state.ReportProbe("r1", true);
  EXPECT_FALSE(state.Down("r1"));
  EXPECT_TRUE(woken);
  EXPECT_EQ(said.back(), (std::pair<std::string, bool>{"r1", false}));
  EXPECT_EQ(state.Acquire("chat", std::nullopt)->replica, "r1");
}

// The daemon unpublishes a replica its own probe fails and publishes it again once it
// answers: the gateway's record of it stays down meanwhile, so it takes requests only after
// a check of the gateway's own passes, and the listener hears it is back.
TEST(GatewayStateTest, AReplicaGivenUpStaysDownWhileUnpublishedUntilACheckPasses) {
  GatewayConfig config = Config();
  config.health_check_failures = 1;
  GatewayState state(config);
  std::vector<std::pair<std::string, bool>> said;
  state.SetProbeListener([&said](const std::string& r, bool down) { said.emplace_back(r, down); });
  state.Publish({Chat({"r1", "r2"})});
  state.ReportProbe("r1", false);
  state.Publish({Chat({"r2"})});
  state.Publish({Chat({"r1", "r2"})});
  EXPECT_TRUE(state.Down("r1"));
  EXPECT_FALSE(state.Acquire("chat", std::nullopt, {"r2"}).has_value());
  state.ReportProbe("r1", true);
  EXPECT_EQ(said, (std::vector<std::pair<std::string, bool>>{{"r1", true}, {"r1", false}}));
  EXPECT_EQ(state.Acquire("chat", std::nullopt, {"r2"})->replica, "r1");
}

// A replica that left the route table (a hung one the daemon stopped publishing) still
// shows the requests stuck on it.
TEST(GatewayStateTest, InFlightRequestsStayVisibleAfterTheirReplicaLeavesTheTable) {
  GatewayState state(Config());
  state.Publish({Chat({"r1", "r2"})});
  auto stuck = state.Acquire("chat", std::nullopt, {"r2"});
  ASSERT_TRUE(stuck.has_value());
  state.Publish({Chat({"r2"})});
  const std::string text = state.MetricsText();
  EXPECT_NE(
      text.find("gpuscale_gateway_replica_in_flight_requests{service=\"chat\",replica=\"r1\"} 1"),
      std::string::npos)
      << text;
  state.Release(*stuck, AttemptOutcome::kAbandoned);
  // Released, r1 leaves no series behind (else every replica ever routed to would stay in
  // /metrics); r2, still in the table, shows 0.
  auto parsed = metrics::ParsePrometheusText(state.MetricsText());
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  constexpr std::string_view kInFlight = "gpuscale_gateway_replica_in_flight_requests";
  const std::vector<metrics::LabelMatcher> r1 = {{"replica", "r1"}}, r2 = {{"replica", "r2"}};
  Result<double> gone = metrics::FindValue(*parsed, kInFlight, r1);
  ASSERT_FALSE(gone.has_value()) << "r1 still shows " << *gone;
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
  Result<double> idle = metrics::FindValue(*parsed, kInFlight, r2);
  ASSERT_TRUE(idle.has_value()) << idle.error().ToString();
  EXPECT_EQ(*idle, 0);
}

TEST(GatewayStateTest, TheActivatorQueueIsBoundedAndWokenByAReadyReplica) {
  GatewayState state(Config());
  std::vector<std::string> demand;
  state.SetDemandListener([&](const std::string& s) { demand.push_back(s); });
  state.Publish({Chat({})});
  EXPECT_FALSE(state.Acquire("chat", std::nullopt).has_value());
  int woken = 0;
  EXPECT_TRUE(state.EnterQueue("chat", 1, [&] { ++woken; }));
  EXPECT_TRUE(state.EnterQueue("chat", 2, [&] { ++woken; }));
  EXPECT_FALSE(state.EnterQueue("chat", 3, [&] { ++woken; }));  // queue_size 2
  EXPECT_EQ(state.Queued("chat"), 2);
  EXPECT_EQ(demand, std::vector<std::string>{"chat"}) << "the first waiter of a queue only";
  state.Publish({Chat({})});  // still nothing ready: nobody woken, waiters kept
  EXPECT_EQ(woken, 0);
  EXPECT_EQ(state.Queued("chat"), 2);
  state.Publish({Chat({"r1"})});
  EXPECT_EQ(woken, 2);
  state.LeaveQueue("chat", 1);
  state.LeaveQueue("chat", 2);
  EXPECT_EQ(state.Queued("chat"), 0);
  EXPECT_TRUE(state.EnterQueue("chat", 4, [] {}));  // a new queue: demand again
  EXPECT_EQ(demand.size(), 2u);
  state.LeaveQueue("chat", 4);
}

TEST(GatewayStateTest, MetricsTextParsesAndCountsByServiceAndReplica) {
  GatewayState state(Config());
  state.Publish({Chat({"r1"})});
  auto t = state.Acquire("chat", std::nullopt);
  RequestMeasurement m;
  m.status = 200;
  m.replica = "r1";
  m.ttft_seconds = 0.2;
  m.tpot_seconds = 0.02;
  m.e2e_seconds = 1.5;
  state.Record("chat", m);
  RequestMeasurement failed;
  failed.status = 503;
  failed.error = "queue_timeout";
  state.Record("chat", failed);
  const std::string text = state.MetricsText();
  auto parsed = metrics::ParsePrometheusText(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString() << "\n" << text;
  EXPECT_NE(text.find("gpuscale_gateway_requests_total{service=\"chat\",code=\"2xx\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpuscale_gateway_errors_total{service=\"chat\",reason=\"queue_timeout\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("gpuscale_gateway_replica_in_flight_requests{service=\"chat\",replica=\"r1\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("gpuscale_gateway_time_to_first_token_seconds_count{service=\"chat\"} 1"),
            std::string::npos);
  auto view = state.StatsOf("chat");
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->requests, 2);
  EXPECT_EQ(view->errors, 1);
  EXPECT_EQ(view->requests_by_replica.at("r1"), 1);
  EXPECT_FALSE(state.StatsOf("nowhere").has_value()) << "not in the route table";
}

// A service without requests yet reads as zeros with the histograms' bounds: the daemon's
// first sample is then a true baseline, and the first requests count in windowed rates.
TEST(GatewayStateTest, AServiceWithoutRequestsHasAZeroView) {
  GatewayState state(GatewayConfig{});
  state.Publish({{"chat", {"llama"}, {}}});
  const std::optional<ServiceStatsView> view = state.StatsOf("chat");
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->requests, 0);
  ASSERT_FALSE(view->ttft.upper_bounds.empty());
  EXPECT_EQ(view->ttft.upper_bounds.size(), view->ttft.cumulative_counts.size());
  EXPECT_EQ(view->ttft.cumulative_counts.back(), 0);
  EXPECT_EQ(view->e2e.upper_bounds.front(), kGatewayE2eBucketsSeconds.front());
}

}  // namespace
}  // namespace gpuscale::gateway

namespace gpuscale::gateway {
namespace {

GatewayConfig Saturating() {
  GatewayConfig c = Config();
  c.queue_size = 10;
  c.admission.max_in_flight_per_replica = 1;
  return c;
}

WaitRequest Wait(uint64_t id, route::Priority p, std::string tenant, double tokens = 100) {
  return {.id = id, .priority = p, .tenant = std::move(tenant), .tokens = tokens};
}

// Past max_in_flight_per_replica a request waits; each freed slot goes to the next one in
// priority order, then fair share across tenants, as a grant its waiter takes.
TEST(GatewayStateTest, ASaturatedServiceGrantsFreedReplicasByPriorityThenTenant) {
  using enum route::Priority;
  GatewayState state(Saturating());
  state.Publish({Chat({"r1"})});
  std::optional<Ticket> running = state.Admit("chat", std::nullopt, RoutePool::kServe, 100);
  ASSERT_TRUE(running.has_value());
  EXPECT_FALSE(state.Admit("chat", std::nullopt, RoutePool::kServe, 100).has_value());
  std::vector<uint64_t> woken;
  for (const WaitRequest& w :
       {Wait(1, kSheddable, "a"), Wait(2, kStandard, "a"), Wait(3, kStandard, "a"),
        Wait(4, kCritical, "a"), Wait(5, kStandard, "b")}) {
    const uint64_t id = w.id;
    ASSERT_EQ(state.EnterQueue("chat", w, [&woken, id] { woken.push_back(id); }).verdict,
              route::AdmissionVerdict::kQueued);
  }
  EXPECT_EQ(state.Queued("chat"), 5);
  std::vector<uint64_t> served;
  for (int i = 0; i < 5; ++i) {
    state.Release(*running, AttemptOutcome::kOk);
    ASSERT_EQ(woken.size(), static_cast<size_t>(i + 1));
    EXPECT_EQ(state.InFlight("r1"), 1) << "the freed slot is handed over at once";
    running = state.TakeGrant("chat", woken.back());
    ASSERT_TRUE(running.has_value());
    EXPECT_EQ(running->tokens, 100);
    served.push_back(woken.back());
  }
  EXPECT_EQ(served, (std::vector<uint64_t>{4, 2, 5, 3, 1}));
  EXPECT_EQ(state.Queued("chat"), 0);
  state.Release(*running, AttemptOutcome::kOk);
  EXPECT_EQ(state.InFlight("r1"), 0);
}

// admission.critical_reserved_per_replica: the last slots of a replica go to critical
// requests only, so one arriving behind waiting standard requests is granted at once.
TEST(GatewayStateTest, ACriticalRequestTakesTheSlotReservedForItWhileStandardOnesWait) {
  using enum route::Priority;
  GatewayConfig config = Saturating();
  config.admission.max_in_flight_per_replica = 2;
  config.admission.critical_reserved_per_replica = 1;
  GatewayState state(config);
  state.Publish({Chat({"r1"})});
  std::optional<Ticket> standard = state.Admit("chat", std::nullopt, RoutePool::kServe, 100);
  ASSERT_TRUE(standard.has_value());
  EXPECT_FALSE(state.Admit("chat", std::nullopt, RoutePool::kServe, 100, kSheddable))
      << "the second slot is critical's";
  ASSERT_EQ(state.EnterQueue("chat", Wait(1, kStandard, "a"), [] {}).verdict,
            route::AdmissionVerdict::kQueued);
  EXPECT_FALSE(state.TakeGrant("chat", 1).has_value());
  // A critical newcomer queues behind nobody of its priority and takes the reserved slot.
  ASSERT_EQ(state.EnterQueue("chat", Wait(2, kCritical, "a"), [] {}).verdict,
            route::AdmissionVerdict::kQueued);
  std::optional<Ticket> critical = state.TakeGrant("chat", 2);
  ASSERT_TRUE(critical.has_value());
  EXPECT_EQ(critical->priority, kCritical) << "a retry asks for the same slots";
  EXPECT_EQ(state.InFlight("r1"), 2);
  // The critical request's end frees only a reserved slot: the standard one still waits.
  state.Release(*critical, AttemptOutcome::kOk);
  EXPECT_FALSE(state.TakeGrant("chat", 1).has_value());
  state.Release(*standard, AttemptOutcome::kOk);
  std::optional<Ticket> next = state.TakeGrant("chat", 1);
  ASSERT_TRUE(next.has_value());
  // With the queue empty a critical arrival is admitted on the spot, a standard one is not.
  EXPECT_FALSE(state.Admit("chat", std::nullopt, RoutePool::kServe, 100, kStandard));
  std::optional<Ticket> direct =
      state.Admit("chat", std::nullopt, RoutePool::kServe, 100, kCritical);
  ASSERT_TRUE(direct.has_value());
  state.Release(*direct, AttemptOutcome::kOk);
  state.Release(*next, AttemptOutcome::kOk);
  EXPECT_EQ(state.InFlight("r1"), 0);
}

TEST(GatewayStateTest, AGrantWhoseRequestLeftGoesToTheNext) {
  GatewayState state(Saturating());
  state.Publish({Chat({"r1"})});
  std::optional<Ticket> running = state.Admit("chat", std::nullopt, RoutePool::kServe, 100);
  ASSERT_TRUE(running.has_value());
  int woken2 = 0;
  ASSERT_TRUE(state.EnterQueue("chat", 1, [] {}));
  ASSERT_TRUE(state.EnterQueue("chat", 2, [&woken2] { ++woken2; }));
  EXPECT_FALSE(state.TakeGrant("chat", 1).has_value()) << "nothing free yet";
  state.Release(*running, AttemptOutcome::kOk);  // granted to 1, which has left meanwhile
  state.LeaveQueue("chat", 1);
  EXPECT_EQ(woken2, 1);
  EXPECT_EQ(state.InFlight("r1"), 1);
  std::optional<Ticket> next = state.TakeGrant("chat", 2);
  ASSERT_TRUE(next.has_value());
  state.Release(*next, AttemptOutcome::kOk);
  EXPECT_EQ(state.InFlight("r1"), 0);
}

TEST(GatewayStateTest, ASheddableRequestExpectedToWaitPastItsBudgetIsRefused) {
  using enum route::Priority;
  GatewayState state(Saturating());
  state.Publish({Chat({"r1"})});
  // One completion of 1000 tokens: 1000 tokens/s (a busy period's first second).
  std::optional<Ticket> done = state.Admit("chat", std::nullopt, RoutePool::kServe, 1000);
  ASSERT_TRUE(done.has_value());
  state.Release(*done, AttemptOutcome::kOk);
  std::optional<Ticket> running = state.Admit("chat", std::nullopt, RoutePool::kServe, 1000);
  ASSERT_TRUE(running.has_value());
  ASSERT_EQ(state.EnterQueue("chat", Wait(1, kCritical, "a", 3000), [] {}).verdict,
            route::AdmissionVerdict::kQueued);
  WaitRequest shed = Wait(2, kSheddable, "b");
  shed.max_wait_seconds = 2;
  const route::Admission refused = state.EnterQueue("chat", shed, [] {});
  EXPECT_EQ(refused.verdict, route::AdmissionVerdict::kShed);
  EXPECT_GT(refused.expected_wait_seconds, 2);
  EXPECT_EQ(state.Queued("chat"), 1);
  shed.max_wait_seconds = 10;
  EXPECT_EQ(state.EnterQueue("chat", shed, [] {}).verdict, route::AdmissionVerdict::kQueued);
  state.LeaveQueue("chat", 1);
  state.LeaveQueue("chat", 2);
  state.Release(*running, AttemptOutcome::kOk);
}

TEST(GatewayStateTest, QueueLengthsByPriorityAreOnMetrics) {
  using enum route::Priority;
  GatewayState state(Saturating());
  state.Publish({Chat({})});
  for (const WaitRequest& w :
       {Wait(1, kCritical, "a"), Wait(2, kSheddable, "a"), Wait(3, kSheddable, "b")}) {
    ASSERT_EQ(state.EnterQueue("chat", w, [] {}).verdict, route::AdmissionVerdict::kQueued);
  }
  auto parsed = metrics::ParsePrometheusText(state.MetricsText());
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  constexpr std::string_view kFamily = "gpuscale_gateway_queue_requests";
  for (const auto& [priority, n] :
       {std::pair{"critical", 1}, std::pair{"standard", 0}, std::pair{"sheddable", 2}}) {
    Result<double> v = metrics::FindValue(
        *parsed, kFamily,
        std::vector<metrics::LabelMatcher>{{"service", "chat"}, {"priority", priority}});
    ASSERT_TRUE(v.has_value()) << priority << ": " << v.error().ToString();
    EXPECT_EQ(*v, n) << priority;
  }
  for (uint64_t id = 1; id <= 3; ++id) state.LeaveQueue("chat", id);
}

}  // namespace
}  // namespace gpuscale::gateway
