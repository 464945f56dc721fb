// The replica emulator and the load generator together: `bench` against an in-process
// emulator (library and CLI, JSON shape), its numbers against the emulator's own /metrics,
// trace replay, and the `gpuscale emulate` binary draining on SIGTERM. Every server binds
// 127.0.0.1 port 0 and is stopped by the test that started it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "cli_test_util.h"
#include "emulator/emulator_server.h"
#include "loadgen/bench_runner.h"
#include "metrics/metric_lookup.h"
#include "metrics/prometheus_text_parser.h"

extern char** environ;

namespace gpuscale {
namespace {

using nlohmann::json;

using cli_test::kBinary;

emulator::EmulatorOptions FastEmulator() {
  emulator::EmulatorOptions options;
  options.model_name = "emu";
  options.startup_seconds = 0;
  options.engine.decode_ms_base = 2;
  options.engine.decode_ms_per_seq = 0.1;
  options.engine.prefill_ms_per_1k_tokens = 10;
  options.engine.max_batch_size = 4;
  options.engine.kv_cache_tokens = 8192;
  options.http_threads = 16;
  return options;
}

class EmulatorBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<emulator::EmulatorServer>> server =
        emulator::EmulatorServer::Start(FastEmulator());
    ASSERT_TRUE(server.has_value()) << server.error().ToString();
    server_ = std::move(*server);
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override { server_->Shutdown(); }

  // Runs the CLI in-process; returns {exit code, stdout}.
  std::pair<int, std::string> Cli(std::vector<std::string> args) {
    cli_test::RunResult r = cli_test::RunInProcess(args);
    last_err_ = std::move(r.err);
    return {r.exit_code, std::move(r.out)};
  }

  std::unique_ptr<emulator::EmulatorServer> server_;
  std::string url_;
  std::string last_err_;
};

void ExpectOrdered(const loadgen::LatencySummary& s, const char* name) {
  EXPECT_GT(s.count, 0) << name;
  EXPECT_GT(s.min, 0) << name;
  EXPECT_LE(s.min, s.p50) << name;
  EXPECT_LE(s.p50, s.p90) << name;
  EXPECT_LE(s.p90, s.p99) << name;
  EXPECT_LE(s.p99, s.max) << name;
  EXPECT_LT(s.max, 5.0) << name;  // nothing near a timeout
}

TEST_F(EmulatorBenchTest, ClosedLoopBenchMeasuresTheEmulator) {
  loadgen::BenchOptions options;
  options.url = url_;
  options.concurrency = 6;  // above max_batch_size 4: some requests must wait
  options.duration_seconds = 2;
  options.workload.input = {200, 50};
  options.workload.output = {24, 0};
  Result<loadgen::BenchReport> report = loadgen::RunBench(options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();

  EXPECT_EQ(report->model, "emu");
  EXPECT_GT(report->requests_completed, 10);
  EXPECT_EQ(report->requests_failed, 0) << report->first_error_detail;
  EXPECT_EQ(report->output_tokens_total, 24 * report->requests_completed);
  EXPECT_GT(report->request_throughput_per_second, 0);
  EXPECT_GT(report->output_token_throughput_per_second, 0);
  ExpectOrdered(report->ttft_seconds, "ttft");
  ExpectOrdered(report->inter_token_latency_seconds, "itl");
  ExpectOrdered(report->e2e_latency_seconds, "e2e");
  EXPECT_LT(report->ttft_seconds.p50, report->e2e_latency_seconds.p50);
  EXPECT_EQ(report->inter_token_latency_seconds.count, 23 * report->requests_completed);

  // The emulator counted the same requests and tokens.
  httplib::Client client("127.0.0.1", server_->port());
  httplib::Result res = client.Get("/metrics");
  ASSERT_TRUE(res);
  Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(res->body);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:request_success_total", {}, metrics::Combine::kSum),
            report->requests_completed);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:generation_tokens_total"),
            report->output_tokens_total);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:prompt_tokens_total"), report->input_tokens_total);
}

