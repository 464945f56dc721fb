#include "gateway/kv_event_subscriber.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "kvevents/kv_event_codec.h"

namespace gpuscale::gateway {
namespace {

// How long a poll waits: the delay before a new endpoint is subscribed to, and before Stop.
constexpr std::chrono::milliseconds kPollInterval{50};
// Messages read from one socket per poll, so that a busy replica does not starve the others.
constexpr int kMaxMessagesPerPoll = 256;
// A vLLM message has three frames; more is not one of its messages.
constexpr size_t kMaxFrames = 8;

}  // namespace

// One replica's stream: its SUB socket and the PAIR end of that socket's monitor.
struct Stream {
  std::string endpoint;
  zmq::socket_t sub;
  zmq::socket_t monitor;
};

struct KvEventSubscriber::Streams {
  zmq::context_t context{1};
  std::map<std::string, Stream> by_replica;
  uint64_t next_monitor = 0;
};

namespace {

void Close(Stream& s) {
  zmq_socket_monitor(s.sub.handle(), nullptr, 0);
  s.monitor.close();
  s.sub.close();
}

// Reads one message's frames without waiting; false when none is there.
bool ReadFrames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
  frames.clear();
  zmq::message_t frame;
  do {
    if (!socket.recv(frame, zmq::recv_flags::dontwait)) return !frames.empty();
    frames.push_back(std::move(frame));
  } while (frames.back().more());
  return true;
}

}  // namespace

KvEventSubscriber::KvEventSubscriber(KvEventSink& sink, std::string topic)
    : sink_(sink), topic_(std::move(topic)), streams_(std::make_unique<Streams>()) {
  thread_ = std::thread([this] { Run(); });
}

KvEventSubscriber::~KvEventSubscriber() {
  stop_ = true;
  thread_.join();
  for (auto& [replica, s] : streams_->by_replica) Close(s);
}

void KvEventSubscriber::SetEndpoints(std::map<std::string, std::string> endpoints) {
  MutexLock lock(mu_);
  wanted_ = std::move(endpoints);
  changed_ = true;
}

namespace {

// Opens `replica`'s stream; an endpoint ZeroMQ refuses goes to the sink.
std::optional<Stream> Open(zmq::context_t& context, const std::string& replica,
                           const std::string& endpoint, const std::string& topic,
                           uint64_t monitor_id, KvEventSink& sink) {
  Stream s{endpoint, zmq::socket_t(context, zmq::socket_type::sub),
           zmq::socket_t(context, zmq::socket_type::pair)};
  const std::string monitor = fmt::format("inproc://gpuscale-kv-monitor-{}", monitor_id);
  try {
    s.sub.set(zmq::sockopt::linger, 0);
    s.sub.set(zmq::sockopt::subscribe, topic);
    // Before connecting, so that the first connection is reported too.
    if (zmq_socket_monitor(s.sub.handle(), monitor.c_str(),
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) != 0) {
      throw zmq::error_t();
    }
    s.monitor.set(zmq::sockopt::linger, 0);
    s.monitor.connect(monitor);
    s.sub.connect(endpoint);
  } catch (const zmq::error_t& e) {
    sink.OnKvError(replica, fmt::format("cannot subscribe to {}: {}", endpoint, e.what()));
    Close(s);
    return std::nullopt;
  }
  return s;
}

// Decodes one message and hands it to the sink.
void Deliver(const std::string& replica, const std::vector<zmq::message_t>& frames,
             KvEventSink& sink) {
  if (frames.size() > kMaxFrames) {
    sink.OnKvError(replica, fmt::format("expected 3 frames, got {}", frames.size()));
    return;
  }
  std::array<std::string_view, kMaxFrames> views;
  for (size_t i = 0; i < frames.size(); ++i) views[i] = frames[i].to_string_view();
  Result<kvevents::KvEventMessage> message =
      kvevents::DecodeKvEventMessage(std::span(views.data(), frames.size()));
  if (!message) return sink.OnKvError(replica, message.error().ToString());
  sink.OnKvEvents(replica, message->seq, message->batch);
}

// One monitor event: [6 bytes: uint16 event, uint32 value][endpoint].
void DeliverMonitorEvent(const std::string& replica, const std::vector<zmq::message_t>& frames,
                         KvEventSink& sink) {
  if (frames.empty() || frames[0].size() < sizeof(uint16_t)) return;
  uint16_t event = 0;
  std::memcpy(&event, frames[0].data(), sizeof(event));
  if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) sink.OnKvConnection(replica, true);
  if (event == ZMQ_EVENT_DISCONNECTED) sink.OnKvConnection(replica, false);
}

}  // namespace

void KvEventSubscriber::Run() {
  Streams& st = *streams_;
  std::vector<zmq::message_t> frames;
  std::vector<zmq::pollitem_t> items;
  while (!stop_) {
    if (changed_.exchange(false)) {
      std::map<std::string, std::string> wanted;
      {
        MutexLock lock(mu_);
        wanted = wanted_;
      }
      for (auto it = st.by_replica.begin(); it != st.by_replica.end();) {
        auto w = wanted.find(it->first);
        if (w != wanted.end() && w->second == it->second.endpoint) {
          ++it;
          continue;
        }
        Close(it->second);
        it = st.by_replica.erase(it);
      }
      for (const auto& [replica, endpoint] : wanted) {
        if (st.by_replica.contains(replica) || endpoint.empty()) continue;
        if (auto s = Open(st.context, replica, endpoint, topic_, st.next_monitor++, sink_)) {
          st.by_replica.emplace(replica, std::move(*s));
        }
      }
    }
    items.clear();
    for (auto& [replica, s] : st.by_replica) {
      items.push_back({s.sub.handle(), 0, ZMQ_POLLIN, 0});
      items.push_back({s.monitor.handle(), 0, ZMQ_POLLIN, 0});
    }
    if (items.empty()) {
      std::this_thread::sleep_for(kPollInterval);
      continue;
    }
    try {
      zmq::poll(items, kPollInterval);
    } catch (const zmq::error_t&) {
      continue;  // EINTR: poll again
    }
    size_t i = 0;
    for (auto& [replica, s] : st.by_replica) {
      if (items[2 * i].revents & ZMQ_POLLIN) {
        for (int n = 0; n < kMaxMessagesPerPoll && ReadFrames(s.sub, frames); ++n) {
          Deliver(replica, frames, sink_);
        }
      }
      if (items[2 * i + 1].revents & ZMQ_POLLIN) {
        while (ReadFrames(s.monitor, frames)) DeliverMonitorEvent(replica, frames, sink_);
      }
      ++i;
    }
  }
}

}  // namespace gpuscale::gateway
