// RunBench's cancel flag against a slow streaming fake server on 127.0.0.1 (port 0): every
// request streams one token per 20 ms, so requests are surely in flight when the flag turns.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "loadgen/bench_runner.h"
#include "testing/loopback_server.h"

namespace gpuscale::loadgen {
namespace {

class SlowServer : public testing::LoopbackServer {
 public:
  SlowServer() {
    server().Post("/v1/completions", [](const httplib::Request& req, httplib::Response& res) {
      const int tokens = nlohmann::json::parse(req.body)["max_tokens"].get<int>();
      res.set_chunked_content_provider(
          "text/event-stream", [tokens, sent = 0](size_t, httplib::DataSink& sink) mutable {
            // One token per 20 ms of real time: the bench under test streams over a socket.
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            if (sent == tokens) {
              const std::string done = "data: [DONE]\n\n";
              sink.write(done.data(), done.size());
              sink.done();
              return true;
            }
            ++sent;
            const std::string event = "data: {\"choices\": [{\"text\": \" w\"}]}\n\n";
            return sink.write(event.data(), event.size());
          });
    });
    Start();
  }
};

// A 60 s benchmark of 2 s requests: only the cancel flag can end it within the test's time.
BenchOptions LongBench(const std::string& url, const std::atomic<bool>& cancel) {
  BenchOptions options;
  options.url = url;
  options.model = "slow";
  options.concurrency = 2;
  options.duration_seconds = 60;
  options.drain_timeout_seconds = 60;
  options.workload.input = {16, 0};
  options.workload.output = {100, 0};
  options.cancel = &cancel;
  return options;
}

Result<BenchReport> RunAndCancelAfter(const BenchOptions& options, std::atomic<bool>& cancel,
                                      std::chrono::milliseconds delay) {
  std::thread canceller([&] {
    // Cancels mid-run: the bench's requests are in flight on real sockets by then.
    std::this_thread::sleep_for(delay);
    cancel = true;
  });
  Result<BenchReport> report = RunBench(options);
  canceller.join();
  return report;
}

TEST(BenchCancelTest, CancelStopsNewRequestsAndCancelsThoseInFlight) {
  SlowServer server;
  std::atomic<bool> cancel{false};
  Result<BenchReport> report =
      RunAndCancelAfter(LongBench(server.Url(), cancel), cancel, std::chrono::milliseconds(300));
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_LT(report->elapsed_seconds, 30);  // far below the 60 s duration
  EXPECT_EQ(report->requests_sent, 2);     // the two first requests, none after the cancel
  EXPECT_EQ(report->requests_completed, 0);
  EXPECT_EQ(report->errors_by_kind["cancelled"], 2);
}

TEST(BenchCancelTest, OpenLoopDispatcherWakesOnCancel) {
  SlowServer server;
  std::atomic<bool> cancel{false};
  BenchOptions options = LongBench(server.Url(), cancel);
  options.workload.mode = ArrivalMode::kPoisson;
  options.workload.rate_per_second = 0.01;  // the next arrival is likely minutes away
  Result<BenchReport> report =
      RunAndCancelAfter(options, cancel, std::chrono::milliseconds(200));
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_LT(report->elapsed_seconds, 30);
  EXPECT_EQ(report->requests_completed, 0);
}

TEST(BenchCancelTest, AlreadyCancelledSendsNothing) {
  SlowServer server;
  std::atomic<bool> cancel{true};
  Result<BenchReport> report = RunBench(LongBench(server.Url(), cancel));
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->requests_sent, 0);
  EXPECT_LT(report->elapsed_seconds, 30);
}

}  // namespace
}  // namespace gpuscale::loadgen
