// CLI contract of `gpuscale allocate | wait | estimate`, run in-process through
// cli::RunCli against the simulated backend with temporary inventory and task files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli_test_util.h"

namespace gpuscale {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

using cli_test::RunResult;

// 4 x H100 80GB (indices 0-3) at 2.49 and 4 x A100 80GB (4-7) at 1.29 per GPU-hour.
constexpr char kMixedInventory[] = GPUSCALE_SOURCE_DIR "/examples/inventory-mixed.yaml";

RunResult RunGpuscale(const std::vector<std::string>& args) { return cli_test::RunInProcess(args); }

// A temporary directory removed with everything in it when the test ends.
class AllocCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscale_alloc_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    return cli_test::WriteFile(dir_, name, text).string();
  }

  // GPU 0: busy and full; GPU 1: idle with 70000 MiB free; GPU 2: idle, 40000 MiB free;
  // GPU 3: half busy, 80000 MiB free.
  std::string Inventory() {
    return Write("inventory.yaml", R"(gpus:
  - {index: 0, memory_total_mb: 81559, memory_used_mb: 80000, utilization_percent: 99}
  - {index: 1, memory_total_mb: 81559, memory_used_mb: 11559, utilization_percent: 0}
  - {index: 2, memory_total_mb: 81559, memory_used_mb: 41559, utilization_percent: 0}
  - {index: 3, memory_total_mb: 81559, memory_used_mb: 1559, utilization_percent: 50}
)");
  }

  std::filesystem::path dir_;
};

