// `gpuscale bench --trace`: how malformed trace rows are handled before any request is sent.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/command.h"

namespace gpuscale::cli {
namespace {

namespace fs = std::filesystem;

TEST(BenchCommandTest, BadTraceRowsFailUnlessSkippedAndAreThenCounted) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("gpuscale_bench_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::create_directories(dir);
  const std::string trace = (dir / "trace.csv").string();
  std::ofstream(trace) << "arrival_s,input_tokens,output_tokens\n0,10,5\nbad,1,1\n0.5,10,5\n";
  // Port 9 (discard) on loopback: nothing answers, so the run ends at the endpoint check,
  // after the trace was read.
  const std::vector<std::string> args = {"bench",      "--url",   "http://127.0.0.1:9",
                                         "--trace",    trace,     "--duration",
                                         "1",          "--no-progress"};
  std::ostringstream out, err;
  EXPECT_EQ(RunCli(args, out, err), kExitUsage);
  EXPECT_NE(err.str().find("line 3: arrival_s: expected a non-negative number, got 'bad' (or "
                           "--skip-bad-rows to skip it)"),
            std::string::npos)
      << err.str();

  auto skipping = args;
  skipping.push_back("--skip-bad-rows");
  std::ostringstream out2, err2;
  RunCli(skipping, out2, err2);
  EXPECT_NE(err2.str().find("bench: 1 bad trace row skipped, the first: line 3: arrival_s"),
            std::string::npos)
      << err2.str();
  EXPECT_EQ(err2.str().find("or --skip-bad-rows"), std::string::npos) << err2.str();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuscale::cli
