// A service whose slo policy names a capacity profile (config/policy_profile.h): the path
// relative to the daemon's config file, kept absolute in the spec the store holds, and the
// service's SLO checked against the profile's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/service_policy.h"
#include "scale/disagg_policy.h"
#include "scale/slo_policy.h"
#include "serve_config/daemon_config.h"
#include "testing/profile_test_data.h"

namespace gpuscale::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ServiceProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpuscale-profile-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ASSERT_TRUE(testing_data::WriteProfileFile((dir_ / "p.yaml").string()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A daemon config with one slo service naming `profile`; its slo block is `slo` (line 5).
  std::string WriteConfig(const std::string& profile, const std::string& slo = "{}") {
    const std::string path = (dir_ / "gpuscale.yaml").string();
    std::string text = R"(services:
  - name: chat
    command: [vllm, serve, m, --port, "{port}"]
    max_replicas: 4
    slo: SLO
    policy:
      family: slo
      slo: {profile: PROFILE}
)";
    text.replace(text.find("SLO"), 3, slo);
    text.replace(text.find("PROFILE"), 7, profile);
    std::ofstream(path) << text;
    return path;
  }

  fs::path dir_;
};

TEST_F(ServiceProfileTest, RelativePathIsTheConfigFoldersAndStaysInTheStoredSpec) {
  auto config = LoadDaemonConfig(WriteConfig("p.yaml"));
  ASSERT_TRUE(config) << config.error().ToString();
  const ServiceConfig& service = config->services.at(0);
  EXPECT_THAT(service.policy_yaml, HasSubstr((dir_ / "p.yaml").string()));
  // What the store keeps parses again elsewhere (a restart, another working directory).
  auto stored = ParseServiceConfigText(ServiceConfigToYaml(service), "stored service chat");
  ASSERT_TRUE(stored) << stored.error().ToString();
  auto policy = BuildServicePolicy(*stored, {});
  ASSERT_TRUE(policy) << policy.error().ToString();
  const auto& slo = dynamic_cast<const scale::SloPolicy&>(**policy);
  EXPECT_NEAR(slo.config().output_token_weight, 4, 1e-9);
  EXPECT_NEAR(slo.capacity(), 36000, 1e-6);
}

TEST_F(ServiceProfileTest, ServiceSloMustBeTheProfiles) {
  auto config = LoadDaemonConfig(WriteConfig("p.yaml", "{ttft_seconds: 2}"));
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().field, "services[0].policy.slo.profile");
  EXPECT_THAT(config.error().message,
              HasSubstr("the profile was measured at TTFT <= 1 s, TPOT <= 0.05 s, but "
                        "services[0].slo (line 5) asks TTFT <= 2 s, TPOT <= 0.05 s"));
  EXPECT_THAT(config.error().message, HasSubstr("(line 8)"));
}

TEST_F(ServiceProfileTest, ARestBodyResolvesAgainstTheWorkingDirectory) {
  auto service = ParseServiceConfigText(
      "name: chat\ncommand: [x]\nmax_replicas: 2\n"
      "policy: {family: slo, slo: {profile: gpuscale-no-such-profile.yaml}}\n",
      "request body");
  ASSERT_FALSE(service);
  EXPECT_EQ(service.error().field, "policy.slo.profile");
  EXPECT_THAT(service.error().message,
              HasSubstr("'gpuscale-no-such-profile.yaml' (named in line 4): cannot open"));
}

// A disaggregated service whose pools name role profiles beside the config: both pools'
// policies are built from them, from the stored spec too, and each is checked against the
// service's SLO on its role's target.
class PoolProfileTest : public ServiceProfileTest {
 protected:
  std::string WritePoolConfig(const std::string& slo) {
    using profile::ProfileRole;
    EXPECT_TRUE(testing_data::WriteProfileFile(
        (dir_ / "prefill.yaml").string(), testing_data::SampleRoleProfile(ProfileRole::kPrefill)));
    EXPECT_TRUE(testing_data::WriteProfileFile(
        (dir_ / "decode.yaml").string(), testing_data::SampleRoleProfile(ProfileRole::kDecode)));
    const std::string path = (dir_ / "gpuscale.yaml").string();
    std::ofstream(path) << R"(services:
  - name: chat
    slo: )" << slo << R"(
    disaggregated:
      gpu_budget: 4
      prefill:
        command: [emu, --role, prefill, --port, "{port}"]
        max_replicas: 2
        policy: {family: disagg, disagg: {profile: prefill.yaml}}
      decode:
        command: [emu, --role, decode, --port, "{port}"]
        max_replicas: 2
        policy: {family: disagg, disagg: {role: decode, profile: decode.yaml}}
)";
    return path;
  }
};

TEST_F(PoolProfileTest, PoolsBuildTheirPoliciesFromRoleProfiles) {
  auto config = LoadDaemonConfig(WritePoolConfig("{ttft_seconds: 1, tpot_seconds: 0.05}"));
  ASSERT_TRUE(config) << config.error().ToString();
  const ServiceConfig& service = config->services.at(0);
  ASSERT_TRUE(service.disaggregated);
  EXPECT_THAT(service.disaggregated->prefill.policy_yaml,
              HasSubstr((dir_ / "prefill.yaml").string()));
  auto stored = ParseServiceConfigText(ServiceConfigToYaml(service), "stored service chat");
  ASSERT_TRUE(stored) << stored.error().ToString();
  struct PoolCapacity {
    int role;
    double capacity;
  };
  for (const PoolCapacity pool : {PoolCapacity{0, 20000}, PoolCapacity{1, 6000}}) {
    auto policy = BuildServicePolicy(PoolServiceConfig(*stored, pool.role), {});
    ASSERT_TRUE(policy) << policy.error().ToString();
    const auto& disagg = dynamic_cast<const scale::DisaggPolicy&>(**policy);
    EXPECT_DOUBLE_EQ(disagg.capacity(), pool.capacity);
    EXPECT_EQ(disagg.config().mix_capacities.size(), 2u);
  }
}

TEST_F(PoolProfileTest, EachPoolsProfileMustHoldAtTheServicesTargetOfItsRole) {
  auto config = LoadDaemonConfig(WritePoolConfig("{ttft_seconds: 1, tpot_seconds: 0.2}"));
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().field, "services[0].disaggregated.decode.policy.disagg.profile");
  EXPECT_THAT(config.error().message,
              HasSubstr("the profile was measured at TPOT <= 0.05 s, but "
                        "services[0].disaggregated.decode.slo (line 3) asks TPOT <= 0.2 s"));
}

}  // namespace
}  // namespace gpuscale::daemon