TEST_F(AllocCliTest, AllocatePrintsJsonShapeBestFirst) {
  RunResult r =
      RunGpuscale({"allocate", "--gpus", "2", "--min-memory-mb", "30000", "--max-utilization", "60",
                   "--backend", "simulated", "--inventory", Inventory(), "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["gpus"], json::array({1, 3}));
  ASSERT_EQ(doc["details"].size(), 2u);
  const json& first = doc["details"][0];
  EXPECT_EQ(first["index"], 1);
  EXPECT_EQ(first["memory_free_mb"], 70000);
  EXPECT_EQ(first["utilization_percent"], 0.0);
  EXPECT_FALSE(first["name"].get<std::string>().empty());
  EXPECT_GT(first["score"].get<double>(), doc["details"][1]["score"].get<double>());
  // index, name, type, price_per_hour, spot, memory_free_mb, utilization_percent, score
  EXPECT_EQ(first.size(), 8u);
  EXPECT_EQ(first["type"], "H100-80GB");
  EXPECT_TRUE(first["price_per_hour"].is_null()) << "no price listed: unknown, not 0";

  // --gpu-type: only GPUs of that type, though the H100s rank higher; their price shown.
  RunResult typed = RunGpuscale({"allocate", "--gpus", "2", "--gpu-type", "A100-80GB",
                                 "--inventory", kMixedInventory, "-o", "json"});
  ASSERT_EQ(typed.exit_code, 0) << typed.err;
  const json by_type = json::parse(typed.out);
  EXPECT_EQ(by_type["gpus"], json::array({4, 5}));
  EXPECT_EQ(by_type["details"][0]["type"], "A100-80GB");
  EXPECT_EQ(by_type["details"][0]["price_per_hour"], 1.29);
}

TEST_F(AllocCliTest, AllocateTableEndsWithCudaVisibleDevices) {
  RunResult r = RunGpuscale({"allocate", "--gpus", "1", "--inventory", Inventory()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("CUDA_VISIBLE_DEVICES=1\n"));
  RunResult typed = RunGpuscale(
      {"allocate", "--gpus", "1", "--gpu-type", "H100-80GB", "--inventory", kMixedInventory});
  ASSERT_EQ(typed.exit_code, 0) << typed.err;
  EXPECT_THAT(typed.out, HasSubstr("TYPE"));
  EXPECT_THAT(typed.out, HasSubstr("H100-80GB          2.49"));
}

TEST_F(AllocCliTest, AllocateThatCannotBeMetExitsThreeWithReasons) {
  RunResult r = RunGpuscale({"allocate", "--gpus", "3", "--min-memory-mb", "50000",
                             "--max-utilization", "40", "--inventory", Inventory(), "-o", "json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(r.out.empty());
  EXPECT_THAT(r.err, HasSubstr("need 3 GPUs, 1 of 4 eligible"));
  EXPECT_THAT(r.err, HasSubstr("GPU 0: 1559 MiB free < 50000 MiB required, utilization 99% > "
                               "40% max"));
  EXPECT_THAT(r.err, HasSubstr("GPU 2: 40000 MiB free < 50000 MiB required"));
  EXPECT_THAT(r.err, HasSubstr("GPU 3: utilization 50% > 40% max"));
  RunResult typed = RunGpuscale(
      {"allocate", "--gpus", "5", "--gpu-type", "A100-80GB", "--inventory", kMixedInventory});
  EXPECT_EQ(typed.exit_code, 3);
  EXPECT_THAT(typed.err, HasSubstr("need 5 GPUs of type A100-80GB, 4 of 8 eligible; free by "
                                   "type: A100-80GB 4, H100-80GB 4"));
}

TEST_F(AllocCliTest, AllocateRejectsBadFlagsWithExitTwo) {
  const std::string inventory = Inventory();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"allocate", "--gpus", "0", "--inventory", inventory},
        std::vector<std::string>{"allocate", "--gpus", "1.5", "--inventory", inventory},
        std::vector<std::string>{"allocate", "--gpus", "1", "--max-utilization", "120"},
        std::vector<std::string>{"allocate", "--gpus", "1", "--min-memory-mb", "-5"},
        std::vector<std::string>{"allocate", "--inventory", inventory}}) {
    RunResult r = RunGpuscale(args);
    EXPECT_EQ(r.exit_code, 2) << args[2];
    EXPECT_THAT(r.err, HasSubstr("--")) << "the message names the flag: " << r.err;
  }
  RunResult r = RunGpuscale({"allocate", "--gpus", "1", "--max-utilization", "120"});
  EXPECT_THAT(r.err, HasSubstr("--max-utilization"));
  EXPECT_THAT(r.err, HasSubstr("expected a percentage in 0..100"));
}

TEST_F(AllocCliTest, AllocateHelpSaysItLeasesNothing) {
  RunResult r = RunGpuscale({"allocate", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("leases nothing"));
}

TEST_F(AllocCliTest, WaitSucceedsAtOnceWhenGpusAreFree) {
  RunResult r = RunGpuscale({"wait", "--gpus", "2", "--min-memory-mb", "30000", "--timeout", "5",
                             "--interval", "1", "--inventory", Inventory(), "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["gpus"], json::array({1, 3}));
  EXPECT_THAT(r.err, HasSubstr("2 GPUs available after 0.0 s (1 check): 1,3"));
}

TEST_F(AllocCliTest, WaitTimesOutWithExitFourAndProgressLines) {
  RunResult r = RunGpuscale({"wait", "--gpus", "4", "--min-memory-mb", "30000", "--timeout", "0.2",
                             "--interval", "0.1", "--inventory", Inventory()});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_TRUE(r.out.empty());
  EXPECT_THAT(r.err, HasSubstr("waiting: check 1 at 0.0 s"));
  EXPECT_THAT(r.err, HasSubstr("error: no 4 GPUs after"));
  EXPECT_THAT(r.err, HasSubstr("need 4 GPUs, 3 of 4 eligible (min 30000 MiB free)"));
}

TEST_F(AllocCliTest, WaitRejectsBadIntervalWithExitTwo) {
  RunResult r = RunGpuscale({"wait", "--gpus", "1", "--interval", "0", "--inventory", Inventory()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--interval"));
}

TEST_F(AllocCliTest, EstimatePrintsJsonShape) {
  const std::string task = Write("task.yaml", R"(model: meta-llama/Llama-3.1-70B-Instruct
parameters:
  tp-size: [2, 4]
  dp: 2
)");
  RunResult r = RunGpuscale({"estimate", "--task", task, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["world_size"], 8);
  EXPECT_EQ(doc["gpus"], 8);
  // 70e9 x 2 B / 2 shards / 2^20 = 66757.2 MiB; x 1.2 + 1024 = 81132.6 -> 81133 MiB.
  EXPECT_EQ(doc["memory_mb_per_gpu"], 81133);
  EXPECT_THAT(doc["explanation"].get<std::string>(), HasSubstr("world size = tp 4 x pp 1"));
  EXPECT_EQ(doc["warnings"], json::array());
  EXPECT_EQ(doc.size(), 5u);
}

TEST_F(AllocCliTest, EstimateUsesBackendTotalMemoryOnlyWhenABackendIsGiven) {
  const std::string task = Write(
      "task.json", R"({"model": "Qwen2.5-7B", "parameters": {"gpu-memory-utilization": 0.5}})");
  const std::string inventory =
      Write("small.yaml", "gpus:\n  - {index: 0, memory_total_mb: 24000}\n");
  RunResult without = RunGpuscale({"estimate", "--task", task, "-o", "json"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_EQ(json::parse(without.out)["memory_mb_per_gpu"], 40780);  // ceil(0.5 x 81559)
  RunResult with =
      RunGpuscale({"estimate", "--task", task, "--inventory", inventory, "-o", "json"});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_EQ(json::parse(with.out)["memory_mb_per_gpu"], 12000);
}

TEST_F(AllocCliTest, EstimateBadFileExitsTwoNamingFieldAndLine) {
  const std::string task = Write("bad.yaml", "model: m-7B\nname: x\nparameters:\n  tp: abc\n");
  RunResult r = RunGpuscale({"estimate", "--task", task});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("parameters.tp: expected a positive integer or a list of them (line 4)"));
  RunResult missing = RunGpuscale({"estimate", "--task", (dir_ / "absent.yaml").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("absent.yaml"));
}

TEST_F(AllocCliTest, EstimateTableShowsTheFormula) {
  RunResult r =
      RunGpuscale({"estimate", "--task", std::string(GPUSCALE_SOURCE_DIR) + "/examples/task.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("world size: 8\n"));
  EXPECT_THAT(r.out, HasSubstr("memory per GPU ="));
  EXPECT_THAT(r.out, Not(HasSubstr("warning")));
}

}  // namespace
}  // namespace gpuscale
