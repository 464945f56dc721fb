// The slo policy's `profile:` key: what it sets, what it refuses, where a relative path
// points, and the SLO it must agree with (config/policy_profile.h).
#include "config/policy_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "config/policy_config.h"
#include "config/sim_config.h"
#include "scale/slo_policy.h"
#include "testing/profile_test_data.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class PolicyProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("policy_profile_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    profile_ = (dir_ / "p.yaml").string();
    ASSERT_TRUE(testing_data::WriteProfileFile(profile_));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // A policy whose slo block is `slo_block` (line 4 is its first line).
  static Result<PolicySpec> ParseSlo(const std::string& slo_block) {
    auto root = yaml::ParseYaml("family: slo\nmax_replicas: 8\nslo:\n" + slo_block, "slo.yaml");
    if (!root) return Unexpected<Error>(root.error());
    return ParsePolicy(*root);
  }

  // A sim config whose policy names `profile` (on line 6) and whose slo is `slo` (line 2).
  static std::string SimConfig(const std::string& profile, const std::string& slo =
                                                               "{ttft_seconds: 1, tpot_seconds: "
                                                               "0.05, target_ratio: 0.99}") {
    return "service: {max_replicas: 4}\n"
           "slo: " +
           slo +
           "\n"
           "policy:\n"
           "  family: slo\n"
           "  slo:\n"
           "    profile: " +
           profile + "\n";
  }

  fs::path dir_;
  std::string profile_;
};

TEST_F(PolicyProfileTest, SetsTokenModeAndTargetFromTheProfile) {
  auto spec = ParseSlo("  profile: " + profile_ + "\n  burst_z: 1\n");
  ASSERT_TRUE(spec) << spec.error().ToString();
  const auto& policy = dynamic_cast<const scale::SloPolicy&>(*spec->policy);
  EXPECT_NEAR(policy.config().output_token_weight, 4, 1e-9);
  EXPECT_NEAR(policy.config().initial_capacity_tokens_per_second, 36000, 1e-6);
  EXPECT_DOUBLE_EQ(policy.config().target_attainment, 0.99);
  EXPECT_NEAR(policy.capacity(), 36000, 1e-6);
  EXPECT_DOUBLE_EQ(policy.config().burst_z, 1);  // the other fields as usual
  // Each mix's own capacity, for the mix being served (on the fit's line here: 36,000 each).
  ASSERT_EQ(policy.config().mix_capacities.size(), 2u);
  EXPECT_DOUBLE_EQ(policy.config().mix_capacities[1].prompt_tokens, 512);
  EXPECT_DOUBLE_EQ(policy.config().mix_capacities[1].output_tokens, 1024);
  EXPECT_NEAR(policy.config().mix_capacities[1].capacity_tokens_per_second, 36000, 1e-6);
}

TEST_F(PolicyProfileTest, RefusesWeightOrCapacityBesideTheProfile) {
  for (const char* key : {"output_token_weight: 4", "initial_capacity_tokens_per_second: 1"}) {
    auto spec = ParseSlo("  profile: " + profile_ + "\n  " + key + "\n");
    ASSERT_FALSE(spec) << key;
    const std::string field = std::string(key).substr(0, std::string(key).find(':'));
    EXPECT_THAT(spec.error().ToString(),
                HasSubstr("slo." + field +
                          ": is set beside slo.profile (line 4), whose fit "
                          "gives the weight and capacity together; remove one of them (line 5)"));
  }
}

TEST_F(PolicyProfileTest, TargetAttainmentMustBeTheProfilesTarget) {
  EXPECT_TRUE(ParseSlo("  profile: " + profile_ + "\n  target_attainment: 0.99\n"));
  auto spec = ParseSlo("  profile: " + profile_ + "\n  target_attainment: 0.95\n");
  ASSERT_FALSE(spec);
  EXPECT_THAT(spec.error().ToString(),
              HasSubstr("slo.target_attainment: is 0.95 but slo.profile (line 4) was measured "
                        "for a share 0.99 of requests within the SLO"));
}

TEST_F(PolicyProfileTest, MissingOrBrokenProfileNamesItsFieldAndBothLines) {
  auto missing = ParseSlo("  profile: " + (dir_ / "none.yaml").string() + "\n");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().field, "slo.profile");
  EXPECT_THAT(missing.error().message, HasSubstr("none.yaml' (named in line 4): cannot open"));

  profile::CapacityProfile broken = testing_data::SampleProfile();
  broken.mixes[1].capacity_rps = 0;
  const std::string path = (dir_ / "broken.yaml").string();
  ASSERT_TRUE(testing_data::WriteProfileFile(path, broken));
  auto spec = ParseSlo("  profile: " + path + "\n");
  ASSERT_FALSE(spec);
  EXPECT_THAT(spec.error().ToString(),
              HasSubstr("broken.yaml' (named in line 4): mixes[1].capacity_rps: expected a "
                        "positive number, got 0 (line "));
}

