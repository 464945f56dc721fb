#include "workload/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "route/prompt_blocks.h"
#include "workload/tenant_workload.h"

namespace gpuscale::loadgen {
namespace {

std::vector<PlannedRequest> Drain(WorkloadGenerator& generator, size_t limit = 100000) {
  std::vector<PlannedRequest> requests;
  while (requests.size() < limit) {
    std::optional<PlannedRequest> next = generator.Next();
    if (!next) break;
    requests.push_back(*next);
  }
  return requests;
}

TEST(WorkloadTest, ClosedLoopUsesFixedLengthsWithoutStddev) {
  WorkloadSpec spec;
  spec.input = {300, 0};
  spec.output = {20, 0};
  spec.max_requests = 5;
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  ASSERT_EQ(requests.size(), 5u);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(requests[i].send_at_seconds, 0);
    EXPECT_EQ(requests[i].input_tokens, 300);
    EXPECT_EQ(requests[i].output_tokens, 20);
  }
}

TEST(WorkloadTest, PoissonArrivalsHaveTheRequestedRateAndStopAtTheDuration) {
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kPoisson;
  spec.rate_per_second = 50;
  spec.duration_seconds = 200;
  spec.seed = 7;
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  // 10000 expected; a Poisson count has a standard deviation of 100.
  EXPECT_NEAR(static_cast<double>(requests.size()), 10000, 400);
  for (size_t i = 1; i < requests.size(); ++i) {
    ASSERT_GT(requests[i].send_at_seconds, requests[i - 1].send_at_seconds);
  }
  EXPECT_LT(requests.back().send_at_seconds, 200);
}

TEST(WorkloadTest, SameSeedSameWorkload) {
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kPoisson;
  spec.rate_per_second = 3;
  spec.input = {500, 100};
  spec.output = {50, 20};
  spec.max_requests = 50;
  spec.seed = 42;
  WorkloadGenerator a(spec), b(spec);
  std::vector<PlannedRequest> ra = Drain(a), rb = Drain(b);
  ASSERT_EQ(ra.size(), 50u);
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].send_at_seconds, rb[i].send_at_seconds);
    EXPECT_EQ(ra[i].input_tokens, rb[i].input_tokens);
  }
  spec.seed = 43;
  WorkloadGenerator c(spec);
  EXPECT_NE(Drain(c)[0].send_at_seconds, ra[0].send_at_seconds);
}

TEST(WorkloadTest, LengthsFollowMeanAndStddevAndStayPositive) {
  WorkloadSpec spec;
  spec.input = {1000, 200};
  spec.output = {3, 50};  // mostly clamped at 1
  spec.max_requests = 20000;
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  double sum = 0, sum_sq = 0;
  for (const PlannedRequest& r : requests) {
    sum += r.input_tokens;
    sum_sq += static_cast<double>(r.input_tokens) * r.input_tokens;
    ASSERT_GE(r.output_tokens, 1);
  }
  const double n = static_cast<double>(requests.size());
  const double mean = sum / n;
  EXPECT_NEAR(mean, 1000, 10);
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean), 200, 10);
}

TEST(WorkloadTest, TraceModeReplaysArrivalsAndLengths) {
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kTrace;
  spec.trace = {{0, 100, 10}, {0.5, 0, 0}, {1.5, 300, 30}, {9, 1, 1}};
  spec.duration_seconds = 5;
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  ASSERT_EQ(requests.size(), 3u);  // the one at 9 s is past the duration
  EXPECT_EQ(requests[0].input_tokens, 100);
  EXPECT_EQ(requests[1].input_tokens, 1);  // 0-token rows still send one token
  EXPECT_EQ(requests[1].output_tokens, 1);
  EXPECT_EQ(requests[2].send_at_seconds, 1.5);
  EXPECT_EQ(requests[2].output_tokens, 30);
}

// `gpuscale bench --trace tenants:...` sends each request's priority and tenant as headers:
// the generator hands them on from the trace's rows.
TEST(WorkloadTest, TraceRowsPriorityAndTenantAreHandedOn) {
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kTrace;
  spec.trace_tenants = {"", "tenant-0", "tenant-1"};
  spec.trace = {{.arrival_s = 0,
                 .input_tokens = 5,
                 .output_tokens = 1,
                 .tenant = 2,
                 .priority = route::Priority::kCritical},
                {.arrival_s = 1, .input_tokens = 5, .output_tokens = 1}};
  ASSERT_TRUE(ValidateWorkloadSpec(spec).has_value());
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].priority, route::Priority::kCritical);
  EXPECT_EQ(requests[0].tenant, "tenant-1");
  EXPECT_EQ(requests[1].priority, std::nullopt);  // the door's default applies
  EXPECT_EQ(requests[1].tenant, "");

  spec.trace[1].tenant = 3;  // past the trace's tenants
  Status status = ValidateWorkloadSpec(spec);
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().field, "--trace");
}

size_t Words(const std::string& text) {
  return text.empty() ? 0 : static_cast<size_t>(std::ranges::count(text, ' ')) + 1;
}

