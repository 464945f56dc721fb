// End-to-end tests of `gpuscale gpus` and `gpuscale monitor` through the built binary: the
// JSON contract scripts rely on, exit codes, and each backend (a fake `nvidia-smi` script put
// on PATH, a fake libnvidia-ml loaded through GPUSCALE_NVML_LIBRARY, simulated inventories).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using gpuscale::cli_test::kBinary;
using gpuscale::cli_test::RunResult;
using nlohmann::json;

constexpr char kFakeNvml[] = GPUSCALE_BINARY_DIR "/tests/fixtures/libfake_nvml.so";
constexpr char kFakeNvidiaSmi[] = GPUSCALE_SOURCE_DIR "/tests/fixtures/fake_nvidia_smi.sh";

// A scratch directory (PATH entries, inventories, captured output), removed afterwards.
class GpuCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = gpuscale::cli_test::MakeTempDir("gpuscale_gpu_cli_");
    ASSERT_FALSE(dir_.empty());
    fs::create_directory(dir_ / "bin");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Puts the fake nvidia-smi on the PATH this test gives the binary.
  void InstallFakeNvidiaSmi() { fs::create_symlink(kFakeNvidiaSmi, dir_ / "bin" / "nvidia-smi"); }

  fs::path WriteFile(const std::string& name, const std::string& text) {
    return gpuscale::cli_test::WriteFile(dir_, name, text);
  }

  // Runs the binary with `args`; the environment is ours with PATH = the scratch bin
  // directory + /usr/bin:/bin (so a real nvidia-smi never leaks in), GPUSCALE_NVML_LIBRARY
  // pointing nowhere unless `env` overrides it.
  RunResult Run(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
    env.try_emplace("PATH", (dir_ / "bin").string() + ":/usr/bin:/bin");
    env.try_emplace("GPUSCALE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    return gpuscale::cli_test::RunProgram(kBinary, args, dir_,
                                          gpuscale::cli_test::EnvironmentWith(env));
  }

  fs::path dir_;
};

json ParseJson(const RunResult& run) {
  json parsed = json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << "stdout is not JSON: " << run.out << run.err;
  return parsed;
}

