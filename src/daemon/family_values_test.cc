#include "daemon/family_values.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscale::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

constexpr std::array<std::pair<std::string_view, std::string_view>, 1> kTestAliases = {{
    {"new_name", "old_name"},
}};

metrics::Exposition ParseFamilies(const std::string& text) {
  auto exposition = metrics::ParsePrometheusText(text);
  EXPECT_TRUE(exposition) << exposition.error().ToString() << "\n" << text;
  return exposition ? *exposition : metrics::Exposition{};
}

// Name -> value of every valued entry.
std::map<std::string, double> ValuesOf(const ReplicaFamilyValues& values,
                                       const FamilySlots& slots) {
  std::map<std::string, double> out;
  for (const ReplicaFamilyValues::Entry& e : values.entries()) {
    if (e.valued) out[slots.name(e.slot)] = e.value;
  }
  return out;
}

TEST(FamilySlotsTest, InternsEachNameOnceAndCompactsKeepingOrder) {
  FamilySlots slots;
  EXPECT_EQ(slots.Intern("a"), 0u);
  EXPECT_EQ(slots.Intern("b"), 1u);
  EXPECT_EQ(slots.Intern("a"), 0u);
  EXPECT_EQ(slots.Intern("c"), 2u);
  EXPECT_EQ(slots.Find("b"), 1u);
  EXPECT_EQ(slots.Find("d"), FamilySlots::kNone);
  const std::vector<uint32_t> remap = slots.Compact({true, false, true});
  EXPECT_THAT(remap, ElementsAre(0u, FamilySlots::kNone, 1u));
  EXPECT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots.name(1), "c");
  EXPECT_EQ(slots.Find("b"), FamilySlots::kNone);
}

TEST(ReplicaFamilyValuesTest, SumsLabelSetsAndKeepsHistogramsDeclaredWithoutValue) {
  FamilySlots slots;
  ReplicaFamilyValues values;
  values.Update(ParseFamilies("# TYPE g gauge\n"
                              "g{a=\"1\"} 2\n"
                              "g{a=\"2\"} 3\n"
                              "# TYPE h histogram\n"
                              "h_bucket{le=\"+Inf\"} 1\n"
                              "h_sum 1\n"
                              "h_count 1\n"
                              "# TYPE empty gauge\n"),
                slots, kTestAliases);
  EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("g", 5)));
  EXPECT_TRUE(values.declared(slots.Find("h")));
  EXPECT_TRUE(values.declared(slots.Find("empty")));
  EXPECT_FALSE(values.declared(slots.Find("missing")));
}

TEST(ReplicaFamilyValuesTest, SameLayoutUpdatesValuesAndAChangedOneRebuilds) {
  FamilySlots slots;
  ReplicaFamilyValues values;
  values.Update(ParseFamilies("a 1\nb 2\n"), slots, kTestAliases);
  values.Update(ParseFamilies("a 10\nb 20\n"), slots, kTestAliases);
  EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("a", 10), Pair("b", 20)));
  values.Update(ParseFamilies("b 7\nc 8\n"), slots, kTestAliases);
  EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("b", 7), Pair("c", 8)));
  EXPECT_FALSE(values.declared(slots.Find("a")));
  // A family that lost its samples is declared, not valued.
  values.Update(ParseFamilies("# TYPE b gauge\nc 9\n"), slots, kTestAliases);
  EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("c", 9)));
  EXPECT_TRUE(values.declared(slots.Find("b")));
}

TEST(ReplicaFamilyValuesTest, FamilySplitByAnotherAddsUpScrapeAfterScrape) {
  FamilySlots slots;
  ReplicaFamilyValues values;
  for (int scrape = 1; scrape <= 2; ++scrape) {
    values.Update(ParseFamilies("# TYPE a gauge\na{x=\"1\"} 1\n"
                                "# TYPE b gauge\nb 5\n"
                                "a{x=\"2\"} " +
                                std::to_string(scrape) + "\n"),
                  slots, kTestAliases);
    EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("a", 1 + scrape), Pair("b", 5)));
  }
}

TEST(ReplicaFamilyValuesTest, FillsAnAliasFromTheNameExportedOnly) {
  FamilySlots slots;
  ReplicaFamilyValues values;
  values.Update(ParseFamilies("old_name 0.5\n"), slots, kTestAliases);
  EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("new_name", 0.5), Pair("old_name", 0.5)));
  EXPECT_FALSE(values.declared(slots.Find("new_name")));
  values.Update(ParseFamilies("old_name 0.25\n"), slots, kTestAliases);  // by position
  EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("new_name", 0.25), Pair("old_name", 0.25)));
  values.Update(ParseFamilies("new_name 0.75\nold_name 0.1\n"), slots, kTestAliases);
  EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("new_name", 0.75), Pair("old_name", 0.1)));
}

TEST(ReplicaFamilyValuesTest, MoreFamiliesThanFitInlineSpillAndComeBack) {
  FamilySlots slots;
  ReplicaFamilyValues values;
  std::string many;
  for (int i = 0; i < 20; ++i) many += "f" + std::to_string(i) + " " + std::to_string(i) + "\n";
  values.Update(ParseFamilies(many), slots, kTestAliases);
  values.Update(ParseFamilies(many), slots, kTestAliases);
  EXPECT_EQ(values.entries().size(), 20u);
  EXPECT_EQ(ValuesOf(values, slots).at("f19"), 19);
  values.Update(ParseFamilies("f3 30\n"), slots, kTestAliases);
  EXPECT_THAT(ValuesOf(values, slots), ElementsAre(Pair("f3", 30)));
}

TEST(ReplicaFamilyValuesTest, RemapFollowsCompactedSlots) {
  FamilySlots slots;
  ReplicaFamilyValues gone, kept;
  gone.Update(ParseFamilies("x 1\n"), slots, kTestAliases);
  kept.Update(ParseFamilies("y 2\nold_name 3\n"), slots, kTestAliases);
  gone.Update(ParseFamilies("y 4\n"), slots, kTestAliases);  // x is used by no replica now
  std::vector<bool> used(slots.size(), false);
  gone.MarkUsed(used);
  kept.MarkUsed(used);
  const std::vector<uint32_t> remap = slots.Compact(used);
  gone.Remap(remap);
  kept.Remap(remap);
  EXPECT_EQ(slots.Find("x"), FamilySlots::kNone);
  EXPECT_THAT(ValuesOf(kept, slots),
              ElementsAre(Pair("new_name", 3), Pair("old_name", 3), Pair("y", 2)));
  kept.Update(ParseFamilies("y 5\nold_name 6\n"), slots, kTestAliases);  // by position
  EXPECT_THAT(ValuesOf(kept, slots),
              ElementsAre(Pair("new_name", 6), Pair("old_name", 6), Pair("y", 5)));
  EXPECT_THAT(ValuesOf(gone, slots), ElementsAre(Pair("y", 4)));
}

}  // namespace
}  // namespace gpuscale::daemon
