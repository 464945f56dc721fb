#include "config/router_config.h"

#include <gtest/gtest.h>

#include <string>

#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using route::PickerKind;
using route::PickerSpec;

// A caller's defaults with a slow start (as a config may set it), so that the cases show
// which keys keep them.
const PickerSpec kGatewayDefaults{.slow_start_seconds = 30};

// `text` is a document whose top-level `router` key is read.
Result<PickerSpec> ParseRouterYaml(const std::string& text,
                                   const PickerSpec& defaults = kGatewayDefaults) {
  auto root = yaml::ParseYaml(text, "test");
  if (!root) return Unexpected<Error>(root.error());
  const YAML::Node& doc = *root;  // const: operator[] must not insert the key
  return ParseRouterConfig(doc["router"], "router", defaults);
}

struct AcceptedCase {
  const char* yaml;
  PickerSpec want;
};

class RouterConfigAcceptsTest : public ::testing::TestWithParam<AcceptedCase> {};

TEST_P(RouterConfigAcceptsTest, GivesTheSpec) {
  auto spec = ParseRouterYaml(GetParam().yaml);
  ASSERT_TRUE(spec) << GetParam().yaml << ": " << spec.error().ToString();
  EXPECT_EQ(*spec, GetParam().want) << GetParam().yaml;
}

INSTANTIATE_TEST_SUITE_P(
    Forms, RouterConfigAcceptsTest,
    ::testing::Values(
        // Absent or empty: the caller's defaults.
        AcceptedCase{"other: 1", kGatewayDefaults}, AcceptedCase{"router:", kGatewayDefaults},
        AcceptedCase{"router: {}", kGatewayDefaults},
        // A kind alone; round robin drops the default slow start it cannot use.
        AcceptedCase{"router: least_outstanding", kGatewayDefaults},
        AcceptedCase{"router: round_robin", PickerSpec{.kind = PickerKind::kRoundRobin}},
        AcceptedCase{"router: {kind: round_robin}", PickerSpec{.kind = PickerKind::kRoundRobin}},
        // The mapping, each key given.
        AcceptedCase{
            "router: {kind: least_outstanding, slow_start_seconds: 0,\n"
            "         prefix_affinity: true, affinity_load_factor: 2}",
            PickerSpec{
                .slow_start_seconds = 0, .prefix_affinity = true, .affinity_load_factor = 2}},
        AcceptedCase{"router: {slow_start_seconds: 12.5}", PickerSpec{.slow_start_seconds = 12.5}},
        AcceptedCase{"router: {affinity_load_factor: 100}",
                     PickerSpec{.slow_start_seconds = 30, .affinity_load_factor = 100}},
        AcceptedCase{"router: {kind: round_robin, slow_start_seconds: 0, prefix_affinity: false}",
                     PickerSpec{.kind = PickerKind::kRoundRobin}}));

struct RejectedCase {
  const char* yaml;
  const char* error;  // the whole Error::ToString()
};

class RouterConfigRejectsTest : public ::testing::TestWithParam<RejectedCase> {};

TEST_P(RouterConfigRejectsTest, NamesFieldAndLine) {
  auto spec = ParseRouterYaml(GetParam().yaml);
  ASSERT_FALSE(spec) << GetParam().yaml;
  EXPECT_EQ(spec.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(spec.error().ToString(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RouterConfigRejectsTest,
    ::testing::Values(
        RejectedCase{
            "router: random",
            "router: expected one of least_outstanding, round_robin, prefix_cache, got 'random' "
            "(line 1)"},
        RejectedCase{
            "router: [least_outstanding]",
            "router: expected one of least_outstanding, round_robin, prefix_cache, or a mapping "
            "{kind: ...} (line 1)"},
        RejectedCase{
            "router:\n  kind: random",
            "router.kind: expected one of least_outstanding, round_robin, prefix_cache, got "
            "'random' (line 2)"},
        RejectedCase{"router:\n  kind: [round_robin]", "router.kind: expected a string (line 2)"},
        RejectedCase{
            "router:\n  kind: least_outstanding\n  slowstart: 20",
            "router.slowstart: unknown field; accepted fields: kind, "
            "slow_start_seconds, prefix_affinity, affinity_load_factor, prefix_index (line 3)"},
        RejectedCase{"router:\n  slow_start_seconds: soon",
                     "router.slow_start_seconds: expected a number, got 'soon' (line 2)"},
        RejectedCase{"router:\n  slow_start_seconds: .nan",
                     "router.slow_start_seconds: expected a number, got '.nan' (line 2)"},
        RejectedCase{"router:\n  slow_start_seconds: -5",
                     "router.slow_start_seconds: expected a finite number of seconds >= 0, got "
                     "-5 (line 2)"},
        RejectedCase{"router: {slow_start_seconds: .inf}",
                     "router.slow_start_seconds: expected a finite number of seconds >= 0, got "
                     "inf (line 1)"},
        RejectedCase{"router:\n  kind: round_robin\n  slow_start_seconds: 20",
                     "router.slow_start_seconds: applies to least_outstanding only (line 3)"},
        RejectedCase{"router:\n  kind: round_robin\n  prefix_affinity: true",
                     "router.prefix_affinity: applies to least_outstanding only (line 3)"},
        RejectedCase{"router:\n  prefix_affinity: yes please",
                     "router.prefix_affinity: expected true or false (line 2)"},
        RejectedCase{"router:\n  affinity_load_factor: 1",
                     "router.affinity_load_factor: expected a factor in (1, 100], got 1 "
                     "(line 2)"},
        RejectedCase{"router:\n  affinity_load_factor: 1000",
                     "router.affinity_load_factor: expected a factor in (1, 100], got 1000 "
                     "(line 2)"}));

// The path names the caller's section.
TEST(RouterConfigTest, ErrorsNameTheCallersPath) {
  auto root = yaml::ParseYaml("gateway:\n  router: {kind: random}\n", "test");
  ASSERT_TRUE(root);
  const YAML::Node& doc = *root;
  auto spec = ParseRouterConfig(doc["gateway"]["router"], "gateway.router", {});
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().field, "gateway.router.kind");
}

}  // namespace
}  // namespace gpuscale::config
