#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/command.h"

namespace gpuscale::cli {
namespace {

namespace fs = std::filesystem;

class SimulateCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpuscale_sim_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream trace(dir_ / "trace.csv");
    trace << "arrival_s,input_tokens,output_tokens\n";
    for (int i = 0; i < 3000; ++i) trace << i * 0.05 << "," << 200 + (i * 37) % 900 << ","
                                         << 20 + (i * 53) % 300 << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const char* name) const { return (dir_ / name).string(); }
  int Run(const std::vector<std::string>& args, std::string* out, std::string* err = nullptr) {
    std::ostringstream o, e;
    int code = RunCli(args, o, e);
    *out = o.str();
    if (err) *err = e.str();
    return code;
  }
  std::string Config(const std::string& name) const {
    return std::string(GPUSCALE_SOURCE_DIR) + "/examples/sim/conv/" + name + ".yaml";
  }

  fs::path dir_;
};

TEST_F(SimulateCommandTest, SameInputsGiveByteIdenticalOutput) {
  std::vector<std::string> args = {"simulate", "--config", Config("slo"), "--trace",
                                   Path("trace.csv"), "--rate-scale", "2", "--seed", "7",
                                   "-o", "json", "--timeline", Path("a.csv")};
  std::string first, second;
  ASSERT_EQ(Run(args, &first), 0);
  args.back() = Path("b.csv");
  ASSERT_EQ(Run(args, &second), 0);
  EXPECT_EQ(first, second);
  EXPECT_NE(first.find("\"slo_attainment\""), std::string::npos) << first;
  EXPECT_NE(first.find("\"fresh_replica_misses\""), std::string::npos) << first;
  EXPECT_NE(first.find("\"oracle_gpu_hours\""), std::string::npos);
  EXPECT_NE(first.find("\"slo_target\": 0.99"), std::string::npos) << first;
  // The oracle's plan: one figure per 60 s bucket of the run (150 s of trace at x2), and
  // where the run stood against it.
  const auto plan_at = first.find("\"oracle_plan\"");
  ASSERT_NE(plan_at, std::string::npos) << first;
  for (const char* key : {"\"bucket_seconds\": 60", "\"replicas\": [", "\"mean_replicas\"",
                          "\"run_mean_ready_replicas\"", "\"replica_hours_above\"",
                          "\"replica_hours_below\""}) {
    EXPECT_NE(first.find(key, plan_at), std::string::npos) << key << " in " << first;
  }
  // The timeline for charts: a 75-s run fits 500 points at 1 s per bucket.
  const auto timeline_at = first.find("\"timeline\"");
  ASSERT_NE(timeline_at, std::string::npos) << first;
  for (const char* key : {"\"bucket_seconds\": 1", "\"time_s\": [", "\"arrival_rate\": [",
                          "\"replicas\": [", "\"ready_replicas\": ["}) {
    EXPECT_NE(first.find(key, timeline_at), std::string::npos) << key << " in " << first;
  }
  std::ifstream a(Path("a.csv")), b(Path("b.csv"));
  std::stringstream ta, tb;
  ta << a.rdbuf();
  tb << b.rdbuf();
  EXPECT_EQ(ta.str(), tb.str());
  EXPECT_EQ(ta.str().rfind("time_s,arrival_rate,desired", 0), 0u);
}

TEST_F(SimulateCommandTest, ASeedAtRateScaleOneIsSaidToChangeNothing) {
  std::string out, err;
  const std::vector<std::string> args = {"simulate",         "--config",        Config("slo"),
                                         "--trace",          Path("trace.csv"), "--no-oracle",
                                         "--no-static-fleet"};
  std::vector<std::string> seeded = args;
  seeded.insert(seeded.end(), {"--seed", "7"});
  ASSERT_EQ(Run(seeded, &out, &err), 0) << err;
  EXPECT_NE(err.find("--seed has no effect at --rate-scale 1"), std::string::npos) << err;
  seeded.insert(seeded.end(), {"--rate-scale", "2"});
  ASSERT_EQ(Run(seeded, &out, &err), 0) << err;
  EXPECT_EQ(err.find("--seed has no effect"), std::string::npos) << err;
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  EXPECT_EQ(err.find("--seed has no effect"), std::string::npos) << "no --seed, nothing to say";
}

