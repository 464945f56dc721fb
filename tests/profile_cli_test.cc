// `gpuscale profile` end to end: the simulator mode (deterministic, and the shipped profile
// is exactly what its documented command writes) and the endpoint mode against an emulated
// replica in this process (127.0.0.1, port 0), with steps of well under a second.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli_test_util.h"
#include "config/profile_file.h"
#include "config/sim_config.h"
#include "emulator/emulator_server.h"
#include "sim/replica_model.h"
#include "sim/role_capacity.h"

namespace gpuscale {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kShippedConfig[] = GPUSCALE_DATA_DIR "/profiles/llama-3-8b-h100.sim.yaml";
constexpr char kShippedProfile[] = GPUSCALE_DATA_DIR "/profiles/llama-3-8b-h100.yaml";
constexpr char kShippedTtft25Config[] =
    GPUSCALE_DATA_DIR "/profiles/llama-3-8b-h100-ttft2.5.sim.yaml";

class ProfileCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = cli_test::MakeTempDir("gpuscale-profile-");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
};

// data/README.md's command, into a scratch file: the shipped profile must be its output, so
// that it is reproducible and not edited by hand.
TEST_F(ProfileCliTest, ShippedProfileIsWhatItsCommandWrites) {
  const std::string out = dir_ + "/profile.yaml";
  cli_test::RunResult r =
      cli_test::RunInProcess({"profile", "--sim", kShippedConfig, "--out", out});
  ASSERT_EQ(r.exit_code, cli::kExitOk) << r.err;
  EXPECT_EQ(cli_test::ReadAll(out), cli_test::ReadAll(kShippedProfile))
      << "regenerate data/profiles/llama-3-8b-h100.yaml with the command in data/README.md";
  Result<profile::CapacityProfile> shipped = config::LoadProfileFile(kShippedProfile);
  ASSERT_TRUE(shipped.has_value()) << shipped.error().ToString();
  EXPECT_EQ(shipped->mixes.size(), profile::DefaultMixes().size());
  EXPECT_GT(shipped->output_token_weight, 0);
}

TEST_F(ProfileCliTest, SimulatorModeIsDeterministicAndFollowsTheSeed) {
  std::vector<std::string> args = {"profile", "--sim", kShippedConfig, "-o", "json"};
  args.insert(args.end(), {"--mix", "1024:256", "--mix", "4096:64", "--duration", "60"});
  cli_test::RunResult first = cli_test::RunInProcess(args);
  cli_test::RunResult second = cli_test::RunInProcess(args);
  ASSERT_EQ(first.exit_code, cli::kExitOk) << first.err;
  EXPECT_EQ(first.out, second.out);
  std::vector<std::string> other_seed = args;
  other_seed.insert(other_seed.end(), {"--seed", "2"});
  EXPECT_NE(cli_test::RunInProcess(other_seed).out, first.out);
  const json profile = json::parse(first.out);
  EXPECT_EQ(profile["source"], "simulator");
  EXPECT_EQ(profile["measurement"]["point_seconds"], 60);
  EXPECT_GT(profile["mixes"][0]["capacity_rps"], profile["mixes"][1]["capacity_rps"]);
}

TEST_F(ProfileCliTest, UsageErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const Case cases[] = {
      {{"profile"}, "--sim: give exactly one of --sim CONFIG"},
      {{"profile", "--sim", kShippedConfig, "--mix", "1024"}, "--mix: expected PROMPT:OUTPUT"},
      {{"profile", "--sim", kShippedConfig, "--mix", "1024:256"}, "--mix: one mix given"},
      {{"profile", "--sim", kShippedConfig, "--ttft", "2"}, "--ttft: applies to --url only"},
      {{"profile", "--url", "http://127.0.0.1:1", "--warmup", "-1"}, "--warmup: expected seconds"},
      {{"profile", "--url", "http://127.0.0.1:1", "--step-factor", "1"}, "--step-factor"},
      {{"profile", "--sim", "/nonexistent/sim.yaml"}, "cannot open file"},
  };
  for (const Case& c : cases) {
    cli_test::RunResult r = cli_test::RunInProcess(c.args);
    EXPECT_EQ(r.exit_code, cli::kExitUsage) << c.want;
    EXPECT_THAT(r.err, HasSubstr(c.want));
  }
}

