#include "emulator/kv_event_publisher.h"

#include <fmt/format.h>

#include <zmq.hpp>

#include "kvevents/kv_event_codec.h"

namespace gpuscale::emulator {

struct KvEventPublisher::Socket {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::pub};
};

Result<std::unique_ptr<KvEventPublisher>> KvEventPublisher::Bind(const std::string& endpoint,
                                                                 std::string topic) {
  auto socket = std::make_unique<Socket>();
  std::string bound;
  try {
    socket->socket.set(zmq::sockopt::linger, 0);  // closing never waits for subscribers
    socket->socket.bind(endpoint);
    bound = socket->socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return InvalidArgument(fmt::format("cannot bind {}: {}", endpoint, e.what()),
                           "--kv-events-endpoint");
  }
  return std::unique_ptr<KvEventPublisher>(
      new KvEventPublisher(std::move(socket), std::move(bound), std::move(topic)));
}

KvEventPublisher::KvEventPublisher(std::unique_ptr<Socket> socket, std::string endpoint,
                                   std::string topic)
    : socket_(std::move(socket)), endpoint_(std::move(endpoint)), topic_(std::move(topic)) {}

KvEventPublisher::~KvEventPublisher() = default;

void KvEventPublisher::Publish(const kvevents::KvEventBatch& batch) {
  const std::string seq = kvevents::EncodeKvEventSeq(next_seq_++);
  const std::string payload = kvevents::EncodeKvEventBatch(batch);
  zmq::socket_t& s = socket_->socket;
  // A PUB socket never blocks on send: past the high-water mark it drops the message (the
  // sends' empty results, dropped here). An error is dropped too: the stream is advisory,
  // and a subscriber sees the lost sequence number.
  try {
    (void)s.send(zmq::buffer(topic_), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    (void)s.send(zmq::buffer(seq), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    (void)s.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
  }
}

}  // namespace gpuscale::emulator