TEST_F(EmulatorBenchTest, CliJsonHasTheDocumentedShape) {
  auto [code, out] = Cli({"bench", "--url", url_, "--rate", "25", "--seed", "3", "--duration", "1",
                          "--input-tokens", "50", "--output-tokens", "8", "-o", "json"});
  ASSERT_EQ(code, 0) << last_err_;
  EXPECT_NE(last_err_.find("bench: "), std::string::npos);  // the progress line
  const json report = json::parse(out);
  std::set<std::string> keys;
  for (const auto& [key, value] : report.items()) keys.insert(key);
  const std::set<std::string> expected = {"url",
                                          "model",
                                          "mode",
                                          "concurrency",
                                          "rate_per_second",
                                          "seed",
                                          "duration_seconds",
                                          "elapsed_seconds",
                                          "requests_sent",
                                          "requests_completed",
                                          "requests_failed",
                                          "errors",
                                          "input_tokens_total",
                                          "output_tokens_total",
                                          "request_throughput_per_second",
                                          "output_token_throughput_per_second",
                                          "input_token_throughput_per_second",
                                          "ttft_seconds",
                                          "inter_token_latency_seconds",
                                          "time_per_output_token_seconds",
                                          "e2e_latency_seconds",
                                          "requests_queued",
                                          "queue_wait_max_seconds"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(report["mode"], "rate");
  EXPECT_EQ(report["rate_per_second"], 25.0);
  EXPECT_EQ(report["concurrency"], 256);
  EXPECT_TRUE(report["errors"].is_object());
  EXPECT_GT(report["requests_completed"].get<int>(), 0);
  EXPECT_GT(report["output_token_throughput_per_second"].get<double>(), 0);
  for (const char* summary : {"ttft_seconds", "inter_token_latency_seconds",
                              "time_per_output_token_seconds", "e2e_latency_seconds"}) {
    for (const char* field : {"p50", "p90", "p99", "mean", "min", "max"}) {
      EXPECT_TRUE(report[summary][field].is_number()) << summary << "." << field;
    }
    EXPECT_GT(report[summary]["count"].get<int>(), 0) << summary;
  }
}

// One request in flight at a time against arrivals at 50 req/s of 40 tokens (~90 ms each):
// most arrivals wait for the client, and both outputs say so.
TEST_F(EmulatorBenchTest, ArrivalsHeldByTheConcurrencyLimitAreReported) {
  std::vector<std::string> args = {"bench", "--url", url_, "--rate", "50", "--duration", "0.5"};
  args.insert(args.end(), {"--concurrency", "1", "--no-progress", "--output-tokens", "40"});
  auto [code, table] = Cli(args);
  ASSERT_EQ(code, 0) << last_err_;
  EXPECT_NE(table.find("waited for a free client (all 1 in flight)"), std::string::npos) << table;
  std::vector<std::string> json_args = args;
  json_args.insert(json_args.end(), {"-o", "json"});
  auto [json_code, out] = Cli(json_args);
  ASSERT_EQ(json_code, 0) << last_err_;
  const json report = json::parse(out);
  EXPECT_GT(report["requests_queued"].get<int>(), 0);
  EXPECT_GT(report["queue_wait_max_seconds"].get<double>(), 0.05);
}

TEST_F(EmulatorBenchTest, ReplaysATrace) {
  const std::filesystem::path trace = std::filesystem::temp_directory_path() /
                                      ("gpuscale_bench_trace_" + std::to_string(getpid()) + ".csv");
  std::ofstream(trace) << "arrival_s,input_tokens,output_tokens\n"
                          "0.0,100,5\n0.1,200,6\n0.2,300,7\n0.3,10,3\n5.0,10,3\n";
  const std::string outcomes = trace.string() + ".jsonl";
  auto [code, out] = Cli({"bench", "--url", url_, "--trace", trace.string(), "--duration", "1",
                          "--no-progress", "-o", "json", "--outcomes", outcomes});
  std::filesystem::remove(trace);
  ASSERT_EQ(code, 0) << last_err_;
  const json report = json::parse(out);
  EXPECT_EQ(report["mode"], "trace");
  EXPECT_EQ(report["requests_completed"], 4);  // the 5.0 s arrival is past --duration
  EXPECT_EQ(report["input_tokens_total"], 610);
  EXPECT_EQ(report["output_tokens_total"], 21);
  // --outcomes: one line per request, with the trace's lengths and its due times.
  std::ifstream lines(outcomes);
  std::vector<json> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(json::parse(line));
  std::filesystem::remove(outcomes);
  ASSERT_EQ(rows.size(), 4u);
  int input_tokens = 0;
  double latest_due = 0;
  for (const json& row : rows) {
    EXPECT_TRUE(row["ok"].get<bool>()) << row.dump();
    EXPECT_GT(row["e2e_seconds"].get<double>(), row["ttft_seconds"].get<double>());
    input_tokens += row["input_tokens"].get<int>();
    latest_due = std::max(latest_due, row["due_seconds"].get<double>());
  }
  EXPECT_EQ(input_tokens, 610);
  EXPECT_NEAR(latest_due, 0.3, 0.05);
}

TEST_F(EmulatorBenchTest, CliReportsUnreachableServersAndBadFlags) {
  server_->Shutdown();
  auto [code, out] = Cli({"bench", "--url", url_, "--duration", "1", "--no-progress"});
  EXPECT_EQ(code, cli::kExitFailure);
  EXPECT_NE(last_err_.find("--url"), std::string::npos) << last_err_;

  std::tie(code, out) = Cli({"bench", "--url", url_, "--duration", "1", "--rate", "-2"});
  EXPECT_EQ(code, cli::kExitUsage);
  EXPECT_NE(last_err_.find("--rate"), std::string::npos) << last_err_;
  std::tie(code, out) = Cli({"bench", "--url", url_, "--duration", "1", "--trace", "/nonexistent"});
  EXPECT_EQ(code, cli::kExitUsage);
  EXPECT_NE(last_err_.find("--trace"), std::string::npos) << last_err_;
}

// `gpuscale emulate` as a real process: prints its port, serves, and on SIGTERM lets the
// request in flight finish before exiting 0.
TEST(EmulateBinaryTest, DrainsInFlightRequestsOnSigterm) {
  int out_pipe[2];
  ASSERT_EQ(pipe(out_pipe), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {
      kBinary,    "emulate", "--port",           "0", "--startup-seconds", "0",
      "--timing", "linear",  "--decode-ms-base", "2", "--model",           "emu"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, kBinary, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);

  FILE* out = fdopen(out_pipe[0], "r");
  char line[256] = {};
  const bool got_line = fgets(line, sizeof(line), out) != nullptr;
  int port = 0;
  if (got_line) std::sscanf(line, "listening on 127.0.0.1:%d", &port);
  if (port <= 0) kill(pid, SIGKILL);  // do not leave it running when the test fails
  ASSERT_GT(port, 0) << line;

  httplib::Client client("127.0.0.1", port);
  EXPECT_EQ(client.Get("/health")->status, 200);
  std::string body;
  std::thread request([&] {
    httplib::Client streaming("127.0.0.1", port);
    json request_body{{"prompt", "x"}, {"max_tokens", 100}, {"stream", true}};
    httplib::Result res =
        streaming.Post("/v1/completions", request_body.dump(), "application/json");
    if (res) body = res->body;
  });
  // SIGTERM once the request is running (its first token has been counted).
  for (int i = 0; i < 500; ++i) {
    httplib::Result metrics = client.Get("/metrics");
    if (metrics &&
        metrics->body.find("vllm:num_requests_running{engine=\"0\",model_name=\"emu\"} 1") !=
            std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGTERM);
  request.join();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  fclose(out);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(std::count(body.begin(), body.end(), '\n'), 2 * 101);  // 100 tokens + [DONE]
}

}  // namespace
}  // namespace gpuscale