TEST_F(SimulateCommandTest, CompareWritesTableAndSvg) {
  std::string out, err;
  int code = Run({"simulate", "--compare", Config("slo") + "," + Config("ratio"), "--trace",
                  Path("trace.csv"), "--svg", Path("chart.svg")},
                 &out, &err);
  ASSERT_EQ(code, 0) << err;
  EXPECT_NE(out.find("slo"), std::string::npos);
  EXPECT_NE(out.find("ratio"), std::string::npos);
  EXPECT_NE(out.find("oracle (lower bound)"), std::string::npos);
  EXPECT_NE(out.find("static fleet ("), std::string::npos) << out;
  ASSERT_TRUE(fs::exists(Path("chart.svg")));
  std::ifstream svg(Path("chart.svg"));
  std::stringstream chart;
  chart << svg.rdbuf();
  EXPECT_NE(chart.str().find(">static fleet ("), std::string::npos);
  EXPECT_NE(out.find("reactive (+"), std::string::npos) << out;
  EXPECT_NE(chart.str().find(">reactive</text>"), std::string::npos);
}

// A file that cannot be written is a failure (exit 1) naming the flag and the cause, not a
// usage error: the command line was right.
TEST_F(SimulateCommandTest, AnOutputFileThatCannotBeWrittenFailsWithExitOneNamingTheCause) {
  std::string out, err;
  const int code = Run({"simulate", "--compare", Config("slo") + "," + Config("ratio"), "--trace",
                        Path("trace.csv"), "--svg", Path("no-such-dir/chart.svg")},
                       &out, &err);
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("--svg: cannot write"), std::string::npos) << err;
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
}

TEST_F(SimulateCommandTest, CompareNamesConfigsOfTheSameStemApart) {
  const std::string code_slo = std::string(GPUSCALE_SOURCE_DIR) + "/examples/sim/code/slo.yaml";
  std::string out, err;
  ASSERT_EQ(Run({"simulate", "--compare", Config("slo") + "," + code_slo + "," + Config("slo"),
                 "--trace", Path("trace.csv"), "--svg", Path("chart.svg"), "--no-oracle",
                 "--no-static-fleet", "-o", "json"},
                &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("\"name\": \"conv/slo\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"name\": \"code/slo\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"name\": \"conv/slo#2\""), std::string::npos) << out;
  // Without the oracle the ratio column says so instead of showing 0.
  ASSERT_EQ(Run({"simulate", "--compare", Config("slo") + "," + Config("ratio"), "--trace",
                 Path("trace.csv"), "--svg", Path("chart.svg"), "--no-oracle",
                 "--no-static-fleet"},
                &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("\nslo "), std::string::npos) << out;  // distinct stems stay bare
  EXPECT_EQ(out.find(" 0.000 "), std::string::npos) << out;
}

TEST_F(SimulateCommandTest, ReportsTheReactiveReferenceWithTheOracle) {
  std::vector<std::string> args = {"simulate", "--config", Config("slo"), "--trace",
                                   Path("trace.csv"), "--rate-scale", "4", "-o", "json"};
  std::string out, err;
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  auto at = out.find("\"reactive_plan\"");
  ASSERT_NE(at, std::string::npos) << out;
  // 60 s buckets and the examples' 60 s cold start: each bucket follows the one 120 s
  // before its start.
  for (const char* key : {"\"lag_seconds\": 120", "\"hold_seconds\"", "\"spare_replicas\"",
                          "\"gpu_hours\"", "\"gpu_hours_over_oracle\"", "\"attainment\"",
                          "\"meets_target\"", "\"replicas\": ["}) {
    EXPECT_NE(out.find(key, at), std::string::npos) << key << " in " << out;
  }
  ASSERT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("trace.csv")}, &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("reactive_plan        "), std::string::npos) << out;
  EXPECT_NE(out.find(" ending 60 s before it + "), std::string::npos) << out;
  args.push_back("--no-oracle");  // it is computed from the oracle's fleet replays
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  EXPECT_EQ(out.find("reactive_plan"), std::string::npos) << out;
}

TEST_F(SimulateCommandTest, ReportsTheSmallestStaticFleetMeetingTheTargetUnlessSkipped) {
  std::vector<std::string> args = {"simulate", "--config", Config("slo"), "--trace",
                                   Path("trace.csv"), "--rate-scale", "4", "-o", "json"};
  std::string out, err;
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  auto fleet_at = out.find("\"static_fleet\"");
  ASSERT_NE(fleet_at, std::string::npos) << out;
  for (const char* key : {"\"replicas\"", "\"gpu_hours\"", "\"attainment\"",
                          "\"meets_target\": true"}) {
    EXPECT_NE(out.find(key, fleet_at), std::string::npos) << key << " in " << out;
  }
  EXPECT_NE(err.find("simulate: static fleet: "), std::string::npos) << err;  // progress

  args.push_back("--no-static-fleet");
  args.push_back("--no-oracle");
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  EXPECT_EQ(out.find("static_fleet"), std::string::npos) << out;
  EXPECT_EQ(out.find("oracle"), std::string::npos) << out;

  ASSERT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("trace.csv"),
                 "--no-oracle"},
                &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("static_fleet         1 replica, "), std::string::npos) << out;
}

