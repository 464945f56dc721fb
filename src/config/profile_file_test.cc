#include "config/profile_file.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "testing/profile_test_data.h"

namespace gpuscale::config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ProfileFileTest, WrittenProfileReadsBackEqual) {
  const profile::CapacityProfile p = testing_data::SampleProfile();
  const std::string text = ProfileToYaml(p);
  Result<profile::CapacityProfile> back = ParseProfileText(text, "p.yaml");
  ASSERT_TRUE(back.has_value()) << back.error().ToString() << "\n" << text;
  EXPECT_EQ(*back, p);
  EXPECT_EQ(ProfileToYaml(*back), text);
}

TEST(ProfileFileTest, RoundTripKeepsEveryDigitAndOddStrings) {
  profile::CapacityProfile p = testing_data::SampleProfile();
  p.model = "org/model \"v2\" \\ x";
  p.source = "http://127.0.0.1:8000";
  p.replica_model.reset();  // an endpoint profile
  p.measurement = {"steps", 1.5, 0, 18446744073709551615ULL};
  p.output_token_weight = 0.1 + 0.2;  // not a short decimal
  p.capacity_tokens_per_second = 1.0 / 3;
  p.mixes[0].curve[0].ttft_p99_seconds = 1e-7;
  p.mixes[1].curve.clear();
  Result<profile::CapacityProfile> back = ParseProfileText(ProfileToYaml(p), "p.yaml");
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, p);
}

TEST(ProfileFileTest, ReadsJsonToo) {
  const char* json = R"({"version": 1, "model": "m", "source": "simulator",
    "slo": {"ttft_seconds": 1, "tpot_seconds": 0.05, "target_ratio": 0.99},
    "fit": {"output_token_weight": 4, "capacity_tokens_per_second": 36000},
    "mixes": [{"prompt_tokens": 256, "output_tokens": 64, "capacity_rps": 70.3,
               "capacity_tokens_per_second": 36000}]})";
  Result<profile::CapacityProfile> p = ParseProfileText(json, "p.json");
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_EQ(p->capacity_tokens_per_second, 36000);
  EXPECT_EQ(p->mixes.size(), 1u);
  EXPECT_FALSE(p->replica_model.has_value());
  EXPECT_EQ(p->measurement.method, "bisection");  // the defaults when absent
}

// Line numbers below are those of kValid.
constexpr const char* kValid =
    "version: 1\n"                                                        // 1
    "model: m\n"                                                          // 2
    "source: simulator\n"                                                 // 3
    "slo: {ttft_seconds: 1, tpot_seconds: 0.05, target_ratio: 0.99}\n"    // 4
    "fit: {output_token_weight: 4, capacity_tokens_per_second: 36000}\n"  // 5
    "mixes:\n"                                                            // 6
    "  - {prompt_tokens: 256, output_tokens: 64, capacity_rps: 70.3, "
    "capacity_tokens_per_second: 36000}\n"     // 7
    "  - prompt_tokens: 1024\n"                // 8
    "    output_tokens: 256\n"                 // 9
    "    capacity_rps: 17.5\n"                 // 10
    "    capacity_tokens_per_second: 36000\n"  // 11
    "    curve:\n"                             // 12
    "      - {rate_rps: 3, requests: 10, attainment: 1, ttft_p50_seconds: 0.1, "
    "ttft_p99_seconds: 0.2, tpot_p50_seconds: 0.01, tpot_p99_seconds: 0.02}\n"  // 13
    "measurement: {method: bisection, point_seconds: 300}\n"                    // 14
    "replica_model: {gpu: h100, max_batch_size: 256}\n";                        // 15

struct ProfileErrorCase {
  std::string from, to;  // kValid with `from` replaced by `to`
  std::string want;      // the error, field and line included
};

// Names the case in test listings (ctest) by its edit, not by its bytes.
void PrintTo(const ProfileErrorCase& c, std::ostream* os) {
  *os << "'" << c.from << "' -> '" << c.to << "'";
}

class ProfileFileErrorTest : public ::testing::TestWithParam<ProfileErrorCase> {};

