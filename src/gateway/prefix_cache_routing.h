// PrefixCacheRouting: the gateway's side of prefix_cache routing (route/picker.h). It owns the
// route::PrefixCacheLookup (both indexes) under a lock of its own, so that the KV-event
// subscriber's thread (kv_event_subscriber.h, through the KvEventSink it implements) applies
// messages without ever waiting on GatewayState's routing lock, and routing (which calls Fill
// and Routed under that lock) waits at most for one decoded message to be applied.
// Replicas are named by their ids here and by HashText(id) (Candidate::identity) in the index.
//
// A replica's stream going down (its publisher exited or the connection broke) counts as a
// restart: its precise entries are dropped and it is routed on the approximate index until
// its stream, back, starts again from sequence 0 or resyncs (route/kv_block_index.h).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "gateway/gateway_config.h"
#include "gateway/kv_event_sink.h"
#include "gateway/route_key.h"
#include "metrics/exposition_writer.h"
#include "route/picker.h"
#include "route/prefix_cache_lookup.h"

namespace gpuscale::gateway {

class PrefixCacheRouting final : public KvEventSink {
 public:
  PrefixCacheRouting(route::PrefixIndexMode mode, const PrefixCacheConfig& config);

  // Sets candidates' cached_tokens for `key`'s prompt (nothing without block keys).
  void Fill(std::span<route::Candidate> candidates, const RouteKey& key, double now) const;
  // The request went to the replica of `identity`.
  void Routed(uint64_t identity, const RouteKey& key, double now);
  // The replicas published now (ids): the others' entries are forgotten.
  void Retain(const std::vector<std::string>& replicas);
  // gpuscale_gateway_prefix_cache_* and _kv_events_* families of the retained replicas.
  void WriteMetrics(metrics::ExpositionWriter& w) const;

  // KvEventSink (the subscriber's thread).
  void OnKvEvents(const std::string& replica, uint64_t seq,
                  const kvevents::KvEventBatch& batch) override;
  void OnKvConnection(const std::string& replica, bool connected) override;
  void OnKvError(const std::string& replica, const std::string& error) override;

 private:
  // What the stream of one published replica did.
  struct Stream {
    bool connected = false;
    int64_t messages = 0;
    int64_t errors = 0;
    std::string last_error;
  };

  mutable Mutex mu_;
  route::PrefixCacheLookup lookup_ GS_GUARDED_BY(mu_);
  std::map<std::string, Stream> streams_ GS_GUARDED_BY(mu_);  // by published replica id
};

}  // namespace gpuscale::gateway