TEST_F(SimulateCommandTest, JudgesEveryRunOfACompareAgainstOneStaticFrontier) {
  std::string out, err;
  ASSERT_EQ(Run({"simulate", "--compare", Config("slo") + "," + Config("hpa"), "--trace",
                 Path("trace.csv"), "--rate-scale", "4", "--no-oracle", "--svg",
                 Path("chart.svg"), "-o", "json"},
                &out, &err),
            0)
      << err;
  const auto runs = nlohmann::json::parse(out);
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs) {
    ASSERT_TRUE(run.contains("static_frontier")) << run.dump();
    ASSERT_TRUE(run.contains("dominated_by")) << run.dump();
    ASSERT_TRUE(run.contains("cost_vs_static")) << run.dump();
    EXPECT_EQ(run["static_frontier"], runs[0]["static_frontier"]);  // one frontier for all
    const double gpu_hours = run["gpu_hours"].get<double>();
    const double attainment = run["slo_attainment"].get<double>();
    ASSERT_TRUE(run["static_fleet"]["meets_target"].get<bool>());
    EXPECT_NEAR(run["cost_vs_static"].get<double>(),
                gpu_hours / run["static_fleet"]["gpu_hours"].get<double>(), 1e-12);
    // dominated_by is the first fleet of the frontier at most as costly and at least as good.
    nlohmann::json beats;
    for (const auto& p : run["static_frontier"]) {
      const double cost = p["gpu_hours"].get<double>(), got = p["attainment"].get<double>();
      if (cost <= gpu_hours && got >= attainment && (cost < gpu_hours || got > attainment)) {
        beats = p;
        break;
      }
    }
    EXPECT_EQ(run["dominated_by"], beats) << run["name"];
  }
  // Each size was replayed once for both runs, and every replay is on the frontier.
  std::set<std::string> sizes;
  size_t replays = 0;
  for (size_t at = err.find("simulate: static fleet: "); at != std::string::npos;
       at = err.find("simulate: static fleet: ", at + 1)) {
    ++replays;
    sizes.insert(err.substr(at, err.find(" replicas", at) - at));
  }
  EXPECT_EQ(replays, sizes.size()) << err;
  EXPECT_EQ(replays, runs[0]["static_frontier"].size()) << err;

  ASSERT_EQ(Run({"simulate", "--compare", Config("slo") + "," + Config("hpa"), "--trace",
                 Path("trace.csv"), "--rate-scale", "4", "--no-oracle", "--svg",
                 Path("chart.svg")},
                &out, &err),
            0)
      << err;
  EXPECT_NE(out.find(" peak  /static dominated_by\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nstatic frontier (replicas: attainment at GPU-hours): "), std::string::npos)
      << out;
  ASSERT_EQ(Run({"simulate", "--config", Config("hpa"), "--trace", Path("trace.csv"),
                 "--rate-scale", "4", "--no-oracle"},
                &out, &err),
            0)
      << err;
  for (const char* line : {"\nstatic_frontier      ", "\ndominated_by         ",
                           "\ncost_vs_static       "}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << " in " << out;
  }
}

TEST_F(SimulateCommandTest, AnAutoWarmStartIsSizedFromTheTraceAndReported) {
  std::ifstream conv(Config("hpa"));
  std::stringstream text;
  text << conv.rdbuf();
  std::string yaml = text.str();
  const std::string fixed = "initial_replicas: 8";
  const auto at = yaml.find(fixed);
  ASSERT_NE(at, std::string::npos) << yaml;
  yaml.replace(at, fixed.size(), "initial_replicas: auto");
  std::ofstream(Path("auto.yaml")) << yaml;
  std::string out, err;
  ASSERT_EQ(Run({"simulate", "--config", Path("auto.yaml"), "--trace", Path("trace.csv"),
                 "--rate-scale", "4", "--no-oracle", "-o", "json"},
                &out, &err),
            0)
      << err;
  // 80 req/s from the first second: one replica is not warm for it, and the warm start is
  // the static fleet sized on those first minutes (here the whole 150 s trace).
  const auto fleet_at = out.find("\"static_fleet\": {\n    \"replicas\": ");
  ASSERT_NE(fleet_at, std::string::npos) << out;
  const int fleet = std::stoi(out.substr(out.find(": ", fleet_at + 20) + 2));
  EXPECT_GT(fleet, 1);
  EXPECT_NE(out.find(fmt::format("\"initial_replicas\": {},", fleet)), std::string::npos) << out;
  EXPECT_NE(err.find(fmt::format("simulate: auto: initial_replicas auto: {} (the static fleet "
                                 "for the trace's first 300 s)",
                                 fleet)),
            std::string::npos)
      << err;
}

