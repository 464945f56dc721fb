#include "cli/endpoint_probe.h"

#include <gtest/gtest.h>

#include <string>

#include "emulator/emulator_server.h"
#include "workload/workload.h"

namespace gpuscale::cli {
namespace {

// An emulated replica on loopback; `slots` requests decode at once, each step `step_ms`.
class EndpointProbeTest : public ::testing::Test {
 protected:
  void Start(int slots, double step_ms) {
    emulator::EmulatorOptions options;
    options.model_name = "emu";
    options.startup_seconds = 0;
    options.engine.prefill_ms_per_1k_tokens = 0;
    options.engine.decode_ms_base = step_ms;
    options.engine.max_batch_size = slots;
    options.http_threads = 8;
    auto server = emulator::EmulatorServer::Start(options);
    ASSERT_TRUE(server.has_value()) << server.error().ToString();
    server_ = std::move(*server);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  EndpointProbeOptions Options() const {
    EndpointProbeOptions o;
    o.url = "http://127.0.0.1:" + std::to_string(server_->port());
    o.slo = {/*ttft_seconds=*/0.2, /*tpot_seconds=*/0.05, /*target_ratio=*/0.99};
    o.drain_timeout_seconds = 10;
    o.seed = 7;
    return o;
  }

  std::unique_ptr<emulator::EmulatorServer> server_;
};

TEST_F(EndpointProbeTest, ScoresOnlyTheArrivalsDueAfterTheWarmup) {
  Start(/*slots=*/64, /*step_ms=*/1);
  EndpointProbeOptions o = Options();
  o.warmup_seconds = 0.5;
  o.step_seconds = 0.5;
  EndpointProbe probe(o);
  Result<profile::CurvePoint> point = probe.Measure({64, 4}, /*rate_rps=*/40);
  ASSERT_TRUE(point.has_value()) << point.error().ToString();
  // The bench client's arrivals for this seed and rate, counted in the scored window.
  loadgen::WorkloadSpec spec;
  spec.mode = loadgen::ArrivalMode::kPoisson;
  spec.rate_per_second = 40;
  spec.seed = o.seed;
  spec.duration_seconds = 1.0;
  loadgen::WorkloadGenerator arrivals(spec);
  int64_t due_in_warmup = 0, scored = 0;
  while (auto next = arrivals.Next()) ++(next->send_at_seconds < 0.5 ? due_in_warmup : scored);
  ASSERT_GT(due_in_warmup, 0);
  EXPECT_EQ(point->requests, scored);
  EXPECT_EQ(point->attainment, 1.0) << "a 64-slot replica keeps up with 40 req/s";
}

TEST_F(EndpointProbeTest, AnArrivalHeldForAFreeSlotCountsTheWaitInItsTtft) {
  // Each request takes ~80 ms (8 tokens of 10 ms); with one request in flight at a time,
  // arrivals at 40 req/s queue in the client for up to a second. Measured from the send
  // alone, every TTFT would be ~10 ms and the point would hold.
  Start(/*slots=*/64, /*step_ms=*/10);
  EndpointProbeOptions o = Options();
  o.warmup_seconds = 0;
  o.step_seconds = 0.5;
  o.max_in_flight = 1;
  EndpointProbe probe(o);
  Result<profile::CurvePoint> point = probe.Measure({16, 8}, /*rate_rps=*/40);
  ASSERT_TRUE(point.has_value()) << point.error().ToString();
  ASSERT_GT(point->requests, 5);
  EXPECT_GT(point->ttft_p99_seconds, 0.5);
  EXPECT_LT(point->attainment, 0.99);
}

}  // namespace
}  // namespace gpuscale::cli
