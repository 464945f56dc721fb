// The disagg policy's `profile:` key: a role profile of the pool's role fills its capacities
// (config/policy_parsers_disagg.cc), in a policy file, a simulation's pools, and with the
// SLO checks of config/policy_profile.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/policy_config.h"
#include "config/sim_config.h"
#include "scale/disagg_policy.h"
#include "sim/replica_model.h"
#include "testing/profile_test_data.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class DisaggProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("disagg_profile_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    using profile::ProfileRole;
    ASSERT_TRUE(testing_data::WriteProfileFile(
        Path("prefill.yaml"), testing_data::SampleRoleProfile(ProfileRole::kPrefill)));
    ASSERT_TRUE(testing_data::WriteProfileFile(
        Path("decode.yaml"), testing_data::SampleRoleProfile(ProfileRole::kDecode)));
    ASSERT_TRUE(testing_data::WriteProfileFile(Path("aggregated.yaml")));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // A policy whose disagg block is `block` (line 4 is its first line).
  static Result<PolicySpec> ParseDisagg(const std::string& block) {
    auto root = yaml::ParseYaml("family: disagg\nmax_replicas: 8\ndisagg:\n" + block, "p.yaml");
    if (!root) return Unexpected<Error>(root.error());
    return ParsePolicy(*root);
  }

  // A disaggregated sim config (slo on line 3) whose pools name `prefill` and `decode`.
  std::string SimConfig(const std::string& prefill, const std::string& decode,
                        const std::string& slo) const {
    const std::string text =
        "cluster: {nodes: 1, gpus_per_node: 8}\n"
        "service: {name: s, model: llama-3-8b}\n"
        "slo: " +
        slo +
        "\n"
        "disaggregated:\n"
        "  gpu_budget: 8\n"
        "  prefill:\n"
        "    max_replicas: 4\n"
        "    policy: {family: disagg, disagg: {role: prefill, profile: " +
        prefill +
        "}}\n"
        "  decode:\n"
        "    max_replicas: 4\n"
        "    policy: {family: disagg, disagg: {role: decode, profile: " +
        decode + "}}\n";
    const std::string path = Path("sim.yaml");
    std::ofstream(path) << text;
    return path;
  }

  fs::path dir_;
};

constexpr char kDefaultSlo[] = "{ttft_seconds: 1, tpot_seconds: 0.05, target_ratio: 0.99}";

TEST_F(DisaggProfileTest, RoleProfileGivesEachMixsCapacityAndTheTarget) {
  struct RoleProfileRow {
    std::string role;
    double first_prompt, first_output, first_capacity;
  };
  for (const RoleProfileRow& row :
       {RoleProfileRow{"prefill", 512, 1, 20000}, RoleProfileRow{"decode", 1024, 64, 6000}}) {
    auto spec = ParseDisagg("  role: " + row.role + "\n  profile: " + Path(row.role + ".yaml") +
                            "\n  burst_z: 1\n");
    ASSERT_TRUE(spec) << spec.error().ToString();
    const auto& policy = dynamic_cast<const scale::DisaggPolicy&>(*spec->policy);
    const scale::DisaggPolicyConfig& c = policy.config();
    ASSERT_EQ(c.mix_capacities.size(), 2u) << row.role;
    EXPECT_DOUBLE_EQ(c.mix_capacities[0].prompt_tokens, row.first_prompt);
    EXPECT_DOUBLE_EQ(c.mix_capacities[0].output_tokens, row.first_output);
    EXPECT_DOUBLE_EQ(c.mix_capacities[0].capacity_tokens_per_second, row.first_capacity);
    EXPECT_DOUBLE_EQ(c.capacity_tokens_per_second, row.first_capacity);
    EXPECT_DOUBLE_EQ(policy.capacity(), row.first_capacity);
    EXPECT_DOUBLE_EQ(c.target_attainment, 0.99);
    EXPECT_DOUBLE_EQ(c.burst_z, 1);  // the other fields as usual
  }
}

