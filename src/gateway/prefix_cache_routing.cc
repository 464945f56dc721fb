#include "gateway/prefix_cache_routing.h"

#include <unordered_set>

namespace gpuscale::gateway {
namespace {

using metrics::Label;
using metrics::MetricType;

route::PrefixCacheLookupOptions LookupOptions(route::PrefixIndexMode mode,
                                              const PrefixCacheConfig& config) {
  return {.mode = mode,
          .block_tokens = config.block_tokens,
          .capacity_blocks = config.capacity_blocks,
          .ttl_seconds = config.ttl.count()};
}

}  // namespace

PrefixCacheRouting::PrefixCacheRouting(route::PrefixIndexMode mode, const PrefixCacheConfig& config)
    : lookup_(LookupOptions(mode, config)) {}

void PrefixCacheRouting::Fill(std::span<route::Candidate> candidates, const RouteKey& key,
                              double now) const {
  if (!key.blocks) return;
  MutexLock lock(mu_);
  lookup_.Fill(candidates, *key.blocks, key.prompt_tokens, now);
}

void PrefixCacheRouting::Routed(uint64_t identity, const RouteKey& key, double now) {
  if (!key.blocks) return;
  MutexLock lock(mu_);
  lookup_.Routed(identity, *key.blocks, key.prompt_tokens, now);
}

void PrefixCacheRouting::Retain(const std::vector<std::string>& replicas) {
  std::unordered_set<uint64_t> live;
  for (const std::string& id : replicas) live.insert(route::HashText(id));
  MutexLock lock(mu_);
  lookup_.Retain(live);
  std::map<std::string, Stream> kept;
  for (const std::string& id : replicas) kept[id] = streams_[id];
  streams_ = std::move(kept);
}

void PrefixCacheRouting::OnKvEvents(const std::string& replica, uint64_t seq,
                                    const kvevents::KvEventBatch& batch) {
  MutexLock lock(mu_);
  auto it = streams_.find(replica);
  if (it == streams_.end()) return;  // unpublished meanwhile
  ++it->second.messages;
  lookup_.Apply(route::HashText(replica), seq, batch);
}

void PrefixCacheRouting::OnKvConnection(const std::string& replica, bool connected) {
  MutexLock lock(mu_);
  auto it = streams_.find(replica);
  if (it == streams_.end()) return;
  it->second.connected = connected;
  if (!connected) lookup_.Restart(route::HashText(replica));
}

void PrefixCacheRouting::OnKvError(const std::string& replica, const std::string& error) {
  MutexLock lock(mu_);
  auto it = streams_.find(replica);
  if (it == streams_.end()) return;
  ++it->second.errors;
  it->second.last_error = error;
}

void PrefixCacheRouting::WriteMetrics(metrics::ExpositionWriter& w) const {
  MutexLock lock(mu_);
  w.BeginFamily("gpuscale_gateway_prefix_cache_blocks", MetricType::kGauge,
                "KV blocks the gateway believes each replica holds, by index (precise: the "
                "replica's KV events; approximate: what the gateway routed there).");
  for (const auto& [id, s] : streams_) {
    const uint64_t r = route::HashText(id);
    w.AddValue(std::vector<Label>{{"replica", id}, {"source", "precise"}},
               static_cast<double>(lookup_.precise().BlocksOf(r)));
    w.AddValue(std::vector<Label>{{"replica", id}, {"source", "approximate"}},
               static_cast<double>(lookup_.approximate().BlocksOf(r)));
  }
  w.BeginFamily("gpuscale_gateway_prefix_cache_precise", MetricType::kGauge,
                "1 while a replica is routed on its own KV events, 0 while on the approximate "
                "index (never published, a sequence gap not yet resynced, restarted).");
  for (const auto& [id, s] : streams_) {
    w.AddValue(std::vector<Label>{{"replica", id}}, lookup_.Precise(route::HashText(id)) ? 1 : 0);
  }
  w.BeginFamily("gpuscale_gateway_kv_events_connected", MetricType::kGauge,
                "1 while the gateway's subscription to a replica's KV events is connected.");
  for (const auto& [id, s] : streams_) {
    w.AddValue(std::vector<Label>{{"replica", id}}, s.connected ? 1 : 0);
  }
  w.BeginFamily("gpuscale_gateway_kv_events_messages_total", MetricType::kCounter,
                "KV-event messages applied, by replica.");
  for (const auto& [id, s] : streams_) {
    w.AddValue(std::vector<Label>{{"replica", id}}, static_cast<double>(s.messages));
  }
  w.BeginFamily("gpuscale_gateway_kv_events_gaps_total", MetricType::kCounter,
                "Sequence gaps seen on a replica's KV events (messages lost).");
  for (const auto& [id, s] : streams_) {
    w.AddValue(std::vector<Label>{{"replica", id}},
               static_cast<double>(lookup_.precise().GapsOf(route::HashText(id))));
  }
  w.BeginFamily("gpuscale_gateway_kv_events_errors_total", MetricType::kCounter,
                "KV-event messages that could not be decoded, or endpoints that could not be "
                "subscribed to, by replica.");
  for (const auto& [id, s] : streams_) {
    w.AddValue(std::vector<Label>{{"replica", id}}, static_cast<double>(s.errors));
  }
}

}  // namespace gpuscale::gateway