TEST_F(GpuCliTest, NvidiaSmiBackendEndToEndJsonContract) {
  InstallFakeNvidiaSmi();
  RunResult run = Run({"gpus", "--backend", "nvidia-smi", "-o", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json doc = ParseJson(run);
  EXPECT_EQ(doc["backend"], "nvidia-smi");
  ASSERT_TRUE(doc["timestamp"].is_string());
  EXPECT_EQ(doc["timestamp"].get<std::string>().back(), 'Z');  // RFC 3339 UTC
  ASSERT_EQ(doc["gpus"].size(), 2u);
  const json& gpu0 = doc["gpus"][0];
  for (const char* key :
       {"index", "uuid", "name", "memory_total_mb", "memory_used_mb", "memory_free_mb",
        "utilization_percent", "temperature_c", "power_draw_w", "score", "processes"}) {
    EXPECT_TRUE(gpu0.contains(key)) << key;
  }
  // The fake's compute-apps line, on the GPU its uuid names.
  EXPECT_EQ(gpu0["processes"], json::parse(R"([{"pid": 4242, "name": "python3",
                                                "used_memory_mb": 10000}])"));
  EXPECT_EQ(doc["gpus"][1]["processes"], json::array());
  EXPECT_EQ(gpu0["uuid"], "GPU-fake-0000");
  EXPECT_EQ(gpu0["memory_used_mb"], 10240);
  EXPECT_DOUBLE_EQ(gpu0["power_draw_w"].get<double>(), 120.5);
  // 0.6 * 30720/40960 + 0.4 * 0.75
  EXPECT_NEAR(gpu0["score"].get<double>(), 0.75, 1e-4);
  EXPECT_TRUE(doc["gpus"][1]["power_draw_w"].is_null());  // [N/A] -> null, not 0
}

TEST_F(GpuCliTest, AutoPicksNvidiaSmiWhenNvmlIsAbsent) {
  InstallFakeNvidiaSmi();
  RunResult run = Run({"gpus", "-o", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(ParseJson(run)["backend"], "nvidia-smi");
}

TEST_F(GpuCliTest, AutoPrefersNvml) {
  InstallFakeNvidiaSmi();
  RunResult run = Run({"gpus", "-o", "json"}, {{"GPUSCALE_NVML_LIBRARY", kFakeNvml}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json doc = ParseJson(run);
  EXPECT_EQ(doc["backend"], "nvml");
  ASSERT_EQ(doc["gpus"].size(), 3u);
  EXPECT_TRUE(doc["gpus"][1]["power_draw_w"].is_null());
}

TEST_F(GpuCliTest, AutoWithoutGpuExitsOneAndSuggestsSimulated) {
  RunResult run = Run({"gpus"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("no GPU found"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--backend simulated"), std::string::npos) << run.err;
  EXPECT_TRUE(run.out.empty());
}

TEST_F(GpuCliTest, MalformedNvidiaSmiOutputExitsTwoNamingTheLine) {
  InstallFakeNvidiaSmi();
  const fs::path output = WriteFile("smi.csv",
                                    "0, GPU-a, X, 100, 10, 90, 5, 40, 50\n"
                                    "1, GPU-b, X, 100, 10, 90, 5, 40, 50, 7\n");
  RunResult run =
      Run({"gpus", "--backend", "nvidia-smi"}, {{"FAKE_NVIDIA_SMI_OUTPUT", output.string()}});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("line 2"), std::string::npos) << run.err;
}

TEST_F(GpuCliTest, SimulatedInventoryJson) {
  const fs::path inventory =
      WriteFile("inv.yaml",
                "gpus:\n"
                "  - {index: 0, memory_total_mb: 1000, memory_used_mb: 250,\n"
                "     utilization_percent: 50, temperature_c: null}\n");
  RunResult run = Run({"gpus", "--inventory", inventory.string(), "-o", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json doc = ParseJson(run);
  EXPECT_EQ(doc["backend"], "simulated");  // --inventory implies the simulated backend
  ASSERT_EQ(doc["gpus"].size(), 1u);
  EXPECT_EQ(doc["gpus"][0]["memory_free_mb"], 750);
  EXPECT_TRUE(doc["gpus"][0]["temperature_c"].is_null());
  EXPECT_NEAR(doc["gpus"][0]["score"].get<double>(), 0.6 * 0.75 + 0.4 * 0.5, 1e-4);
  EXPECT_EQ(doc["gpus"][0]["type"], "H100-80GB");
  EXPECT_TRUE(doc["gpus"][0]["price_per_hour"].is_null());
  EXPECT_EQ(doc["gpus"][0]["spot"], false);

  // --price fills the price of a type whose GPUs name none; a malformed one exits 2.
  RunResult priced =
      Run({"gpus", "--inventory", inventory.string(), "--price", "H100-80GB=2.5", "-o", "json"});
  ASSERT_EQ(priced.exit_code, 0) << priced.err;
  EXPECT_EQ(ParseJson(priced)["gpus"][0]["price_per_hour"], 2.5);
  RunResult bad = Run({"gpus", "--inventory", inventory.string(), "--price", "H100-80GB=cheap"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("expected TYPE=PRICE"), std::string::npos) << bad.err;
}

// A snapshot (`gpus -o json`) loads back as an inventory: the same GPUs; its derived fields
// are checked against what they derive from.
TEST_F(GpuCliTest, AJsonSnapshotLoadsAsAnInventory) {
  const fs::path inventory =
      WriteFile("inv.yaml", "gpus:\n  - {index: 0, memory_total_mb: 1000, memory_used_mb: 250}\n"
                            "  - {index: 1, memory_total_mb: 2000, utilization_percent: 10}\n");
  RunResult first = Run({"gpus", "--inventory", inventory.string(), "-o", "json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const fs::path snapshot = WriteFile("snapshot.json", first.out);
  RunResult again = Run({"gpus", "--inventory", snapshot.string(), "-o", "json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  json a = ParseJson(first), b = ParseJson(again);
  a.erase("timestamp");
  b.erase("timestamp");
  EXPECT_EQ(a, b);

  json tampered = ParseJson(first);
  tampered["gpus"][0]["memory_free_mb"] = 999;
  const fs::path bad = WriteFile("tampered.json", tampered.dump(2));
  RunResult refused = Run({"gpus", "--inventory", bad.string()});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("gpus[0].memory_free_mb: memory_free_mb 999 is not "
                             "memory_total_mb - memory_used_mb = 750"),
            std::string::npos)
      << refused.err;
}

TEST_F(GpuCliTest, DefaultSimulatedTableIsReadable) {
  RunResult run = Run({"gpus", "--backend", "simulated"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("INDEX"), std::string::npos);
  EXPECT_NE(run.out.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(run.out.find("0 / 81559"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("H100-80GB             -"), std::string::npos)
      << "type, and '-' for an unknown price:\n"
      << run.out;
}

// Like nvidia-smi, the table lists each GPU's compute processes below the GPUs.
TEST_F(GpuCliTest, TableListsTheProcessesOnEachGpu) {
  InstallFakeNvidiaSmi();
  RunResult run = Run({"gpus", "--backend", "nvidia-smi"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("PID"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("4242        10000  python3"), std::string::npos) << run.out;
  RunResult simulated = Run({"gpus", "--backend", "simulated"});
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  EXPECT_EQ(simulated.out.find("PID"), std::string::npos) << "no table without processes";
}

TEST_F(GpuCliTest, BadInventoryExitsTwoNamingFieldAndLine) {
  const fs::path inventory = WriteFile("bad.yaml", "gpus:\n  - index: 0\n    memory_used_mb: x\n");
  RunResult run = Run({"gpus", "--backend", "simulated", "--inventory", inventory.string()});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("gpus[0].memory_used_mb"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("line 3"), std::string::npos) << run.err;
}

TEST_F(GpuCliTest, UsageErrorsExitTwoNamingTheFlag) {
  RunResult bad_backend = Run({"gpus", "--backend", "cuda"});
  EXPECT_EQ(bad_backend.exit_code, 2);
  EXPECT_NE(bad_backend.err.find("--backend"), std::string::npos) << bad_backend.err;
  RunResult bad_interval = Run({"monitor", "--backend", "simulated", "--interval", "0"});
  EXPECT_EQ(bad_interval.exit_code, 2);
  EXPECT_NE(bad_interval.err.find("--interval"), std::string::npos) << bad_interval.err;
  RunResult missing_file = Run({"gpus", "--inventory", (dir_ / "none.yaml").string()});
  EXPECT_EQ(missing_file.exit_code, 2);
  EXPECT_NE(missing_file.err.find("--inventory"), std::string::npos) << missing_file.err;
}

TEST_F(GpuCliTest, MonitorJsonContractAndProgress) {
  RunResult run = Run({"monitor", "--backend", "simulated", "--interval", "0.05", "--duration",
                       "0.3", "-o", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json doc = ParseJson(run);
  EXPECT_GE(doc["monitoring_duration_seconds"].get<double>(), 0.3);
  const int samples = doc["sample_count"].get<int>();
  EXPECT_GE(samples, 1);
  ASSERT_EQ(doc["gpu_stats"].size(), 4u);
  const json& gpu = doc["gpu_stats"]["2"];
  EXPECT_EQ(gpu["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu["utilization"]["samples"], samples);
  for (const char* metric :
       {"utilization", "memory_used_mb", "memory_usage_percent", "temperature_c", "power_draw_w"}) {
    for (const char* stat : {"min", "max", "mean"}) {
      EXPECT_TRUE(gpu[metric].contains(stat)) << metric << "." << stat;
    }
  }
  EXPECT_DOUBLE_EQ(gpu["temperature_c"]["mean"].get<double>(), 34.0);
  EXPECT_NE(run.err.find("monitoring:"), std::string::npos);  // progress on stderr
}

TEST_F(GpuCliTest, MonitorThroughFakeNvidiaSmiTable) {
  InstallFakeNvidiaSmi();
  RunResult run =
      Run({"monitor", "--backend", "nvidia-smi", "--interval", "0.05", "--duration", "0.2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("NVIDIA A100-SXM4-40GB"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("25/25/25%"), std::string::npos) << run.out;
}

}  // namespace
