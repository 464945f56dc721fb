// KvEventPublisher: publishes an engine's KV events as vLLM's ZmqEventPublisher does
// (vllm/distributed/kv_events.py): a ZeroMQ PUB socket, one message per batch of three frames
// [topic, sequence number as 8 bytes big-endian counting from 0, msgpack payload
// (kvevents::EncodeKvEventBatch)]. A subscriber (the gateway, vLLM's example subscriber)
// connects to it and detects lost messages by the sequence numbers. vLLM binds wildcard
// endpoints and connects to others; the emulator always binds, so subscribers connect to each
// replica. No replay socket.
//
// Ownership: owns its ZeroMQ context and socket. Thread-safety: none (ZeroMQ sockets are not
// thread-safe); EmulatorServer publishes under its mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"
#include "kvevents/kv_event.h"

namespace gpuscale::emulator {

class KvEventPublisher {
 public:
  // Binds a PUB socket to `endpoint` (e.g. "tcp://127.0.0.1:5557"; port "*" picks a free one,
  // read back with endpoint()). Errors: InvalidArgument (field "--kv-events-endpoint") when
  // ZeroMQ refuses the endpoint or cannot bind it.
  static Result<std::unique_ptr<KvEventPublisher>> Bind(const std::string& endpoint,
                                                        std::string topic);
  ~KvEventPublisher();

  // Sends one batch without blocking: with no subscriber, or one past ZeroMQ's high-water
  // mark, the message is dropped (a PUB socket's behaviour; subscribers see the sequence gap).
  void Publish(const kvevents::KvEventBatch& batch);

  // The bound endpoint, with the port ZeroMQ chose.
  const std::string& endpoint() const { return endpoint_; }
  uint64_t published() const { return next_seq_; }

 private:
  struct Socket;
  KvEventPublisher(std::unique_ptr<Socket> socket, std::string endpoint, std::string topic);

  std::unique_ptr<Socket> socket_;
  std::string endpoint_;
  std::string topic_;
  uint64_t next_seq_ = 0;
};

}  // namespace gpuscale::emulator
