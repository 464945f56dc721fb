// KvEventSubscriber: the gateway's end of the replicas' KV-event streams (docs/gateway.md,
// "Prefix cache"). A ZeroMQ SUB socket connects to each replica's endpoint (vLLM's
// ZmqEventPublisher, `gpuscale emulate --kv-events-endpoint`), reads its messages
// [topic, 8-byte big-endian sequence number, msgpack batch], decodes them
// (kvevents/kv_event_codec.h) and hands them to a KvEventSink with the replica's id. A socket
// monitor on each SUB reports the connection going up and down (a publisher that went away).
//
// The I/O adapter of precise prefix-cache routing: the index it feeds (route::KvBlockIndex via
// GatewayState) stays pure. One thread of its own polls every socket with a short timeout and
// calls the sink; it never takes the gateway's routing lock while waiting on a socket (the
// sink takes a lock of its own only to apply a message already decoded).
//
// Ownership: owns its ZeroMQ context, sockets and thread; `sink` must outlive it.
// Thread-safety: SetEndpoints may be called from any thread; the destructor stops the thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "core/mutex.h"
#include "gateway/kv_event_sink.h"

namespace gpuscale::gateway {

class KvEventSubscriber {
 public:
  // `topic`: the prefix of the first frame to subscribe to ("" = every message, vLLM's default
  // topic being empty).
  KvEventSubscriber(KvEventSink& sink, std::string topic);
  ~KvEventSubscriber();
  KvEventSubscriber(const KvEventSubscriber&) = delete;
  KvEventSubscriber& operator=(const KvEventSubscriber&) = delete;

  // Replica id -> endpoint ("tcp://127.0.0.1:5557", "ipc:///run/x.sock"): replicas new here
  // are subscribed to, those gone (or whose endpoint changed) unsubscribed, within a poll
  // interval.
  void SetEndpoints(std::map<std::string, std::string> endpoints);

 private:
  struct Streams;  // ZeroMQ's types, in the .cc only
  void Run();

  KvEventSink& sink_;
  const std::string topic_;
  Mutex mu_;
  std::map<std::string, std::string> wanted_ GS_GUARDED_BY(mu_);
  std::atomic<bool> changed_{false};
  std::atomic<bool> stop_{false};
  std::unique_ptr<Streams> streams_;  // used by the thread only
  std::thread thread_;
};

}  // namespace gpuscale::gateway