// data/README.md's role commands: the shipped role profiles (examples/sim/disagg/ reads them)
// must be their output byte for byte.
TEST_F(ProfileCliTest, ShippedRoleProfilesAreWhatTheirCommandsWrite) {
  struct ShippedRoleProfile {
    const char* config;
    const char* role;
    std::string shipped;
  };
  const std::string dir = GPUSCALE_DATA_DIR "/profiles/";
  const ShippedRoleProfile cases[] = {
      {kShippedConfig, "prefill", dir + "llama-3-8b-h100-prefill.yaml"},
      {kShippedConfig, "decode", dir + "llama-3-8b-h100-decode.yaml"},
      {kShippedTtft25Config, "prefill", dir + "llama-3-8b-h100-ttft2.5-prefill.yaml"},
  };
  for (const ShippedRoleProfile& c : cases) {
    const std::string out = dir_ + "/role.yaml";
    cli_test::RunResult r =
        cli_test::RunInProcess({"profile", "--sim", c.config, "--role", c.role, "--out", out});
    ASSERT_EQ(r.exit_code, cli::kExitOk) << r.err;
    EXPECT_EQ(cli_test::ReadAll(out), cli_test::ReadAll(c.shipped))
        << "regenerate " << c.shipped << " with the command in data/README.md";
  }
}

// --sim --role: each mix is sim/role_capacity.h's figure for the config's replica and SLO (to
// the 6 digits written), in the role's tokens/s, with requests/s derived from it.
TEST_F(ProfileCliTest, SimulatorRoleModeWritesTheReplicaModelsRoleCapacities) {
  Result<sim::SimulationConfig> config = config::LoadSimConfigSections(kShippedConfig);
  ASSERT_TRUE(config.has_value());
  auto model = sim::MakeReplicaModel(config->model);
  ASSERT_TRUE(model.has_value());
  struct RoleFigures {
    const char* role;
    std::vector<scale::MixCapacity> want;
  };
  const RoleFigures roles[] = {
      {"prefill", sim::PrefillCapacities(**model, config->slo)},
      {"decode", sim::DecodeCapacities(**model, config->slo.tpot_seconds)}};
  for (const RoleFigures& r : roles) {
    cli_test::RunResult run = cli_test::RunInProcess(
        {"profile", "--sim", kShippedConfig, "--role", r.role, "-o", "json"});
    ASSERT_EQ(run.exit_code, cli::kExitOk) << run.err;
    const json profile = json::parse(run.out);
    EXPECT_EQ(profile["role"], r.role);
    EXPECT_FALSE(profile.contains("fit"));
    EXPECT_EQ(profile["measurement"]["method"], "model");
    ASSERT_EQ(profile["mixes"].size(), r.want.size()) << r.role;
    for (size_t i = 0; i < r.want.size(); ++i) {
      const json& mix = profile["mixes"][i];
      const double tokens = mix["capacity_tokens_per_second"];
      EXPECT_EQ(mix["prompt_tokens"].get<double>(), r.want[i].prompt_tokens);
      EXPECT_EQ(mix["output_tokens"].get<double>(), r.want[i].output_tokens);
      EXPECT_NEAR(tokens / r.want[i].capacity_tokens_per_second, 1, 1e-5) << r.role << " " << i;
      const double per_request =
          std::string(r.role) == "prefill" ? r.want[i].prompt_tokens : r.want[i].output_tokens;
      EXPECT_NEAR(mix["capacity_rps"].get<double>() * per_request / tokens, 1, 1e-5);
    }
  }
}