TEST_F(DisaggProfileTest, ErrorsNameTheFieldLineAndWhatToRun) {
  struct DisaggProfileCase {
    std::string block, want;
  };
  const DisaggProfileCase cases[] = {
      {"  role: prefill\n  profile: " + Path("aggregated.yaml") + "\n",
       "disagg.profile: names an aggregated replica's profile (no role:), whose capacity counts "
       "prefill and decode together; the prefill pool needs a prefill role profile: gpuscale "
       "profile --role prefill (docs/profiles.md) (line 5)"},
      {"  role: decode\n  profile: " + Path("prefill.yaml") + "\n",
       "disagg.profile: names a prefill role profile, but this policy sizes the decode pool; "
       "name the profile made with gpuscale profile --role decode (line 5)"},
      {"  role: prefill\n  profile: " + Path("prefill.yaml") +
           "\n  capacity_tokens_per_second: 9000\n",
       "disagg.capacity_tokens_per_second: is set beside disagg.profile (line 5), whose mixes "
       "give the capacities; remove one of them (line 6)"},
      {"  role: prefill\n  profile: " + Path("prefill.yaml") + "\n  target_attainment: 0.9\n",
       "disagg.target_attainment: is 0.9 but disagg.profile (line 5) was measured for a share "
       "0.99 of requests"},
      {"  role: prefill\n  profile: " + Path("none.yaml") + "\n",
       "none.yaml' (named in line 5): cannot open"},
      {"  role: prefill\n",
       "disagg.capacity_tokens_per_second: must be > 0 (a load test's figure for one replica of "
       "this role), or name the role profile instead: profile: FILE"},
  };
  for (const DisaggProfileCase& c : cases) {
    auto spec = ParseDisagg(c.block);
    ASSERT_FALSE(spec) << c.block;
    EXPECT_EQ(spec.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(spec.error().ToString(), HasSubstr(c.want));
  }
}

TEST_F(DisaggProfileTest, SloPolicyRefusesARoleProfile) {
  auto root = yaml::ParseYaml(
      "family: slo\nmax_replicas: 2\nslo:\n  profile: " + Path("decode.yaml") + "\n", "p.yaml");
  ASSERT_TRUE(root);
  auto spec = ParsePolicy(*root);
  ASSERT_FALSE(spec);
  EXPECT_THAT(spec.error().ToString(),
              HasSubstr("slo.profile: names a decode role profile (one pool's replica of a "
                        "disaggregated service), which the disagg policy reads"));
}

// Relative paths resolve against the config's folder, and each pool's policy is built from
// its profile, not from the replica model.
TEST_F(DisaggProfileTest, SimPoolsReadTheirRoleProfilesBesideTheConfig) {
  auto file = LoadSimConfigFile(SimConfig("prefill.yaml", "decode.yaml", kDefaultSlo));
  ASSERT_TRUE(file) << file.error().ToString();
  EXPECT_EQ(file->prefill_policy["disagg"]["profile"].Scalar(),
            fs::absolute(Path("prefill.yaml")).lexically_normal().string());
  auto model = sim::MakeReplicaModel(file->sim.model);
  ASSERT_TRUE(model);
  auto prefill = MakeDisaggPoolPolicy(*file, scale::PoolRole::kPrefill, **model);
  ASSERT_TRUE(prefill) << prefill.error().ToString();
  EXPECT_DOUBLE_EQ(dynamic_cast<scale::DisaggPolicy&>(*prefill->policy).capacity(), 20000);
  auto decode = MakeDisaggPoolPolicy(*file, scale::PoolRole::kDecode, **model);
  ASSERT_TRUE(decode) << decode.error().ToString();
  EXPECT_DOUBLE_EQ(dynamic_cast<scale::DisaggPolicy&>(*decode->policy).capacity(), 6000);
}

// A role profile answers to its role's target: prefill to TTFT, decode to TPOT (and both to
// the target ratio); another target of the service's SLO may differ.
TEST_F(DisaggProfileTest, SimSloMustMatchEachRolesTarget) {
  struct RoleSloCase {
    std::string slo, field, want;  // want empty: parses
  };
  const RoleSloCase cases[] = {
      {"{ttft_seconds: 2, tpot_seconds: 0.05, target_ratio: 0.99}",
       "disaggregated.prefill.policy.disagg.profile",
       "the profile was measured at TTFT <= 1 s for a share 0.99 of requests, but slo (line 3) "
       "asks TTFT <= 2 s for a share 0.99 of requests"},
      {"{ttft_seconds: 1, tpot_seconds: 0.1, target_ratio: 0.99}",
       "disaggregated.decode.policy.disagg.profile",
       "the profile was measured at TPOT <= 0.05 s for a share 0.99 of requests, but slo "
       "(line 3) asks TPOT <= 0.1 s"},
      {"{ttft_seconds: 1, tpot_seconds: 0.05, target_ratio: 0.95}",
       "disaggregated.prefill.policy.disagg.profile", "asks TTFT <= 1 s for a share 0.95"},
  };
  for (const RoleSloCase& c : cases) {
    auto file = LoadSimConfigFile(SimConfig("prefill.yaml", "decode.yaml", c.slo));
    ASSERT_FALSE(file) << c.slo;
    EXPECT_EQ(file.error().field, c.field);
    EXPECT_THAT(file.error().message, HasSubstr(c.want));
  }
  // The decode pool's profile does not answer to TTFT: a prefill profile at 2 s beside it.
  profile::CapacityProfile prefill =
      testing_data::SampleRoleProfile(profile::ProfileRole::kPrefill);
  prefill.slo.ttft_seconds = 2;
  ASSERT_TRUE(testing_data::WriteProfileFile(Path("prefill2.yaml"), prefill));
  auto file = LoadSimConfigFile(SimConfig(
      "prefill2.yaml", "decode.yaml", "{ttft_seconds: 2, tpot_seconds: 0.05, target_ratio: 0.99}"));
  EXPECT_TRUE(file) << file.error().ToString();
}

}  // namespace
}  // namespace gpuscale::config
