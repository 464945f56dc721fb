// Issue 24's live acceptance: a prefill/decode disaggregated service under `gpuscale serve`.
// The daemon runs both pools of emulated replicas (`gpuscale emulate --role prefill|decode`)
// on one GPU budget of 3 (each pool 1..2 replicas of 1 GPU: they cannot both hold 2), and the
// gateway routes each request in two steps. `gpuscale bench` through the gateway: a
// prefill-heavy phase (long prompts, 2 tokens out) scales the prefill pool out; a decode-heavy
// phase (short prompts, 48 tokens out) scales the decode pool out, which needs a GPU the
// prefill pool gives back by scaling in (a decode replica waits pending on the budget
// meanwhile); a light phase scales the decode pool in. Every request of every phase succeeds
// while replicas of both pools drain, and the GPUs held never exceed the budget.
//
// Each pool scales on its replicas' queue (a `target` policy with short windows): the
// `disagg` family's 30 s and 2 min token-rate windows would take minutes to scale in, and its
// sizing is the simulator's to test (sim/disagg_test.cc); here the daemon's part is.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "daemon_serve_fixture.h"

namespace gpuscale::daemon_test {
namespace {

// kFastQueuePolicyYaml, four spaces deeper (under a pool of `disaggregated:`).
std::string IndentedPolicy() {
  const std::string policy = kFastQueuePolicyYaml;
  std::string out;
  for (size_t start = 0; start < policy.size();) {
    const size_t nl = policy.find('\n', start);
    out += "    " + policy.substr(start, nl + 1 - start);
    start = nl + 1;
  }
  return out;
}

// One pool's block: batch-1 replicas (prompts at 100 ms per 1k tokens, 20 ms decode steps),
// 1..2 of them, scaled on the queue.
std::string DisaggPoolYaml(const std::string& role, const std::string& marker) {
  return "      " + role + ":\n        command: [" + std::string(kBinary) +
         ", emulate, --port, \"{port}\", --model, m, --role, " + role +
         ",\n                  --startup-seconds, \"0.2\", --max-batch-size, \"1\",\n"
         "                  --timing, linear, --prefill-ms-per-1k-tokens, \"100\",\n"
         "                  --decode-ms-base, \"20\",\n"
         "                  --drain-seconds, \"5\"]\n"
         "        env: {GPUSCALE_TEST_MARK: " +
         MarkerValue(marker) +
         "}\n"
         "        gpus_per_replica: 1\n        min_replicas: 1\n        max_replicas: 2\n"
         "        policy:\n" +
         IndentedPolicy();
}

struct DisaggPeak {
  int prefill_replicas = 0, decode_replicas = 0, gpus_held = 0;
  bool prefill_scaled_in = false, decode_scaled_in = false;
};

// Polls GET /v1/services/x every 100 ms while `phase_over` is false, recording the pools'
// placed replicas and the budget held.
void WatchDisaggPools(int port, DisaggPeak& peak, const std::function<bool()>& phase_over) {
  while (!phase_over()) {
    const json view = Http(port, "GET", "/v1/services/x").body;
    if (view.is_object() && view.contains("pools")) {
      // Placed replicas (starting or ready): a pending one holds no GPU.
      auto placed = [&](int pool) {
        const json& p = view["pools"][pool];
        return p["replicas"].get<int>() - p["pending_replicas"].get<int>();
      };
      const int prefill = placed(0);
      const int decode = placed(1);
      peak.prefill_scaled_in |= peak.prefill_replicas > 1 && prefill == 1;
      peak.decode_scaled_in |= peak.decode_replicas > 1 && decode == 1;
      peak.prefill_replicas = std::max(peak.prefill_replicas, prefill);
      peak.decode_replicas = std::max(peak.decode_replicas, decode);
      peak.gpus_held = std::max(peak.gpus_held, view["gpu_budget"]["held"].get<int>());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

TEST_F(DaemonServeTest, DisaggregatedPoolsBothScaleOnOneBudgetAndScaleInLosesNothing) {
  const std::string service =
      "  - name: x\n    models: [m]\n"
      "    startup_timeout_seconds: 20\n    drain_timeout_seconds: 10\n"
      "    disaggregated:\n      gpu_budget: 3\n" +
      DisaggPoolYaml("prefill", marker_) + DisaggPoolYaml("decode", marker_);
  StartDaemon(Config(service, 4));
  ASSERT_GT(daemon_.gateway_port(), 0) << daemon_.stdout_seen();
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(15)))
      << Replicas().dump();
  DisaggPeak peak;
  std::vector<json> reports;
  // Each phase: bench through the gateway, watched until the bench ends and `done` holds
  // (or the phase's time is up).
  auto phase = [&](const std::string& name, std::vector<std::string> args, int seconds,
                   const std::function<bool()>& done) {
    args.insert(args.end(), {"--model", "m", "--duration", std::to_string(seconds)});
    BackgroundBench bench(dir_, name, daemon_.gateway_port(), args, marker_);
    ASSERT_TRUE(bench.started());
    const auto deadline = Clock::now() + std::chrono::seconds(seconds + 8);
    std::atomic<bool> ended = false;
    std::thread watch([&] {
      WatchDisaggPools(Port(), peak, [&] { return ended && (done() || Clock::now() > deadline); });
    });
    reports.push_back(bench.Finish());
    ended = true;
    watch.join();
  };
  // 1. Prefill-heavy: 2000-token prompts (200 ms of prefill each), 2 tokens out.
  phase("prefill-heavy", {"--concurrency", "6", "--input-tokens", "2000", "--output-tokens", "2"},
        10, [&] { return peak.prefill_replicas > 1; });
  // 2. Decode-heavy: 16-token prompts, 48 tokens out (about 1 s of decoding each).
  phase("decode-heavy",
        {"--concurrency", "6", "--input-tokens", "16", "--output-tokens", "48", "--ignore-eos"}, 16,
        [&] { return peak.decode_replicas > 1; });
  // 3. Light: one client; the decode pool scales in while it runs.
  phase("light", {"--concurrency", "1", "--input-tokens", "16", "--output-tokens", "4"}, 8,
        [&] { return peak.decode_scaled_in; });

  HttpReply events = Http(Port(), "GET", "/v1/events?limit=500");
  for (const json& report : reports) {
    ASSERT_FALSE(report.is_discarded()) << "bench printed no JSON";
    EXPECT_GT(report["requests_completed"].get<int>(), 0) << report.dump();
    EXPECT_EQ(report["requests_failed"], 0) << report.dump();
  }
  EXPECT_GT(peak.prefill_replicas, 1) << events.body.dump();
  EXPECT_GT(peak.decode_replicas, 1) << events.body.dump();
  EXPECT_TRUE(peak.prefill_scaled_in) << events.body.dump();
  EXPECT_TRUE(peak.decode_scaled_in) << events.body.dump();
  EXPECT_LE(peak.gpus_held, 3) << events.body.dump();
  // The decode pool's second replica waited for the prefill pool's GPU: the budget refused it
  // first, and said why.
  EXPECT_NE(events.body.dump().find("GPU budget: 1 more GPUs for decode"), std::string::npos)
      << events.body.dump();
}

}  // namespace
}  // namespace gpuscale::daemon_test