TEST_F(SimulateCommandTest, BadConfigNamesFileFieldAndLine) {
  std::ofstream(Path("bad.yaml")) << "service:\n  min_replicas: many\npolicy: {family: slo}\n";
  std::string out, err;
  EXPECT_EQ(Run({"simulate", "--config", Path("bad.yaml"), "--trace", Path("trace.csv")}, &out,
                &err),
            kExitUsage);
  EXPECT_NE(err.find("service.min_replicas"), std::string::npos) << err;
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;
}

TEST_F(SimulateCommandTest, RateModeFlagsAreCheckedAndChangeTheTrace) {
  std::string out, err;
  EXPECT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("trace.csv"),
                 "--rate-scale", "3", "--rate-mode", "poisson"},
                &out, &err),
            kExitUsage);
  EXPECT_NE(err.find("--rate-mode"), std::string::npos) << err;
  EXPECT_NE(err.find("streams or replicate"), std::string::npos) << err;
  EXPECT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("trace.csv"),
                 "--rate-scale", "3", "--stream-shift", "0"},
                &out, &err),
            kExitUsage);
  EXPECT_NE(err.find("--stream-shift"), std::string::npos) << err;
  std::string streams, replicate;
  const std::vector<std::string> base = {"simulate", "--config", Config("slo"), "--trace",
                                         Path("trace.csv"), "--rate-scale", "3", "-o", "json",
                                         "--no-oracle", "--rate-mode"};
  auto with = [&](const char* mode) {
    auto args = base;
    args.push_back(mode);
    return args;
  };
  ASSERT_EQ(Run(with("streams"), &streams), 0);
  ASSERT_EQ(Run(with("replicate"), &replicate), 0);
  EXPECT_NE(streams.find("\"requests\": 9000"), std::string::npos) << streams;
  EXPECT_NE(replicate.find("\"requests\": 9000"), std::string::npos) << replicate;
  EXPECT_NE(streams, replicate);  // same requests, other arrival times
}

TEST_F(SimulateCommandTest, BadTraceRowsFailUnlessSkippedAndThenAreCountedAndShown) {
  {
    std::ofstream trace(Path("bad_rows.csv"));
    trace << "arrival_s,input_tokens,output_tokens\n";
    for (int i = 0; i < 600; ++i) {
      trace << i * 0.1 << "," << (i == 7 ? "many" : "300") << ",40\n";
      if (i == 300) trace << "oops\n";
    }
  }
  std::string out, err;
  const std::vector<std::string> base = {"simulate", "--config", Config("slo"), "--trace",
                                         Path("bad_rows.csv"), "--no-oracle", "--no-static-fleet"};
  EXPECT_EQ(Run(base, &out, &err), kExitUsage);
  EXPECT_NE(err.find("--trace"), std::string::npos) << err;
  EXPECT_NE(err.find("line 9: input_tokens: expected a non-negative integer, got 'many'"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("--skip-bad-rows"), std::string::npos) << err;  // says how to go on

  auto skipping = base;
  skipping.push_back("--skip-bad-rows");
  ASSERT_EQ(Run(skipping, &out, &err), 0) << err;
  const std::string line =
      "trace: 2 bad rows skipped (--skip-bad-rows), the first: line 9: input_tokens: expected "
      "a non-negative integer, got 'many'\n";
  EXPECT_NE(out.find(line), std::string::npos) << out;
  EXPECT_NE(err.find("simulate: " + line), std::string::npos) << err;
  EXPECT_NE(out.find("requests             599"), std::string::npos) << out;
  // The report starts with what was replayed.
  EXPECT_EQ(out.rfind("trace                plain_csv, 599 requests over 60 s (10.00 req/s), "
                      "mean 300 prompt / 40 output tokens\n",
                      0),
            0u)
      << out;

  skipping.insert(skipping.end(), {"-o", "json"});
  ASSERT_EQ(Run(skipping, &out, &err), 0) << err;
  EXPECT_NE(out.find("\"trace\": {\n    \"format\": \"plain_csv\",\n    \"requests\": 599,"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"skipped_rows\": 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\"requests\": 599,"), std::string::npos) << out;

  // A clean trace reports no skipped rows and no line.
  ASSERT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("trace.csv"),
                 "--no-oracle", "--no-static-fleet", "--skip-bad-rows"},
                &out, &err),
            0);
  EXPECT_EQ(out.find("bad row"), std::string::npos) << out;

  // Every row bad (e.g. the wrong --trace-format): an error, not an empty report.
  std::ofstream(Path("all_bad.csv")) << "arrival_s,input_tokens,output_tokens\nx,1,1\ny,2,2\n";
  EXPECT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("all_bad.csv"),
                 "--skip-bad-rows"},
                &out, &err),
            kExitUsage);
  EXPECT_NE(err.find("all 2 rows were bad, the first: line 2: arrival_s"), std::string::npos)
      << err;
}

