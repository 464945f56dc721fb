#include "gpumon/monitor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "testing/wait_until.h"

namespace gpuscale::gpu {
namespace {

MonitorOptions Options(Seconds cache_ttl, Seconds sample_interval, size_t history_capacity) {
  MonitorOptions options;
  options.cache_ttl = cache_ttl;
  options.sample_interval = sample_interval;
  options.history_capacity = history_capacity;
  return options;
}

// Serves scripted readings: each Query returns the next utilization of `script_` (the last
// one repeats) for GPU 0, plus a GPU 1 without a power sensor. Can be told to fail.
class FakeBackend final : public GpuBackend {
 public:
  explicit FakeBackend(std::vector<double> script) : script_(std::move(script)) {}
  std::string_view Name() const override { return "fake"; }
  Result<GpuSnapshot> Query(Seconds now) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    if (fail_) return Unavailable("fake backend down");
    const double utilization = script_[std::min(next_, script_.size() - 1)];
    ++next_;
    GpuSnapshot snapshot;
    snapshot.backend = "fake";
    snapshot.taken_at = now;
    GpuInfo gpu0;
    gpu0.index = 0;
    gpu0.name = "Fake GPU";
    gpu0.memory_total_mb = 1000;
    gpu0.memory_used_mb = static_cast<int64_t>(utilization * 10);  // 10 MiB per util point
    gpu0.utilization_percent = utilization;
    gpu0.temperature_c = 40 + utilization / 10;
    gpu0.power_draw_w = 100 + utilization;
    gpu0.processes.push_back({1, 5, "p"});
    GpuInfo gpu1 = gpu0;
    gpu1.index = 1;
    gpu1.power_draw_w.reset();
    snapshot.gpus = {gpu0, gpu1};
    return snapshot;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  void set_fail(bool fail) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = fail;
  }

 private:
  std::mutex mu_;
  std::vector<double> script_;
  size_t next_ = 0;
  int calls_ = 0;
  bool fail_ = false;
};

TEST(MonitorTest, ServesCachedSnapshotWithinTtl) {
  FakeBackend backend({10});
  ManualClock clock(Seconds{100});
  Monitor monitor(backend, clock);  // default TTL 5 s
  ASSERT_TRUE(monitor.Snapshot());
  clock.Advance(Seconds{4.9});
  Result<GpuSnapshot> cached = monitor.Snapshot();
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->taken_at, Seconds{100});
  EXPECT_EQ(backend.calls(), 1);
  clock.Advance(Seconds{0.2});  // 5.1 s old: stale
  Result<GpuSnapshot> fresh = monitor.Snapshot();
  ASSERT_TRUE(fresh);
  EXPECT_DOUBLE_EQ(fresh->taken_at.count(), 105.1);
  EXPECT_EQ(backend.calls(), 2);
}

TEST(MonitorTest, BypassAlwaysQueriesTheBackend) {
  FakeBackend backend({10});
  ManualClock clock;
  Monitor monitor(backend, clock);
  ASSERT_TRUE(monitor.Snapshot());
  ASSERT_TRUE(monitor.Snapshot(/*bypass_cache=*/true));
  EXPECT_EQ(backend.calls(), 2);
}

TEST(MonitorTest, FailedRefreshKeepsPreviousCacheAndReportsError) {
  FakeBackend backend({10});
  ManualClock clock;
  Monitor monitor(backend, clock, Options(Seconds{5}, Seconds{1}, 10));
  ASSERT_TRUE(monitor.Snapshot());
  backend.set_fail(true);
  Result<GpuSnapshot> failed = monitor.Snapshot(true);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(monitor.Snapshot());  // still the fresh cached copy
}

