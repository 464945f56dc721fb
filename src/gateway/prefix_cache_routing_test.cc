// GatewayState routing with router kind prefix_cache: a request goes to the replica that holds
// its prompt's prefix, by what the gateway routed (approximate) or the replicas' KV events
// (precise, delivered here through the KvEventSink the subscriber calls).
#include "gateway/prefix_cache_routing.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gateway/gateway_state.h"
#include "route/prompt_blocks.h"

namespace gpuscale::gateway {
namespace {

GatewayConfig CacheConfig(route::PrefixIndexMode mode) {
  GatewayConfig c;
  c.picker = {.kind = route::PickerKind::kPrefixCache, .prefix_index = mode};
  c.prefix_cache.block_tokens = 4;
  return c;
}

ServiceRoute CacheService(std::vector<std::string> replicas) {
  ServiceRoute s{"chat", {"llama"}, {}};
  for (const std::string& id : replicas) {
    s.replicas.push_back({id, "127.0.0.1", 9000, 1e9, 1, "ipc:///tmp/kv-" + id});
  }
  return s;
}

// A request's key for a prompt of `words` words starting with `head`.
RouteKey PromptKey(const std::string& head, int words) {
  std::string text = head;
  for (int i = 1; i < words; ++i) text += " w" + std::to_string(i);
  auto keys = std::make_shared<std::vector<uint64_t>>();
  RouteKey key;
  key.prompt_tokens = route::PromptBlockKeys(text, 4, keys.get());
  key.blocks = std::move(keys);
  return key;
}

kvevents::KvEventBatch BlocksEvent(kvevents::KvEventKind kind, const RouteKey& key) {
  kvevents::KvEvent e;
  e.kind = kind;
  e.block_hashes = *key.blocks;
  e.block_size = kind == kvevents::KvEventKind::kBlockStored ? 4 : 0;
  return {1.0, {e}, {}};
}

kvevents::KvEventBatch StoredBlocks(const RouteKey& key) {
  return BlocksEvent(kvevents::KvEventKind::kBlockStored, key);
}

// Acquires and releases at once: which replica the request would go to.
std::string RoutedTo(GatewayState& state, const RouteKey& key,
                     const std::set<std::string>& exclude = {}) {
  std::optional<Ticket> t = state.Acquire("chat", key, exclude);
  if (!t) return "";
  state.Release(*t, AttemptOutcome::kOk);
  return t->replica;
}

TEST(PrefixCacheRoutingTest, ApproximateSendsAPrefixWhereItWasSentBefore) {
  GatewayState state(CacheConfig(route::PrefixIndexMode::kApproximate));
  state.Publish({CacheService({"r1", "r2"})});
  const RouteKey a = PromptKey("alpha", 40);
  EXPECT_EQ(RoutedTo(state, a, {"r1"}), "r2");
  // Both idle: least outstanding would take r1 (the earliest); r2 holds the prefix.
  EXPECT_EQ(RoutedTo(state, a), "r2");
  EXPECT_EQ(RoutedTo(state, PromptKey("beta", 40)), "r1");
}

TEST(PrefixCacheRoutingTest, PreciseFollowsTheReplicasEventsAndFallsBackWhenOneRestarts) {
  GatewayState state(CacheConfig(route::PrefixIndexMode::kPrecise));
  state.Publish({CacheService({"r1", "r2"})});
  const RouteKey a = PromptKey("alpha", 40);
  state.kv_events().OnKvEvents("r2", 0, StoredBlocks(a));
  EXPECT_EQ(RoutedTo(state, a), "r2");
  // r2 stores another prefix, then its publisher goes away: its entries go, and it is looked
  // up on what the gateway routed there, which never included that prefix.
  const RouteKey b = PromptKey("beta", 40);
  state.kv_events().OnKvEvents("r2", 1, StoredBlocks(b));
  state.kv_events().OnKvConnection("r2", false);
  EXPECT_EQ(RoutedTo(state, b), "r1");
}

TEST(PrefixCacheRoutingTest, PreciseOverridesWhatTheGatewayRoutedForATrustedReplica) {
  GatewayState state(CacheConfig(route::PrefixIndexMode::kPrecise));
  state.Publish({CacheService({"r1", "r2"})});
  const RouteKey a = PromptKey("alpha", 40);
  EXPECT_EQ(RoutedTo(state, a, {"r2"}), "r1");  // r1 never published: approximate
  // r1 publishes now: it stored the prefix and evicted it since (the eviction wins over what
  // was routed there before it); r2 stored it.
  state.kv_events().OnKvEvents("r1", 0, StoredBlocks(a));
  state.kv_events().OnKvEvents("r1", 1, BlocksEvent(kvevents::KvEventKind::kBlockRemoved, a));
  state.kv_events().OnKvEvents("r2", 0, StoredBlocks(a));
  EXPECT_EQ(RoutedTo(state, a), "r2");
}

TEST(PrefixCacheRoutingTest, PreciseCountsWhatWasJustRoutedBeforeTheEventsConfirmIt) {
  GatewayState state(CacheConfig(route::PrefixIndexMode::kPrecise));
  state.Publish({CacheService({"r1", "r2"})});
  state.kv_events().OnKvEvents("r1", 0, kvevents::KvEventBatch{1.0, {}, {}});
  state.kv_events().OnKvEvents("r2", 0, kvevents::KvEventBatch{1.0, {}, {}});
  const RouteKey a = PromptKey("alpha", 40);
  EXPECT_EQ(RoutedTo(state, a, {"r1"}), "r2");
  // r2 has not published the prefix yet (it is prefilling it); least outstanding would take
  // r1 (the earliest), but the prefix just sent to r2 counts.
  EXPECT_EQ(RoutedTo(state, a), "r2");
}

TEST(PrefixCacheRoutingTest, AReplicaLeavingMovesOnlyItsOwnPrefixes) {
  GatewayState state(CacheConfig(route::PrefixIndexMode::kPrecise));
  state.Publish({CacheService({"r1", "r2", "r3"})});
  const RouteKey a = PromptKey("alpha", 40), b = PromptKey("beta", 40);
  state.kv_events().OnKvEvents("r1", 0, kvevents::KvEventBatch{1.0, {}, {}});
  state.kv_events().OnKvEvents("r2", 0, StoredBlocks(a));
  state.kv_events().OnKvEvents("r3", 0, StoredBlocks(b));
  EXPECT_EQ(RoutedTo(state, b), "r3");
  state.Publish({CacheService({"r1", "r2"})});
  EXPECT_EQ(RoutedTo(state, a), "r2");
  // Published again (a new process under the same id would start from sequence 0): its old
  // entries did not survive its leaving.
  state.Publish({CacheService({"r1", "r2", "r3"})});
  EXPECT_EQ(RoutedTo(state, PromptKey("beta", 40), {"r1"}), "r2");
}

TEST(PrefixCacheRoutingTest, PendingPrefillSteersAwayFromABusyHolder) {
  GatewayState state(CacheConfig(route::PrefixIndexMode::kApproximate));
  state.Publish({CacheService({"r1", "r2"})});
  const RouteKey a = PromptKey("alpha", 400);  // 100 blocks
  std::optional<Ticket> first = state.Acquire("chat", a, {"r1"});
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->prefill_tokens, 400);  // nothing cached yet
  // r2 holds the prefix but still prefills 400 tokens: a short new prompt costs less on r1.
  EXPECT_EQ(RoutedTo(state, PromptKey("gamma", 40)), "r1");
  state.Release(*first, AttemptOutcome::kOk);
}

TEST(PrefixCacheRoutingTest, PublishHandsTheKvEndpointsToTheSubscriberWhenTheyChange) {
  GatewayState state(CacheConfig(route::PrefixIndexMode::kPrecise));
  std::vector<std::map<std::string, std::string>> seen;
  state.SetKvEndpointsListener([&](std::map<std::string, std::string> e) { seen.push_back(e); });
  state.Publish({CacheService({"r1", "r2"})});
  state.Publish({CacheService({"r1", "r2"})});  // unchanged: not handed again
  state.Publish({CacheService({"r2"})});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].size(), 2u);
  EXPECT_EQ(seen[1], (std::map<std::string, std::string>{{"r2", "ipc:///tmp/kv-r2"}}));
  EXPECT_EQ(state.KvEventEndpoints(), seen[1]);
}

TEST(PrefixCacheRoutingTest, MetricsSayWhichReplicasArePrecise) {
  GatewayState state(CacheConfig(route::PrefixIndexMode::kPrecise));
  state.Publish({CacheService({"r1", "r2"})});
  state.kv_events().OnKvEvents("r2", 0, StoredBlocks(PromptKey("alpha", 40)));
  state.kv_events().OnKvEvents("r2", 5, kvevents::KvEventBatch{1.0, {}, {}});  // a gap
  state.kv_events().OnKvError("r1", "bad msgpack");
  const std::string text = state.MetricsText();
  EXPECT_NE(text.find("gpuscale_gateway_prefix_cache_precise{replica=\"r2\"} 0"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpuscale_gateway_kv_events_gaps_total{replica=\"r2\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("gpuscale_gateway_kv_events_errors_total{replica=\"r1\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuscale::gateway