// Issue 47: a priced run's JSON carries its cost and each variant's share, consistent with
// the prices in the config (a variant's cost is its GPU-hours at its price, the run's is their
// sum), and a single-shape run still lists its one implicit variant.
TEST_F(SimulateCommandTest, JsonCarriesTheCostOfEachVariant) {
  // Llama-2-70B: the model the simulator has both GPU types' profiles for.
  std::ofstream(Path("mixed.yaml")) << R"(cluster: {nodes: 1, gpus_per_node: 8}
service:
  name: mixed
  model: llama-2-70b
  min_replicas: 1
  max_replicas: 4
  initial_replicas: 2
  cold_start_seconds: 30
  variants:
    - {name: h100, gpu_type: H100, gpus_per_replica: 4, price_per_gpu_hour: 4}
    - {name: a100, gpu_type: A100, gpus_per_replica: 4, price_per_gpu_hour: 2}
replica_model: {gpu: h100}
slo: {ttft_seconds: 1, tpot_seconds: 0.05, target_ratio: 0.99}
policy: {family: slo}
)";
  std::string out, err;
  ASSERT_EQ(Run({"simulate", "--config", Path("mixed.yaml"), "--trace", Path("trace.csv"),
                 "--no-oracle", "--no-static-fleet", "-o", "json"},
                &out, &err),
            0)
      << err;
  const auto run = nlohmann::json::parse(out);
  ASSERT_TRUE(run.contains("variants")) << out;
  ASSERT_EQ(run["variants"].size(), 2u) << out;
  const std::map<std::string, double> price = {{"h100", 4}, {"a100", 2}};
  double cost = 0, gpu_hours = 0;
  int placed = 0;
  for (const auto& v : run["variants"]) {
    const std::string name = v["name"].get<std::string>();
    ASSERT_TRUE(price.contains(name)) << v.dump();
    EXPECT_NEAR(v["cost"].get<double>(), v["gpu_hours"].get<double>() * price.at(name), 1e-9)
        << v.dump();
    cost += v["cost"].get<double>();
    gpu_hours += v["gpu_hours"].get<double>();
    placed += v["replicas_placed"].get<int>();
  }
  EXPECT_GE(placed, 2) << out;  // the two initial replicas at least
  EXPECT_GT(cost, 0) << out;
  EXPECT_NEAR(run["cost"].get<double>(), cost, 1e-9) << out;
  EXPECT_NEAR(run["gpu_hours"].get<double>(), gpu_hours, 1e-9) << out;
  EXPECT_EQ(run["lost_to_preemption"].get<int>(), 0) << out;

  ASSERT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("trace.csv"), "--no-oracle",
                 "--no-static-fleet", "-o", "json"},
                &out, &err),
            0)
      << err;
  const auto single = nlohmann::json::parse(out);
  ASSERT_EQ(single["variants"].size(), 1u) << out;
  EXPECT_EQ(single["variants"][0]["name"], "default");
  EXPECT_EQ(single["cost"].get<double>(), 0);
}

TEST_F(SimulateCommandTest, UnknownTraceFormatNamesTheFlag) {
  std::ofstream(Path("trace.csv")) << "arrival_s,input_tokens,output_tokens\n0,10,10\n";
  std::string out, err;
  EXPECT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("trace.csv"),
                 "--trace-format", "azure"},
                &out, &err),
            kExitUsage);
  EXPECT_NE(err.find("--trace-format: unknown trace format 'azure': expected auto, azure_csv"),
            std::string::npos)
      << err;
}

TEST_F(SimulateCommandTest, MissingTraceIsAUsageError) {
  std::string out, err;
  EXPECT_EQ(Run({"simulate", "--config", Config("slo"), "--trace", Path("none.csv")}, &out, &err),
            kExitUsage);
  EXPECT_NE(err.find("--trace"), std::string::npos) << err;
}

}  // namespace
}  // namespace gpuscale::cli
