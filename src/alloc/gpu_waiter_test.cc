#include "alloc/gpu_waiter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/alloc_test_util.h"

namespace gpuscale::alloc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeGpu;
using testing::MakeSnapshot;

// A fleet of two GPUs that free up after `busy_reads` readings.
struct FakeFleet {
  int busy_reads = 0;
  int reads = 0;
  Result<gpu::GpuSnapshot> Read() {
    ++reads;
    const int64_t free_mb = reads > busy_reads ? 80000 : 1000;
    return MakeSnapshot({MakeGpu(0, free_mb, 0), MakeGpu(1, free_mb, 0)});
  }
};

struct Harness {
  ManualClock clock{Seconds{1000}};
  std::vector<Seconds> sleeps;
  Sleeper sleep = [this](Seconds d) {
    sleeps.push_back(d);
    clock.Advance(d);
  };
};

SelectionRequest TwoGpus() {
  SelectionRequest r;
  r.gpu_count = 2;
  r.min_memory_free_mb = 8000;
  return r;
}

TEST(GpuWaiterTest, SucceedsAtOnceWhenGpusAreFree) {
  Harness h;
  FakeFleet fleet{0};
  Result<WaitResult> r = WaitForGpus(
      TwoGpus(), [&] { return fleet.Read(); }, h.clock, h.sleep);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->checks, 1);
  EXPECT_TRUE(h.sleeps.empty());
  EXPECT_THAT(r->selection.Indices(), ElementsAre(0, 1));
}

TEST(GpuWaiterTest, SucceedsAfterKPollsSpacedByTheInterval) {
  Harness h;
  FakeFleet fleet{3};
  int progress_calls = 0;
  Result<WaitResult> r = WaitForGpus(
      TwoGpus(), [&] { return fleet.Read(); }, h.clock, h.sleep,
      WaitOptions{Seconds{300}, Seconds{30}},
      [&](const WaitProgress& p) {
        ++progress_calls;
        EXPECT_EQ(p.checks, progress_calls);
        EXPECT_EQ(p.last.code, ErrorCode::kResourceExhausted);
      });
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->checks, 4);
  EXPECT_EQ(r->waited, Seconds{90});
  EXPECT_EQ(progress_calls, 3);
  EXPECT_THAT(h.sleeps, ElementsAre(Seconds{30}, Seconds{30}, Seconds{30}));
}

TEST(GpuWaiterTest, TimesOutWithWhatIsMissingAndChecksAtTheDeadline) {
  Harness h;
  FakeFleet fleet{1000};
  Result<WaitResult> r = WaitForGpus(
      TwoGpus(), [&] { return fleet.Read(); }, h.clock, h.sleep,
      WaitOptions{Seconds{100}, Seconds{30}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_THAT(r.error().message,
              HasSubstr("no 2 GPUs after 100 s (5 checks): need 2 GPUs, 0 of 2 eligible "
                        "(min 8000 MiB free)"));
  EXPECT_THAT(r.error().message, HasSubstr("GPU 0: 1000 MiB free < 8000 MiB required"));
  // 30 + 30 + 30 + the 10 s left, so the last check falls on the deadline.
  EXPECT_THAT(h.sleeps, ElementsAre(Seconds{30}, Seconds{30}, Seconds{30}, Seconds{10}));
  EXPECT_EQ(fleet.reads, 5);
}

TEST(GpuWaiterTest, ZeroTimeoutChecksOnce) {
  Harness h;
  FakeFleet fleet{1};
  Result<WaitResult> r = WaitForGpus(
      TwoGpus(), [&] { return fleet.Read(); }, h.clock, h.sleep,
      WaitOptions{Seconds{0}, Seconds{30}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(fleet.reads, 1);
  EXPECT_TRUE(h.sleeps.empty());
}

TEST(GpuWaiterTest, RetriesUnavailableReadingsButStopsOnOtherErrors) {
  Harness h;
  int reads = 0;
  auto flaky = [&]() -> Result<gpu::GpuSnapshot> {
    if (++reads < 3) return Unavailable("nvidia-smi timed out");
    return MakeSnapshot({MakeGpu(0, 80000, 0), MakeGpu(1, 80000, 0)});
  };
  Result<WaitResult> r = WaitForGpus(TwoGpus(), flaky, h.clock, h.sleep);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->checks, 3);

  auto broken = [&]() -> Result<gpu::GpuSnapshot> {
    return InvalidArgument("bad CSV header", "line 1");
  };
  Result<WaitResult> failed = WaitForGpus(TwoGpus(), broken, h.clock, h.sleep);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(failed.error().message, "bad CSV header");
}

TEST(GpuWaiterTest, EndsEvenWhenTheClockDoesNotMove) {
  ManualClock frozen;
  FakeFleet fleet{1000};
  int sleeps = 0;
  Result<WaitResult> r = WaitForGpus(
      TwoGpus(), [&] { return fleet.Read(); }, frozen, [&](Seconds) { ++sleeps; },
      WaitOptions{Seconds{60}, Seconds{30}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(sleeps, 2);
}

TEST(GpuWaiterTest, RejectsBadOptions) {
  Harness h;
  FakeFleet fleet;
  auto read = [&] { return fleet.Read(); };
  EXPECT_EQ(WaitForGpus(TwoGpus(), read, h.clock, h.sleep, {Seconds{-1}, Seconds{1}}).error().field,
            "timeout");
  EXPECT_EQ(WaitForGpus(TwoGpus(), read, h.clock, h.sleep, {Seconds{1}, Seconds{0}}).error().field,
            "interval");
  EXPECT_EQ(fleet.reads, 0);
}

}  // namespace
}  // namespace gpuscale::alloc
