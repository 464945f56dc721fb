// KvEventSink: where the KV-event subscriber (kv_event_subscriber.h) delivers what it reads
// from each replica's stream. GatewayState implements it (into its prefix-cache lookup); tests
// implement it to record. Called from the subscriber's thread only, one call at a time;
// an implementation must not block for long (it holds up every replica's stream).
#pragma once

#include <cstdint>
#include <string>

#include "kvevents/kv_event.h"

namespace gpuscale::gateway {

class KvEventSink {
 public:
  virtual ~KvEventSink() = default;
  // Message `seq` of `replica`'s stream, decoded.
  virtual void OnKvEvents(const std::string& replica, uint64_t seq,
                          const kvevents::KvEventBatch& batch) = 0;
  // The connection to `replica`'s publisher came up (`connected`) or went down. Down, the
  // publisher may have restarted (its cache with it), and what it sent meanwhile is lost.
  virtual void OnKvConnection(const std::string& replica, bool connected) = 0;
  // A message that could not be read (dropped: the next sequence number shows the gap), or an
  // endpoint that cannot be connected to; `error` says which.
  virtual void OnKvError(const std::string& replica, const std::string& error) = 0;
};

}  // namespace gpuscale::gateway