TEST(MonitorTest, AggregatesMinMaxMeanPerGpuAndMetric) {
  FakeBackend backend({10, 50, 30});
  ManualClock clock;
  Monitor monitor(backend, clock);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(monitor.SampleOnce());
    clock.Advance(Seconds{1});
  }
  EXPECT_EQ(monitor.sample_count(), 3);
  const GpuStatsMap stats = monitor.Stats();
  ASSERT_EQ(stats.size(), 2u);
  const GpuStats& gpu0 = stats.at(0);
  EXPECT_EQ(gpu0.name, "Fake GPU");
  EXPECT_EQ(gpu0.utilization_percent.min, 10);
  EXPECT_EQ(gpu0.utilization_percent.max, 50);
  EXPECT_DOUBLE_EQ(*gpu0.utilization_percent.Mean(), 30);
  EXPECT_EQ(gpu0.utilization_percent.samples, 3);
  EXPECT_DOUBLE_EQ(*gpu0.memory_used_mb.Mean(), 300);
  EXPECT_DOUBLE_EQ(gpu0.memory_usage_percent.max, 50);  // 500 of 1000 MiB
  EXPECT_DOUBLE_EQ(gpu0.temperature_c.min, 41);
  EXPECT_DOUBLE_EQ(*gpu0.power_draw_w.Mean(), 130);
  // GPU 1 has no power sensor: no samples, no mean, never a fake 0.
  EXPECT_EQ(stats.at(1).power_draw_w.samples, 0);
  EXPECT_FALSE(stats.at(1).power_draw_w.Mean());
}

TEST(MonitorTest, HistoryRingIsBoundedAndOrdered) {
  FakeBackend backend({1, 2, 3, 4, 5});
  ManualClock clock;
  Monitor monitor(backend, clock, Options(Seconds{5}, Seconds{1}, 3));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(monitor.SampleOnce());
    clock.Advance(Seconds{1});
  }
  const std::vector<HistoryPoint> history = monitor.History();
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0].taken_at, Seconds{2});
  EXPECT_EQ(history[2].taken_at, Seconds{4});
  EXPECT_EQ(history[2].gpus[0].utilization_percent, 5.0);
  EXPECT_TRUE(history[2].gpus[0].processes.empty());
}

TEST(MonitorTest, FailedSamplesAreCountedNotAggregated) {
  FakeBackend backend({10});
  ManualClock clock;
  Monitor monitor(backend, clock);
  ASSERT_TRUE(monitor.SampleOnce());
  backend.set_fail(true);
  EXPECT_FALSE(monitor.SampleOnce());
  EXPECT_EQ(monitor.sample_count(), 1);
  EXPECT_EQ(monitor.failed_sample_count(), 1);
  ASSERT_TRUE(monitor.last_error());
  EXPECT_EQ(monitor.last_error()->message, "fake backend down");
  monitor.ResetStats();
  EXPECT_EQ(monitor.sample_count(), 0);
  EXPECT_TRUE(monitor.Stats().empty());
  EXPECT_FALSE(monitor.last_error());
}

// Waits (bounded) until the sampler thread has taken `n` samples.
bool WaitForSamples(const Monitor& monitor, int64_t n) {
  return gpuscale::testing::WaitUntil([&] { return monitor.sample_count() >= n; },
                                      std::chrono::seconds(2), std::chrono::milliseconds(1));
}

TEST(MonitorTest, SamplerThreadSamplesUntilStopped) {
  FakeBackend backend({10});
  ManualClock clock;
  Monitor monitor(backend, clock, Options(Seconds{5}, Seconds{0.001}, 10));
  monitor.Start();
  EXPECT_TRUE(monitor.running());
  EXPECT_TRUE(WaitForSamples(monitor, 3));
  monitor.Stop();
  EXPECT_FALSE(monitor.running());
  const int64_t after_stop = monitor.sample_count();
  // Real time: a sampler thread still running (its period is 1 ms of the real clock; the
  // ManualClock only stamps samples) would take several samples in 5 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(monitor.sample_count(), after_stop);
}

TEST(MonitorTest, StartAndStopAreIdempotentAndThreadSafe) {
  FakeBackend backend({10});
  ManualClock clock;
  Monitor monitor(backend, clock, Options(Seconds{5}, Seconds{0.001}, 10));
  monitor.Stop();  // not running: no-op
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&monitor] {
      for (int i = 0; i < 20; ++i) {
        monitor.Start();
        monitor.Start();
        monitor.Stop();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(monitor.running());
  monitor.Start();
  EXPECT_TRUE(WaitForSamples(monitor, monitor.sample_count() + 1));
  // The destructor stops the still-running sampler.
}

TEST(MonitorTest, StopWakesASamplerWaitingALongInterval) {
  FakeBackend backend({10});
  ManualClock clock;
  Monitor monitor(backend, clock, Options(Seconds{5}, Seconds{3600}, 10));
  monitor.Start();
  EXPECT_TRUE(WaitForSamples(monitor, 1));
  monitor.Stop();  // must not wait an hour
  EXPECT_EQ(monitor.sample_count(), 1);
}

}  // namespace
}  // namespace gpuscale::gpu