TEST_F(ProfileCliTest, RoleUsageErrorsNameTheFlagAndWhatToRun) {
  struct RoleUsageCase {
    std::vector<std::string> args;
    std::string want;
  };
  const std::string url = "http://127.0.0.1:1";
  const RoleUsageCase cases[] = {
      {{"profile", "--sim", kShippedConfig, "--role", "both"},
       "--role: expected prefill or decode (leave --role out for an aggregated replica)"},
      {{"profile", "--url", url, "--role", "decode"},
       "--role: decode cannot be profiled through --url: a decode replica serves only requests "
       "that carry a KV handle from a prefill replica"},
      {{"profile", "--url", url, "--role", "decode"},
       "gpuscale profile --sim CONFIG --role decode"},
      {{"profile", "--sim", kShippedConfig, "--role", "prefill", "--mix", "512:1"},
       "--mix: does not apply to --sim with --role"},
      {{"profile", "--sim", kShippedConfig, "--role", "decode", "--seed", "3"},
       "--seed: does not apply to --sim with --role"},
      {{"profile", "--url", url, "--role", "prefill", "--mix", "1024:8"},
       "--mix: 1024:8 asks 8 output tokens, but a prefill replica makes the first token only"},
  };
  for (const RoleUsageCase& c : cases) {
    cli_test::RunResult r = cli_test::RunInProcess(c.args);
    EXPECT_EQ(r.exit_code, cli::kExitUsage) << c.want;
    EXPECT_THAT(r.err, HasSubstr(c.want));
  }
}

// An emulated replica of 4 batch slots whose prompts cost time (40 ms per 1k tokens) and whose
// decode steps take 10 ms, so that both mixes saturate it below 32 req/s.
emulator::EmulatorOptions SmallReplica() {
  emulator::EmulatorOptions options;
  options.model_name = "emu";
  options.startup_seconds = 0;
  options.engine.prefill_ms_per_1k_tokens = 40;
  options.engine.decode_ms_base = 10;
  options.engine.max_batch_size = 4;
  options.http_threads = 4;
  return options;
}

TEST_F(ProfileCliTest, EndpointModeStepsUpToTheFirstMissAndWritesTheProfile) {
  auto server = emulator::EmulatorServer::Start(SmallReplica());
  ASSERT_TRUE(server.has_value()) << server.error().ToString();
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port());
  const std::string out = dir_ + "/endpoint.yaml";
  // Steps of 0.6 s at 8, 16, 32 req/s (the last must miss: 4 slots cannot serve it).
  std::vector<std::string> args = {"profile", "--url", url, "--out", out, "-o", "json"};
  args.insert(args.end(), {"--mix", "1024:8", "--mix", "64:32", "--tpot", "0.1"});
  args.insert(args.end(), {"--duration", "0.6", "--start-rate", "8", "--step-factor", "2"});
  args.insert(args.end(), {"--refine", "0", "--drain-timeout", "5", "--warmup", "0.3"});
  cli_test::RunResult r = cli_test::RunInProcess(args);
  (*server)->Shutdown();
  ASSERT_EQ(r.exit_code, cli::kExitOk) << r.err;
  EXPECT_THAT(r.err, HasSubstr("profile: 1024:8 at 8.000 req/s"));
  const json profile = json::parse(r.out);
  EXPECT_EQ(profile["source"], url);
  EXPECT_EQ(profile["model"], "emu");  // what /v1/models said, since --model was not given
  EXPECT_EQ(profile["measurement"]["method"], "steps");
  EXPECT_EQ(profile["measurement"]["warmup_seconds"], 0.3);
  ASSERT_EQ(profile["mixes"].size(), 2u);
  for (const json& mix : profile["mixes"]) {
    // The capacity is the last step that held; the step after it missed.
    const json& curve = mix["curve"];
    ASSERT_GE(curve.size(), 2u);
    const json& last = curve[curve.size() - 1];
    EXPECT_LT(last["attainment"].get<double>(), 0.99);
    EXPECT_EQ(mix["capacity_rps"], curve[curve.size() - 2]["rate_rps"]);
    EXPECT_GE(curve[curve.size() - 2]["attainment"].get<double>(), 0.99);
  }
  EXPECT_GT(profile["fit"]["capacity_tokens_per_second"].get<double>(), 0);
  Result<profile::CapacityProfile> written = config::LoadProfileFile(out);
  ASSERT_TRUE(written.has_value()) << written.error().ToString();
  EXPECT_EQ(written->source, url);
  EXPECT_EQ(written->mixes[1].capacity_rps, profile["mixes"][1]["capacity_rps"].get<double>());
  EXPECT_EQ(written->slo.tpot_seconds, 0.1);
}