std::vector<uint64_t> BlockKeys(const std::string& text, int32_t block_tokens) {
  std::vector<uint64_t> keys;
  route::PromptBlockKeys(text, block_tokens, &keys);
  return keys;
}

// The live bench of the multi-tenant workload: each request's prompt is its blocks' text, so
// the block keys the gateway and the emulator compute share what the trace's hash ids share.
TEST(WorkloadTest, TraceWithBlockHashesSendsTheirTextAsThePrompt) {
  TenantWorkloadSpec tenants;
  tenants.tenants = 2;
  tenants.block_tokens = 4;
  tenants.system_blocks = 2;
  tenants.turn_blocks = 1;
  tenants.rate_per_second = 20;
  tenants.duration_seconds = 3;
  const sim::Trace trace = GenerateTenantTrace(tenants);
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kTrace;
  spec.trace = trace.requests;
  spec.trace_hash_ids = trace.hash_ids;
  spec.trace_tenants = trace.tenants;
  spec.trace_hash_block_tokens = trace.hash_block_tokens;
  ASSERT_TRUE(ValidateWorkloadSpec(spec).has_value());
  WorkloadGenerator generator(spec);
  const std::vector<PlannedRequest> requests = Drain(generator);
  ASSERT_EQ(requests.size(), trace.requests.size());
  ASSERT_GT(requests.size(), 20u);
  std::vector<std::vector<uint64_t>> first_key_by_tenant(3);
  for (size_t i = 0; i < requests.size(); ++i) {
    const sim::TraceRequest& row = trace.requests[i];
    EXPECT_EQ(requests[i].prompt, PromptText(trace.HashIds(row), 4)) << i;
    EXPECT_EQ(Words(requests[i].prompt), static_cast<size_t>(requests[i].input_tokens)) << i;
    const std::vector<uint64_t> keys = BlockKeys(requests[i].prompt, 4);
    ASSERT_EQ(keys.size(), row.hash_count) << i;
    first_key_by_tenant[row.tenant].push_back(keys[1]);  // the system prompt's last block
  }
  // One tenant's requests share its system prompt's blocks; the two tenants' differ.
  for (int tenant : {1, 2}) {
    ASSERT_FALSE(first_key_by_tenant[tenant].empty()) << tenant;
    EXPECT_EQ(std::ranges::count(first_key_by_tenant[tenant], first_key_by_tenant[tenant][0]),
              std::ssize(first_key_by_tenant[tenant]))
        << tenant;
  }
  EXPECT_NE(first_key_by_tenant[1][0], first_key_by_tenant[2][0]);
}

// A Mooncake row's last block is partial: the prompt keeps input_tokens words, cutting that
// block; a row whose blocks cover less is filled up; a row without blocks gets no text.
TEST(WorkloadTest, TracePromptIsCutOrFilledToTheRowsInputTokens) {
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kTrace;
  spec.trace = {{0, 6, 1}, {0.1, 10, 1}, {0.2, 3, 1}};
  spec.trace[0].hash_count = 2;
  spec.trace[1].hash_count = 2;
  spec.trace_hash_ids = {11, 12};
  spec.trace_hash_block_tokens = 4;
  WorkloadGenerator generator(spec);
  const std::vector<PlannedRequest> requests = Drain(generator);
  ASSERT_EQ(requests.size(), 3u);
  const std::string blocks = PromptText(spec.trace_hash_ids, 4);  // 8 words
  EXPECT_EQ(requests[0].prompt, blocks.substr(0, blocks.find(' ', 5 * 9)));
  EXPECT_EQ(Words(requests[0].prompt), 6u);
  EXPECT_EQ(requests[1].prompt, blocks + " x x");
  EXPECT_EQ(requests[2].prompt, "");

  spec.trace[1].hash_begin = 1;  // [1, 3) of 2 hash ids
  const Status bad = ValidateWorkloadSpec(spec);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().field, "--trace");
}

TEST(WorkloadTest, ValidationNamesTheFlag) {
  const std::vector<std::pair<void (*)(WorkloadSpec&), std::string>> cases = {
      {[](WorkloadSpec& s) { s.input.mean_tokens = 0; }, "--input-tokens"},
      {[](WorkloadSpec& s) { s.output.stddev_tokens = -1; }, "--output-stddev"},
      {[](WorkloadSpec& s) {
         s.mode = ArrivalMode::kPoisson;
         s.rate_per_second = 0;
       },
       "--rate"},
      {[](WorkloadSpec& s) { s.mode = ArrivalMode::kTrace; }, "--trace"},
      {[](WorkloadSpec& s) { s.max_requests = -1; }, "--max-requests"},
  };
  EXPECT_TRUE(ValidateWorkloadSpec(WorkloadSpec{}).has_value());
  for (const auto& [mutate, flag] : cases) {
    WorkloadSpec spec;
    mutate(spec);
    Status status = ValidateWorkloadSpec(spec);
    ASSERT_FALSE(status.has_value()) << flag;
    EXPECT_EQ(status.error().field, flag);
  }
}

}  // namespace
}  // namespace gpuscale::loadgen
