#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"

namespace gpuscale::cli {
namespace {

namespace fs = std::filesystem;

class SimulateDisaggCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpuscale_sim_disagg_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream trace(dir_ / "trace.csv");
    trace << "arrival_s,input_tokens,output_tokens\n";
    for (int i = 0; i < 2000; ++i) {
      trace << i * 0.1 << "," << 500 + (i * 37) % 4000 << "," << 20 + (i * 53) % 300 << "\n";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  int Run(const std::vector<std::string>& args, std::string* out, std::string* err) {
    std::ostringstream o, e;
    const int code = RunCli(args, o, e);
    *out = o.str();
    *err = e.str();
    return code;
  }
  std::string Config(const std::string& name) const {
    return std::string(GPUSCALE_SOURCE_DIR) + "/examples/sim/disagg/" + name + ".yaml";
  }
  std::string Trace() const { return (dir_ / "trace.csv").string(); }

  fs::path dir_;
};

// examples/sim/disagg/conv.yaml's pools read role profiles that `gpuscale profile --sim
// --role` made from the replica model: the same run as without them (the model's own figures),
// up to the six digits the profiles keep.
TEST_F(SimulateDisaggCommandTest, RoleProfilesGiveTheReplicaModelsRun) {
  std::ifstream example(Config("conv"));
  std::stringstream text;
  text << example.rdbuf();
  std::string without = text.str();
  for (const char* role : {"prefill", "decode"}) {
    const std::string from = std::string("role: ") + role + ", profile: ";
    const size_t at = without.find(from);
    ASSERT_NE(at, std::string::npos) << role;
    without.erase(at + from.size() - 11, without.find('}', at) - (at + from.size() - 11));
  }
  ASSERT_EQ(without.find("profile:"), std::string::npos) << without;
  const std::string model_config = (dir_ / "conv-model.yaml").string();
  std::ofstream(model_config) << without;
  std::string with_profiles, from_model, err;
  ASSERT_EQ(Run({"simulate", "--config", Config("conv"), "--trace", Trace(), "-o", "json"},
                &with_profiles, &err),
            0)
      << err;
  ASSERT_EQ(Run({"simulate", "--config", model_config, "--trace", Trace(), "-o", "json"},
                &from_model, &err),
            0)
      << err;
  const auto a = nlohmann::json::parse(with_profiles);
  const auto b = nlohmann::json::parse(from_model);
  EXPECT_EQ(a["slo_attainment"], b["slo_attainment"]);
  EXPECT_EQ(a["gpu_hours"], b["gpu_hours"]);
  EXPECT_EQ(a["pools"], b["pools"]);  // bounds, attainment, GPU-hours, peaks, scale events
}

TEST_F(SimulateDisaggCommandTest, JsonAddsPoolsToTheAggregatedFieldsAndIsByteIdentical) {
  const std::vector<std::string> args = {"simulate", "--config", Config("conv"), "--trace",
                                         Trace(),    "-o",       "json"};
  std::string first, second, err;
  ASSERT_EQ(Run(args, &first, &err), 0) << err;
  ASSERT_EQ(Run(args, &second, &err), 0) << err;
  EXPECT_EQ(first, second);
  const auto j = nlohmann::json::parse(first);
  for (const char* key : {"slo_attainment", "gpu_hours", "oracle_gpu_hours", "ttft_seconds",
                          "requests", "peak_replicas"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["requests"], 2000);
  for (const char* pool : {"prefill", "decode"}) {
    const auto& p = j["pools"][pool];
    EXPECT_EQ(p["policy"], "disagg") << pool;
    EXPECT_GT(p["gpu_hours"].get<double>(), 0) << pool;
    EXPECT_GT(p["oracle_gpu_hours"].get<double>(), 0) << pool;
  }
  EXPECT_NEAR(j["gpu_hours"].get<double>(),
              j["pools"]["prefill"]["gpu_hours"].get<double>() +
                  j["pools"]["decode"]["gpu_hours"].get<double>(),
              1e-9);
  EXPECT_LE(j["disaggregated"]["peak_gpus"].get<int>(), 64);
  EXPECT_EQ(j["disaggregated"]["link"], "rdma-400g");
}

TEST_F(SimulateDisaggCommandTest, TableShowsBothPoolsAndCompareRefusesDisaggregated) {
  std::string out, err;
  ASSERT_EQ(
      Run({"simulate", "--config", Config("conv"), "--trace", Trace(), "--no-oracle"}, &out, &err),
      0)
      << err;
  EXPECT_NE(out.find("prefill pool"), std::string::npos) << out;
  EXPECT_NE(out.find("decode pool"), std::string::npos) << out;
  EXPECT_NE(out.find("kv_transfer_seconds"), std::string::npos) << out;
  EXPECT_EQ(Run({"simulate", "--compare", Config("conv") + "," + Config("conv-aggregated"),
                 "--trace", Trace(), "--svg", (dir_ / "c.svg").string()},
                &out, &err),
            2);
  EXPECT_NE(err.find("--compare"), std::string::npos) << err;
}

}  // namespace
}  // namespace gpuscale::cli
