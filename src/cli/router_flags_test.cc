#include "cli/router_flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/router_config.h"
#include "yaml/yaml_util.h"

namespace gpuscale::cli {
namespace {

// The flags as `gpuscale gateway` parses them.
Result<route::PickerSpec> SpecFromArgs(std::vector<std::string> args) {
  CLI::App app;
  RouterFlags flags;
  AddRouterFlags(&app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return PickerSpecFromFlags(flags, {.slow_start_seconds = 0});
}

TEST(RouterFlagsTest, MapOntoThePickerSpec) {
  auto defaults = SpecFromArgs({});
  ASSERT_TRUE(defaults) << defaults.error().ToString();
  EXPECT_EQ(*defaults, route::PickerSpec{});
  auto affinity = SpecFromArgs({"--prefix-affinity", "--affinity-load-factor", "2"});
  ASSERT_TRUE(affinity) << affinity.error().ToString();
  EXPECT_EQ(*affinity, (route::PickerSpec{.prefix_affinity = true, .affinity_load_factor = 2}));
  auto round_robin = SpecFromArgs({"--router", "round_robin"});
  ASSERT_TRUE(round_robin) << round_robin.error().ToString();
  EXPECT_EQ(*round_robin, route::PickerSpec{.kind = route::PickerKind::kRoundRobin});
}

struct SameCheckCase {
  std::vector<std::string> args;
  const char* flag;  // the field the flag error names
  const char* yaml;  // the same setting as a `router:` block
};

class RouterFlagsRejectTest : public ::testing::TestWithParam<SameCheckCase> {};

// A value the YAML block rejects is rejected by the flag with the same message, naming the
// flag instead of the key and line.
TEST_P(RouterFlagsRejectTest, AsTheYamlBlockDoesInTheSameWords) {
  auto from_flags = SpecFromArgs(GetParam().args);
  ASSERT_FALSE(from_flags) << GetParam().flag;
  EXPECT_EQ(from_flags.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(from_flags.error().field, GetParam().flag);

  auto root = yaml::ParseYaml(GetParam().yaml, "test");
  ASSERT_TRUE(root);
  const YAML::Node& doc = *root;
  auto from_yaml = config::ParseRouterConfig(doc["router"], "router", {});
  ASSERT_FALSE(from_yaml) << GetParam().yaml;
  EXPECT_EQ(from_yaml.error().message, from_flags.error().message + " (line 1)");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RouterFlagsRejectTest,
    ::testing::Values(SameCheckCase{{"--router", "random"}, "--router", "router: {kind: random}"},
                      SameCheckCase{{"--router", "round_robin", "--prefix-affinity"},
                                    "--prefix-affinity",
                                    "router: {kind: round_robin, prefix_affinity: true}"},
                      SameCheckCase{{"--prefix-affinity", "--affinity-load-factor", "0.5"},
                                    "--affinity-load-factor",
                                    "router: {prefix_affinity: true, affinity_load_factor: 0.5}"},
                      SameCheckCase{{"--affinity-load-factor", "101"},
                                    "--affinity-load-factor",
                                    "router: {affinity_load_factor: 101}"}));

}  // namespace
}  // namespace gpuscale::cli
