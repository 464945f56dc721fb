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

}  // namespace
}  // namespace gpuscale::sim