TEST_F(PolicyProfileTest, SimConfigFileResolvesARelativePathAgainstItsFolder) {
  const std::string config = Write("sim.yaml", SimConfig("p.yaml"));
  auto file = LoadSimConfigFile(config);
  ASSERT_TRUE(file) << file.error().ToString();
  // Rewritten once, absolute: every later parse (one per simulation) finds the same file.
  EXPECT_EQ(file->policy["slo"]["profile"].Scalar(),
            fs::absolute(profile_).lexically_normal().string());
  for (int run = 0; run < 2; ++run) {
    auto spec = MakeSimPolicy(*file);
    ASSERT_TRUE(spec) << spec.error().ToString();
    EXPECT_NEAR(dynamic_cast<const scale::SloPolicy&>(*spec->policy).capacity(), 36000, 1e-6);
  }
  // The same text parsed without a file resolves against the working directory.
  auto root = yaml::ParseYaml(SimConfig("p.yaml"), "sim.yaml");
  ASSERT_TRUE(root);
  auto parsed = ParseSimConfig(*root);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().field, "policy.slo.profile");
  EXPECT_THAT(parsed.error().message, HasSubstr("'p.yaml' (named in line 6): cannot open"));
}

TEST_F(PolicyProfileTest, ResolvedPathKeepsTheLineThatNamedIt) {
  profile::CapacityProfile broken = testing_data::SampleProfile();
  broken.output_token_weight = -1;
  ASSERT_TRUE(testing_data::WriteProfileFile((dir_ / "broken.yaml").string(), broken));
  auto file = LoadSimConfigFile(Write("sim.yaml", SimConfig("broken.yaml")));
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().field, "policy.slo.profile");
  EXPECT_THAT(file.error().message,
              HasSubstr((dir_ / "broken.yaml").string() +
                        "' (named in line 6): fit.output_token_weight: expected a number >= 0"));
}

TEST_F(PolicyProfileTest, SimConfigSloMustBeTheProfiles) {
  struct Case {
    std::string slo, asks;
  };
  for (const Case& c : {Case{"{ttft_seconds: 2, tpot_seconds: 0.05, target_ratio: 0.99}",
                             "asks TTFT <= 2 s, TPOT <= 0.05 s for a share 0.99 of requests"},
                        Case{"{ttft_seconds: 1, tpot_seconds: 0.05, target_ratio: 0.95}",
                             "asks TTFT <= 1 s, TPOT <= 0.05 s for a share 0.95 of requests"}}) {
    auto file = LoadSimConfigFile(Write("sim.yaml", SimConfig("p.yaml", c.slo)));
    ASSERT_FALSE(file) << c.slo;
    EXPECT_EQ(file.error().field, "policy.slo.profile");
    EXPECT_THAT(file.error().message,
                HasSubstr("the profile was measured at TTFT <= 1 s, TPOT <= 0.05 s for a share "
                          "0.99 of requests, but slo (line 2) " +
                          c.asks));
    EXPECT_THAT(file.error().message, HasSubstr("(line 6)"));
  }
}

TEST_F(PolicyProfileTest, PolicyFileResolvesARelativePathAgainstItsFolder) {
  const std::string path =
      Write("policy.yaml", "family: slo\nmax_replicas: 4\nslo: {profile: p.yaml}\n");
  auto spec = LoadPolicyFile(path);
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_NEAR(dynamic_cast<const scale::SloPolicy&>(*spec->policy).capacity(), 36000, 1e-6);
}

TEST(ResolveProfilePathTest, RewritesOnlyARelativeSloProfile) {
  auto root = yaml::ParseYaml("family: slo\nslo: {profile: ../profiles/p.yaml, burst_z: 1}\n",
                              "policy.yaml");
  ASSERT_TRUE(root);
  ResolveProfilePath(*root, "/etc/gpuscale/sim");
  EXPECT_EQ((*root)["slo"]["profile"].Scalar(), "/etc/gpuscale/profiles/p.yaml");
  EXPECT_EQ(yaml::LineOf((*root)["slo"]["profile"]), 2);
  ResolveProfilePath(*root, "/elsewhere");  // absolute now: left alone
  EXPECT_EQ((*root)["slo"]["profile"].Scalar(), "/etc/gpuscale/profiles/p.yaml");
  auto other = yaml::ParseYaml("family: target\ntarget: {metrics: []}\n", "policy.yaml");
  ASSERT_TRUE(other);
  ResolveProfilePath(*other, "/x");
  EXPECT_FALSE(std::as_const(*other)["slo"].IsDefined());  // no slo key added
}

}  // namespace
}  // namespace gpuscale::config