// --role prefill --url against an emulated prefill replica (`gpuscale emulate --role
// prefill`), which serves a plain 1-token completion whole: prefill and first token.
TEST_F(ProfileCliTest, PrefillEndpointModeFindsPromptTokensPerSecondWithinTtft) {
  emulator::EmulatorOptions options = SmallReplica();
  options.role = emulator::ReplicaRole::kPrefill;
  auto server = emulator::EmulatorServer::Start(options);
  ASSERT_TRUE(server.has_value()) << server.error().ToString();
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port());
  const std::string out = dir_ + "/prefill.yaml";
  // 2048-token prompts cost 82 ms each: steps of 0.6 s at 4, 8, 16, 32, 64 req/s, the last
  // ones far past what the replica prefills within 0.3 s.
  std::vector<std::string> args = {"profile", "--url", url, "--role", "prefill", "--out", out};
  args.insert(args.end(), {"-o", "json", "--mix", "2048:1", "--ttft", "0.3", "--duration", "0.6"});
  args.insert(args.end(), {"--start-rate", "4", "--step-factor", "2", "--max-rate", "64"});
  args.insert(args.end(), {"--refine", "0", "--drain-timeout", "5", "--warmup", "0.3"});
  cli_test::RunResult r = cli_test::RunInProcess(args);
  (*server)->Shutdown();
  ASSERT_EQ(r.exit_code, cli::kExitOk) << r.err;
  const json profile = json::parse(r.out);
  EXPECT_EQ(profile["role"], "prefill");
  EXPECT_FALSE(profile.contains("fit"));
  ASSERT_EQ(profile["mixes"].size(), 1u);
  const json& mix = profile["mixes"][0];
  const json& curve = mix["curve"];
  ASSERT_GE(curve.size(), 2u);
  EXPECT_LT(curve[curve.size() - 1]["attainment"].get<double>(), 0.99);
  EXPECT_EQ(mix["capacity_rps"], curve[curve.size() - 2]["rate_rps"]);
  EXPECT_NEAR(mix["capacity_tokens_per_second"].get<double>(),
              mix["capacity_rps"].get<double>() * 2048, 1e-6 * 2048 * 64);
  Result<profile::CapacityProfile> written = config::LoadProfileFile(out);
  ASSERT_TRUE(written.has_value()) << written.error().ToString();
  EXPECT_EQ(written->role, profile::ProfileRole::kPrefill);
  EXPECT_EQ(written->measurement.method, "steps");
  EXPECT_EQ(written->slo.ttft_seconds, 0.3);
}

TEST_F(ProfileCliTest, EndpointModeReportsAnEndpointThatDoesNotAnswer) {
  // Port 1 on loopback: nothing listens there, so every connection is refused at once.
  cli_test::RunResult r = cli_test::RunInProcess(
      {"profile", "--url", "http://127.0.0.1:1", "--model", "m", "--mix", "64:8", "--mix", "8:64",
       "--duration", "0.3", "--warmup", "0", "--start-rate", "20"});
  EXPECT_EQ(r.exit_code, cli::kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("--url: no request to http://127.0.0.1:1 completed"));
}

}  // namespace
}  // namespace gpuscale
