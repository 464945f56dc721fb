#include "workload/tenant_workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "route/prompt_blocks.h"

namespace gpuscale::loadgen {
namespace {

std::vector<uint64_t> Hashes(const sim::Trace& t, const sim::TraceRequest& r) {
  const auto span = t.HashIds(r);
  return {span.begin(), span.end()};
}

TEST(TenantWorkloadTest, SameSeedSameTraceAndTheHotTenantSendsItsShare) {
  TenantWorkloadSpec spec{.rate_per_second = 50, .duration_seconds = 200};
  const sim::Trace a = GenerateTenantTrace(spec);
  const sim::Trace b = GenerateTenantTrace(spec);
  ASSERT_GT(a.requests.size(), 9000u);
  ASSERT_EQ(a.requests.size(), b.requests.size());
  EXPECT_EQ(a.hash_ids, b.hash_ids);
  spec.seed = 2;
  EXPECT_NE(GenerateTenantTrace(spec).hash_ids, a.hash_ids);
  EXPECT_EQ(a.tenants,
            (std::vector<std::string>{"", "tenant-0", "tenant-1", "tenant-2", "tenant-3"}));
  std::map<uint32_t, int> per_tenant;
  std::map<route::Priority, int> per_priority;
  for (const sim::TraceRequest& r : a.requests) {
    ++per_tenant[r.tenant];
    ASSERT_TRUE(r.priority);
    ++per_priority[*r.priority];
  }
  const double n = static_cast<double>(a.requests.size());
  EXPECT_NEAR(per_tenant[1] / n, 10.0 / 13, 0.02);  // hot: 10x each of the 3 others
  EXPECT_NEAR(per_tenant[2] / n, 1.0 / 13, 0.02);
  EXPECT_NEAR(per_priority[route::Priority::kCritical] / n, 0.15, 0.05);
  EXPECT_NEAR(per_priority[route::Priority::kSheddable] / n, 0.55, 0.05);
}

TEST(TenantWorkloadTest, ATurnExtendsItsSessionsLastPromptAfterTheTenantsSystemPrompt) {
  const TenantWorkloadSpec spec{.tenants = 3, .rate_per_second = 20, .duration_seconds = 60};
  const sim::Trace t = GenerateTenantTrace(spec);
  ASSERT_GT(t.requests.size(), 500u);
  std::map<uint32_t, std::vector<uint64_t>> system;  // by tenant
  int extended = 0;
  for (size_t i = 0; i < t.requests.size(); ++i) {
    const sim::TraceRequest& r = t.requests[i];
    const std::vector<uint64_t> h = Hashes(t, r);
    ASSERT_EQ(r.input_tokens, static_cast<int32_t>(h.size()) * spec.block_tokens);
    ASSERT_GE(h.size(), static_cast<size_t>(spec.system_blocks + spec.turn_blocks));
    const std::vector<uint64_t> head(h.begin(), h.begin() + spec.system_blocks);
    auto [it, first] = system.emplace(r.tenant, head);
    EXPECT_EQ(it->second, head) << "request " << i;
    if (h.size() == static_cast<size_t>(spec.system_blocks + spec.turn_blocks)) continue;
    // A later turn: an earlier request of the tenant is its prompt less the new turn.
    const std::vector<uint64_t> before(h.begin(), h.end() - spec.turn_blocks);
    const bool found = std::any_of(
        t.requests.begin(), t.requests.begin() + i,
        [&](const sim::TraceRequest& q) { return q.tenant == r.tenant && Hashes(t, q) == before; });
    EXPECT_TRUE(found) << "request " << i;
    ++extended;
  }
  EXPECT_GT(extended, static_cast<int>(t.requests.size()) / 2);
  EXPECT_NE(system[1], system[2]);  // each tenant its own system prompt
}

TEST(TenantWorkloadTest, PromptTextSharesTheBlocksItsHashIdsShare) {
  const TenantWorkloadSpec spec{.tenants = 2,
                                .hot_ratio = 1,
                                .rate_per_second = 5,
                                .duration_seconds = 60,
                                .block_tokens = 16};
  const sim::Trace t = GenerateTenantTrace(spec);
  ASSERT_GT(t.requests.size(), 100u);
  auto keys = [&](const sim::TraceRequest& r) {
    std::vector<uint64_t> out;
    route::PromptBlockKeys(PromptText(t.HashIds(r), spec.block_tokens), spec.block_tokens, &out);
    return out;
  };
  // The gateway's block keys are as many as the hash ids, and two requests share as many
  // leading keys as leading hash ids.
  for (size_t i = 1; i < 40; ++i) {
    const auto a = Hashes(t, t.requests[i - 1]), b = Hashes(t, t.requests[i]);
    const auto ka = keys(t.requests[i - 1]), kb = keys(t.requests[i]);
    ASSERT_EQ(ka.size(), a.size());
    const auto common = std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin();
    const auto common_keys =
        std::mismatch(ka.begin(), ka.end(), kb.begin(), kb.end()).first - ka.begin();
    EXPECT_EQ(common_keys, common) << "requests " << i - 1 << ", " << i;
  }
}

TEST(TenantWorkloadTest, ParsesKeysAndNamesTheBadOne) {
  auto spec = ParseTenantWorkload("tenants=6,hot=5,rate=12.5,critical=0.2,sheddable=0.3");
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ(spec->tenants, 6);
  EXPECT_EQ(spec->hot_ratio, 5);
  EXPECT_EQ(spec->rate_per_second, 12.5);
  EXPECT_EQ(spec->critical_ratio, 0.2);
  EXPECT_EQ(spec->sheddable_ratio, 0.3);
  EXPECT_TRUE(ParseTenantWorkload(""));
  for (auto [text, field] :
       {std::pair{"tenant=4", "tenant"}, std::pair{"rate=fast", "rate"},
        std::pair{"tenants=2.5", "tenants"}, std::pair{"hot=0", "hot"},
        std::pair{"critical=0.6,sheddable=0.6", "sheddable"}, std::pair{"turns", "turns"}}) {
    auto bad = ParseTenantWorkload(text);
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().field, field) << text << ": " << bad.error().ToString();
  }
}

}  // namespace
}  // namespace gpuscale::loadgen
