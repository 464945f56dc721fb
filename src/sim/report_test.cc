#include "sim/report.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gpuscale::sim {
namespace {

CompareEntry Entry(std::string name, double attainment, double gpu_hours) {
  CompareEntry e;
  e.name = std::move(name);
  e.report.attainment = attainment;
  e.report.gpu_hours = gpu_hours;
  return e;
}

References WithStaticFleet(int replicas, double gpu_hours, bool meets) {
  References refs;
  refs.slo_target = 0.99;
  refs.static_fleet = StaticFleet{replicas, meets ? 0.995 : 0.97, gpu_hours, meets};
  return refs;
}

TEST(CompareVerdictTest, NamesTheCheapestConfigMeetingTheTargetAgainstTheStaticFleet) {
  struct Case {
    References refs;
    std::string want;
  };
  const std::vector<CompareEntry> entries = {Entry("hpa", 1.0, 22.3), Entry("keda", 0.78, 7.5),
                                             Entry("slo", 0.9995, 7.2), Entry("rules", 0.999, 7.8)};
  for (const Case& c : {
           Case{WithStaticFleet(8, 8.0, true),
                "cheapest config meeting the SLO target 0.9900: slo, 7.200 GPU-hours, 10 % under "
                "the static fleet of 8 replicas"},
           Case{WithStaticFleet(7, 6.0, true),
                "cheapest config meeting the SLO target 0.9900: slo, 7.200 GPU-hours, 20 % over "
                "the static fleet of 7 replicas (not autoscaling is cheaper here)"},
           Case{WithStaticFleet(7, 7.2, true),
                "cheapest config meeting the SLO target 0.9900: slo, 7.200 GPU-hours, the same as "
                "the static fleet of 7 replicas"},
           // A static fleet that misses the target is no alternative.
           Case{WithStaticFleet(32, 30.0, false),
                "cheapest config meeting the SLO target 0.9900: slo, 7.200 GPU-hours"},
       }) {
    EXPECT_EQ(CompareVerdict(entries, c.refs), c.want);
  }
}

TEST(CompareVerdictTest, SaysHowFarTheCheapestIsFromTheReactiveReference) {
  const std::vector<CompareEntry> entries = {Entry("hpa", 1.0, 22.3), Entry("slo", 0.9995, 7.2)};
  References refs = WithStaticFleet(8, 8.0, true);
  const std::string head =
      "cheapest config meeting the SLO target 0.9900: slo, 7.200 GPU-hours, 10 % under the static "
      "fleet of 8 replicas";
  struct Case {
    double gpu_hours;
    bool meets;
    std::string tail;
  };
  for (const Case& c : {Case{6.0, true, "; 20 % over the reactive reference"},
                        Case{8.0, true, "; 10 % under the reactive reference"},
                        Case{7.21, true, "; level with the reactive reference"},
                        Case{6.0, false, ""}}) {  // one missing the target is no yardstick
    refs.reactive_plan = ReactivePlan{};
    refs.reactive_plan->gpu_hours = c.gpu_hours;
    refs.reactive_plan->meets_target = c.meets;
    EXPECT_EQ(CompareVerdict(entries, refs), head + c.tail) << c.gpu_hours;
  }
  // With the static fleet level too, both clauses are said.
  refs = WithStaticFleet(7, 7.2, true);
  refs.reactive_plan = ReactivePlan{};
  refs.reactive_plan->gpu_hours = 6.0;
  refs.reactive_plan->meets_target = true;
  EXPECT_EQ(CompareVerdict(entries, refs),
            "cheapest config meeting the SLO target 0.9900: slo, 7.200 GPU-hours, the same as the "
            "static fleet of 7 replicas; 20 % over the reactive reference");
}

TEST(CompareVerdictTest, WithoutAConfigMeetingTheTargetNamesTheBestAttainment) {
  const std::vector<CompareEntry> entries = {Entry("keda", 0.59, 9.0), Entry("slo", 0.98, 13.0),
                                             Entry("rules", 0.94, 9.5)};
  EXPECT_EQ(CompareVerdict(entries, WithStaticFleet(13, 12.4, true)),
            "no config meets the SLO target 0.9900; the best attainment is slo's 0.9800; a "
            "static fleet of 13 replicas meets it at 12.400 GPU-hours");
  EXPECT_EQ(CompareVerdict(entries, WithStaticFleet(64, 60.0, false)),
            "no config meets the SLO target 0.9900; the best attainment is slo's 0.9800");
}

TEST(CompareVerdictTest, TheTableEndsWithTheVerdictOnlyWhenTheTargetIsKnown) {
  const std::vector<CompareEntry> entries = {Entry("slo", 0.9995, 7.2)};
  References refs = WithStaticFleet(8, 8.0, true);
  const std::string table = FormatCompareTable(entries, refs);
  EXPECT_NE(table.find("\nstatic fleet (8)"), std::string::npos) << table;
  EXPECT_NE(table.find("\n\ncheapest config meeting"), std::string::npos) << table;
  EXPECT_EQ(table.find("oracle (lower bound)"), std::string::npos) << table;  // not computed
  refs.slo_target = -1;
  EXPECT_EQ(FormatCompareTable(entries, refs).find("cheapest"), std::string::npos);
}

TEST(CompareVerdictTest, OneReplicaIsSingular) {
  const std::vector<CompareEntry> entries = {Entry("slo", 0.9995, 1.2)};
  EXPECT_EQ(CompareVerdict(entries, WithStaticFleet(1, 1.0, true)),
            "cheapest config meeting the SLO target 0.9900: slo, 1.200 GPU-hours, 20 % over the "
            "static fleet of 1 replica (not autoscaling is cheaper here)");
}

TEST(CompareTableTest, RatiosToTheOracleAreADashWithoutIt) {
  const std::vector<CompareEntry> entries = {Entry("slo", 0.9995, 7.2)};
  struct Case {
    double oracle_gpu_hours;
    std::string slo_row, fleet_row;
  };
  for (const Case& c : {Case{-1, "slo                        0.9995      7.200        -",
                             "static fleet (8)           0.9950      8.000        -"},
                        Case{6.0, "slo                        0.9995      7.200    1.200",
                             "static fleet (8)           0.9950      8.000    1.333"}}) {
    References refs = WithStaticFleet(8, 8.0, true);
    refs.oracle_gpu_hours = c.oracle_gpu_hours;
    const std::string table = FormatCompareTable(entries, refs);
    EXPECT_NE(table.find(c.slo_row), std::string::npos) << table;
    EXPECT_NE(table.find(c.fleet_row), std::string::npos) << table;
  }
}

// 2 GPU-hours per replica; 3 replicas are the smallest fleet meeting 0.99.
References WithReportFrontier() {
  References refs = WithStaticFleet(3, 6.0, true);
  StaticFrontier f;
  f.points = {{2, 0.95, 4, false}, {3, 0.995, 6, true}, {4, 1.0, 8, true}};
  f.smallest = {3, 0.995, 6, true};
  refs.static_frontier = f;
  return refs;
}

TEST(FrontierReportTest, ARunSaysWhichStaticFleetDominatesItAndItsCostOverTheStaticFleet) {
  SimReport beaten;
  beaten.attainment = 0.99;
  beaten.gpu_hours = 7.5;
  const std::string table = FormatReportTable(beaten, WithReportFrontier());
  EXPECT_NE(table.find("static_frontier      2: 0.9500 at 4.000, 3: 0.9950 at 6.000, 4: 1.0000 at "
                       "8.000 (replicas: attainment at GPU-hours)\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("dominated_by         3 replicas: attainment 0.9950 at 6.000 GPU-hours, "
                       "against this run's 0.9900 at 7.500\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("cost_vs_static       1.250 (7.500 / 6.000 GPU-hours of the static fleet "
                       "of 3 replicas)\n"),
            std::string::npos)
      << table;
  SimReport lean = beaten;
  lean.gpu_hours = 4.5;
  const std::string lean_table = FormatReportTable(lean, WithReportFrontier());
  EXPECT_NE(lean_table.find("dominated_by         none: "), std::string::npos) << lean_table;
  EXPECT_NE(lean_table.find("cost_vs_static       0.750 "), std::string::npos) << lean_table;
  // Without the frontier (--no-static-fleet), none of it.
  EXPECT_EQ(FormatReportTable(beaten, References{}).find("dominated_by"), std::string::npos);
}

TEST(VariantReportTest, APricedRunShowsItsCostPerVariant) {
  SimReport r;
  r.gpu_hours = 3;
  r.cost = 9;
  r.variants = {{"h100", "h100", false, 1, 2, 8, 3}, {"a100-spot", "a100", true, 0.7, 1, 1, 2}};
  const std::string table = FormatReportTable(r, References{});
  EXPECT_NE(table.find("cost                 9.00 (price x GPU-hours over the variants)\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("  h100               h100 capacity 1.00: 2.000 GPU-hours, cost 8.00, 3 "
                       "replicas placed\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("  a100-spot          a100 spot capacity 0.70: 1.000 GPU-hours, cost 1.00"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("preempted"), std::string::npos);
  r.preempted = 3;
  r.lost_to_preemption = 2;
  EXPECT_NE(FormatReportTable(r, References{})
                .find("preempted            3 spot replicas; 2 requests lost"),
            std::string::npos);
  // Unpriced (a single-shape service): GPU-hours only, as before.
  r.cost = 0;
  EXPECT_EQ(FormatReportTable(r, References{}).find("cost "), std::string::npos);
}

TEST(FrontierReportTest, TheCompareTableHasTheCostOverTheStaticFleetAndTheDominatingFleet) {
  const std::vector<CompareEntry> entries = {Entry("hpa", 0.99, 7.5), Entry("slo", 0.99, 4.5)};
  const std::string table = FormatCompareTable(entries, WithReportFrontier());
  EXPECT_NE(table.find(" peak  /static dominated_by\n"), std::string::npos) << table;
  EXPECT_NE(table.find(" 0    1.250   3 replicas\n"), std::string::npos) << table;
  EXPECT_NE(table.find(" 0    0.750            -\n"), std::string::npos) << table;
  EXPECT_NE(table.find("\nstatic frontier (replicas: attainment at GPU-hours): 2: 0.9500 at 4.000, "
                       "3: 0.9950 at 6.000, 4: 1.0000 at 8.000\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(FormatCompareTable(entries, WithStaticFleet(3, 6.0, true)).find("/static"),
            std::string::npos);
}

std::vector<TimelineRow> Ticks(const std::vector<std::pair<double, int>>& time_and_ready) {
  std::vector<TimelineRow> rows;
  for (const auto& [t, ready] : time_and_ready) {
    TimelineRow row;
    row.time_s = t;
    row.ready = ready;
    rows.push_back(row);
  }
  return rows;
}

// Hand-computed: each tick holds until the next; the last as long as the one before it.
TEST(CompareWithPlanTest, IntegratesReadyReplicasAgainstThePlanPerTick) {
  struct Case {
    const char* what;
    OraclePlan plan;
    std::vector<TimelineRow> timeline;
    PlanComparison want;
  };
  const OraclePlan plan{60, {4, 6}};
  for (const Case& c : {
           Case{"on the plan", plan, Ticks({{0, 4}, {30, 4}, {60, 6}, {90, 6}}),
                PlanComparison{5, 4, 6, 5, 0, 0}},
           // One replica over for 90 s, two under for 30 s.
           Case{"above and below", plan, Ticks({{0, 5}, {30, 5}, {60, 7}, {90, 4}}),
                PlanComparison{5, 4, 6, 5.25, 90.0 / 3600, 60.0 / 3600}},
           // Past the plan's last bucket: left out.
           Case{"ticks past the plan", plan, Ticks({{0, 4}, {60, 6}, {120, 30}}),
                PlanComparison{5, 4, 6, 5, 0, 0}},
           Case{"fractional plan", OraclePlan{60, {5.5}}, Ticks({{0, 5}, {30, 6}}),
                PlanComparison{5.5, 5.5, 5.5, 5.5, 15.0 / 3600, 15.0 / 3600}},
           Case{"no timeline", plan, {}, PlanComparison{}},
           Case{"no plan", OraclePlan{60, {}}, Ticks({{0, 4}}), PlanComparison{}},
       }) {
    const PlanComparison got = CompareWithPlan(c.plan, c.timeline);
    EXPECT_DOUBLE_EQ(got.plan_mean, c.want.plan_mean) << c.what;
    EXPECT_DOUBLE_EQ(got.plan_min, c.want.plan_min) << c.what;
    EXPECT_DOUBLE_EQ(got.plan_max, c.want.plan_max) << c.what;
    EXPECT_DOUBLE_EQ(got.run_mean, c.want.run_mean) << c.what;
    EXPECT_DOUBLE_EQ(got.replica_hours_above, c.want.replica_hours_above) << c.what;
    EXPECT_DOUBLE_EQ(got.replica_hours_below, c.want.replica_hours_below) << c.what;
  }
}

TimelineRow Tick(double t, double rate, int ready, int starting = 0, int draining = 0) {
  TimelineRow row;
  row.time_s = t;
  row.arrival_rate = rate;
  row.ready = ready;
  row.starting = starting;
  row.draining = draining;
  return row;
}

TEST(BucketTimelineTest, MeansPerBucketWithinThePointBudget) {
  // 0..100 s at 10-s ticks into at most 5 points: 21-s buckets.
  std::vector<TimelineRow> rows;
  for (int t = 0; t <= 100; t += 10) rows.push_back(Tick(t, t, 2, t == 50 ? 2 : 0, t == 60));
  const TimelineSeries s = BucketTimeline(rows, 5);
  EXPECT_EQ(s.bucket_s, 21);
  EXPECT_EQ(s.time_s, (std::vector<double>{0, 21, 42, 63, 84}));
  // Bucket [42, 63): ticks 50 (2 starting) and 60 (1 draining).
  EXPECT_EQ(s.arrival_rate, (std::vector<double>{10, 35, 55, 75, 95}));
  EXPECT_EQ(s.replicas, (std::vector<double>{2, 2, 3.5, 2, 2}));
  EXPECT_EQ(s.ready, (std::vector<double>{2, 2, 2, 2, 2}));
}

TEST(BucketTimelineTest, EdgeCases) {
  EXPECT_TRUE(BucketTimeline({}, 10).time_s.empty());
  EXPECT_TRUE(BucketTimeline({Tick(0, 1, 1)}, 0).time_s.empty());
  // Fewer ticks than points: 1-s buckets, one per tick; a gap leaves no bucket.
  const TimelineSeries s = BucketTimeline({Tick(0, 1, 1), Tick(1, 2, 1), Tick(5, 3, 4)}, 100);
  EXPECT_EQ(s.bucket_s, 1);
  EXPECT_EQ(s.time_s, (std::vector<double>{0, 1, 5}));
  EXPECT_EQ(s.replicas, (std::vector<double>{1, 1, 4}));
  // A last tick at an exact multiple stays within the budget.
  std::vector<TimelineRow> rows;
  for (int t = 0; t <= 1000; ++t) rows.push_back(Tick(t, 1, 1));
  EXPECT_LE(BucketTimeline(rows, 10).time_s.size(), 10u);
}

TEST(CompareWithPlanTest, ReportTableAndChartShowThePlan) {
  References refs;
  refs.oracle_gpu_hours = 0.1;
  refs.oracle_plan = OraclePlan{60, {4, 6}};
  const std::vector<TimelineRow> timeline = Ticks({{0, 5}, {30, 5}, {60, 7}, {90, 4}});
  SimReport report;
  report.gpu_hours = 0.2;
  EXPECT_NE(FormatReportTable(report, refs, timeline)
                .find("oracle_plan          4.0-6.0 ready replicas per 60 s (mean 5.00); this "
                      "run 5.25, 0.03 replica-hours above the plan, 0.02 below"),
            std::string::npos)
      << FormatReportTable(report, refs, timeline);
  EXPECT_EQ(FormatReportTable(report, refs).find("oracle_plan"), std::string::npos);

  CompareEntry entry = Entry("slo", 0.995, 0.2);
  entry.timeline = timeline;
  const std::string svg = RenderCompareSvg({entry}, refs);
  EXPECT_NE(svg.find("stroke-dasharray='4 3'"), std::string::npos) << svg;
  EXPECT_NE(svg.find("oracle plan (ready)"), std::string::npos);
  refs.oracle_plan.reset();
  EXPECT_EQ(RenderCompareSvg({entry}, refs).find("oracle plan"), std::string::npos);
}

TEST(SummarizeRequestsTest, CountsTheMissesOfRequestsRoutedToFreshReplicas) {
  const SloSpec slo{1.0, 0.05, 0.99};
  auto request = [](double ttft, bool fresh) {
    RequestRecord r;
    r.arrival_s = 10;
    r.first_token_s = 10 + ttft;
    r.finish_s = r.first_token_s + 0.5;
    r.output_tokens = 11;  // 50 ms per token after the first
    r.on_fresh_replica = fresh;
    return r;
  };
  std::vector<RequestRecord> requests = {request(0.2, false), request(3.0, true),
                                         request(0.2, true), request(2.0, false),
                                         request(4.0, true)};
  const SimReport r = SummarizeRequests(requests, slo, SimReport{});
  EXPECT_EQ(r.slo_met, 2);
  EXPECT_EQ(r.fresh_replica_misses, 2);  // the fresh replica's request within the SLO is no miss
  EXPECT_NE(FormatReportTable(r, References{})
                .find("fresh_replica_miss   2 of 3 misses (67 %) on replicas in their first 60 s "
                      "after a cold start"),
            std::string::npos)
      << FormatReportTable(r, References{});
  requests = {request(0.2, true)};
  EXPECT_EQ(FormatReportTable(SummarizeRequests(requests, slo, SimReport{}), References{})
                .find("fresh_replica_miss"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuscale::sim