TEST_P(ProfileFileErrorTest, NamesFieldAndLine) {
  std::string text = kValid;
  const ProfileErrorCase& c = GetParam();
  text.replace(text.find(c.from), c.from.size(), c.to);
  Result<profile::CapacityProfile> p = ParseProfileText(text, "p.yaml");
  ASSERT_FALSE(p.has_value()) << c.from << " -> " << c.to;
  EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(p.error().ToString(), HasSubstr(c.want));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ProfileFileErrorTest,
    ::testing::Values(
        ProfileErrorCase{
            "    curve:\n", "    measured_by: me\n    curve:\n",
            "mixes[1].measured_by: unknown field; accepted fields: prompt_tokens, "
            "output_tokens, capacity_rps, capacity_tokens_per_second, curve (line 12)"},
        ProfileErrorCase{"capacity_rps: 17.5", "capacity_rps: 0",
                         "mixes[1].capacity_rps: expected a positive number, got 0 (line 10)"},
        ProfileErrorCase{"capacity_rps: 70.3", "capacity_rps: -2",
                         "mixes[0].capacity_rps: expected a positive number, got -2 (line 7)"},
        ProfileErrorCase{"version: 1", "version: 2",
                         "version: unsupported version 2; this gpuscale reads version 1 (line 1)"},
        ProfileErrorCase{"version: 1\n", "", "version: required field is missing (line 1)"},
        ProfileErrorCase{"target_ratio: 0.99", "target_ratio: 1.5",
                         "slo.target_ratio: expected a share in (0, 1], got 1.5 (line 4)"},
        ProfileErrorCase{"tpot_seconds: 0.05", "tpot_seconds: .inf",
                         "slo.tpot_seconds: expected a positive number, got inf (line 4)"},
        ProfileErrorCase{
            "attainment: 1,", "attainment: 2,",
            "mixes[1].curve[0].attainment: expected a share in [0, 1], got 2 (line 13)"},
        ProfileErrorCase{"output_tokens: 256", "output_tokens: 0",
                         "mixes[1].output_tokens: expected an integer >= 1, got 0 (line 9)"},
        ProfileErrorCase{"prompt_tokens: 1024", "prompt_tokens: many",
                         "mixes[1].prompt_tokens: expected an integer, got 'many' (line 8)"},
        ProfileErrorCase{"model: m", "model: \"\"", "model: expected a non-empty string (line 2)"},
        ProfileErrorCase{"output_token_weight: 4,", "output_token_weight: -1,",
                         "fit.output_token_weight: expected a number >= 0, got -1 (line 5)"},
        ProfileErrorCase{"fit: {output_token_weight: 4, capacity_tokens_per_second: 36000}\n", "",
                         "fit: required field is missing"},
        ProfileErrorCase{
            "method: bisection", "method: guess",
            "measurement.method: expected bisection, steps or model, got 'guess' (line 14)"},
        ProfileErrorCase{"source: simulator\n", "source: simulator\nrole: both\n",
                         "role: expected prefill or decode (no role: an aggregated replica's "
                         "profile), got 'both' (line 4)"},
        ProfileErrorCase{"source: simulator\n", "source: simulator\nrole: decode\n",
                         "fit: a decode role profile has no fit (the disagg policy reads each "
                         "mix's capacity); remove it, or remove role: for an aggregated profile "
                         "(line 6)"},
        ProfileErrorCase{"gpu: h100", "gpu: h100, tp: 2",
                         "replica_model.tp: unknown field; accepted fields: gpu, tensor_parallel"},
        ProfileErrorCase{"source: simulator\n", "source: simulator\nnotes: x\n",
                         "notes: unknown field; accepted fields: version, model"},
        // Found by profile_file_fuzz: a count past int64's range was cast unchecked (UB).
        ProfileErrorCase{
            "max_batch_size: 256}", "max_batch_size: 256, kv_cache_tokens: 2e113}",
            "replica_model.kv_cache_tokens: expected at most 1000000000000 tokens, got "
            "2e+113 (line 15)"},
        ProfileErrorCase{
            "ttft_p50_seconds: 0.1", "ttft_p50_seconds: soon",
            "mixes[1].curve[0].ttft_p50_seconds: expected a number, got 'soon' (line 13)"}));

TEST(ProfileFileTest, TheErrorCasesStartFromAValidProfile) {
  Result<profile::CapacityProfile> p = ParseProfileText(kValid, "p.yaml");
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_EQ(p->mixes[1].curve.size(), 1u);
  EXPECT_EQ(p->replica_model->max_batch_size, 256);
  EXPECT_EQ(p->replica_model->model, "m");  // the profile's model
}

// Role profiles: the role and the mixes come back, no fit is written or needed, and an
// aggregated profile's text does not change (it has no role: line).
TEST(ProfileFileTest, RoleProfilesReadBackEqualWithoutAFit) {
  for (profile::ProfileRole role :
       {profile::ProfileRole::kPrefill, profile::ProfileRole::kDecode}) {
    const profile::CapacityProfile p = testing_data::SampleRoleProfile(role);
    const std::string text = ProfileToYaml(p);
    EXPECT_THAT(text, HasSubstr(fmt::format("\nrole: {}\n", profile::ProfileRoleName(role))));
    EXPECT_THAT(text, Not(HasSubstr("fit:")));
    Result<profile::CapacityProfile> back = ParseProfileText(text, "p.yaml");
    ASSERT_TRUE(back.has_value()) << back.error().ToString() << "\n" << text;
    EXPECT_EQ(*back, p);
    EXPECT_EQ(back->measurement.method, "model");
    EXPECT_EQ(back->measurement.point_seconds, 0);
  }
  EXPECT_THAT(ProfileToYaml(testing_data::SampleProfile()), Not(HasSubstr("role:")));
  Result<profile::CapacityProfile> old = ParseProfileText(kValid, "p.yaml");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->role, profile::ProfileRole::kAggregated);
}

TEST(ProfileFileTest, RoleProfileErrorsNameFieldAndLine) {
  struct RoleProfileCase {
    std::string from, to, want;
  };
  const std::string prefill =
      ProfileToYaml(testing_data::SampleRoleProfile(profile::ProfileRole::kPrefill));
  const RoleProfileCase cases[] = {
      {"output_tokens: 1\n", "output_tokens: 64\n",
       "mixes[0].output_tokens: expected 1 in a prefill profile (a prefill replica makes the "
       "first token only), got 64 (line"},
      {"method: \"model\", point_seconds: 0", "method: \"bisection\", point_seconds: 0",
       "measurement.point_seconds: expected a positive number, got 0"},
      {"role: prefill\n", "role: 1\n", "role: expected prefill or decode"},
  };
  for (const RoleProfileCase& c : cases) {
    std::string text = prefill;
    ASSERT_NE(text.find(c.from), std::string::npos) << c.from;
    text.replace(text.find(c.from), c.from.size(), c.to);
    Result<profile::CapacityProfile> p = ParseProfileText(text, "p.yaml");
    ASSERT_FALSE(p.has_value()) << c.to;
    EXPECT_THAT(p.error().ToString(), HasSubstr(c.want));
  }
}

TEST(ProfileFileTest, MissingFileIsNotFound) {
  Result<profile::CapacityProfile> p = LoadProfileFile("/nonexistent/profile.yaml");
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gpuscale::config
