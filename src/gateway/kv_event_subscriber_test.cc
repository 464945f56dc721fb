// KvEventSubscriber against a real ZeroMQ PUB socket on loopback (ipc, in a temporary
// directory), sending the bytes vLLM's ZmqEventPublisher sends: [topic, 8-byte big-endian
// sequence number, msgpack batch] (kvevents::EncodeKvEventBatch writes vLLM's array_like form).
// The sink is PrefixCacheRouting, so the tests see what routing would: a gap, garbage bytes
// and a restarted publisher each leave the replica's index as route::KvBlockIndex says.
#include "gateway/kv_event_subscriber.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <zmq.hpp>

#include "gateway/prefix_cache_routing.h"
#include "kvevents/kv_event_codec.h"
#include "route/picker.h"

namespace gpuscale::gateway {
namespace {

using std::chrono::milliseconds;

// PrefixCacheRouting that also lets a test wait for what arrived (the subscriber's thread
// calls it); the waits are bounded, never sleeps.
class WatchedSink final : public KvEventSink {
 public:
  WatchedSink() : routing_(route::PrefixIndexMode::kPrecise, Config()) { routing_.Retain({"r1"}); }
  void OnKvEvents(const std::string& r, uint64_t seq, const kvevents::KvEventBatch& b) override {
    routing_.OnKvEvents(r, seq, b);
    Note([&] { ++messages_; });
  }
  void OnKvConnection(const std::string& r, bool up) override {
    routing_.OnKvConnection(r, up);
    Note([&] { up ? ++connects_ : ++disconnects_; });
  }
  void OnKvError(const std::string& r, const std::string& error) override {
    routing_.OnKvError(r, error);
    Note([&] { ++errors_; });
  }
  // Waits up to `timeout` for `ready` (read under the lock).
  bool WaitFor(std::function<bool(const WatchedSink&)> ready,
               std::chrono::seconds timeout = std::chrono::seconds(5)) {
    MutexLock lock(mu_);
    return cv_.WaitFor(mu_, timeout, [&]() GS_REQUIRES(mu_) { return ready(*this); });
  }
  // Blocks the sink holds for `replica` that lead `keys`, and whether they are trusted.
  int64_t CachedBlocks(const std::vector<uint64_t>& keys) const {
    auto owned = std::make_shared<std::vector<uint64_t>>(keys);
    RouteKey key;
    key.blocks = owned;
    key.prompt_tokens = static_cast<int64_t>(keys.size()) * 4 + 1;
    std::vector<route::Candidate> c{{.identity = route::HashText("r1")}};
    routing_.Fill(c, key, 0);
    return c[0].cached_tokens / 4;
  }
  std::string Metrics() const {
    metrics::ExpositionWriter w;
    routing_.WriteMetrics(w);
    return w.Take();
  }

  int messages_ = 0, connects_ = 0, disconnects_ = 0, errors_ = 0;  // read in WaitFor

 private:
  static PrefixCacheConfig Config() {
    PrefixCacheConfig c;
    c.block_tokens = 4;
    c.capacity_blocks = 100;
    return c;
  }
  void Note(const std::function<void()>& change) {
    MutexLock lock(mu_);
    change();
    cv_.NotifyAll();
  }
  PrefixCacheRouting routing_;
  Mutex mu_;
  CondVar cv_;
};

kvevents::KvEventBatch Stores(std::vector<uint64_t> hashes) {
  kvevents::KvEvent e;
  e.kind = kvevents::KvEventKind::kBlockStored;
  e.block_hashes = std::move(hashes);
  e.block_size = 4;
  e.medium = "GPU";
  return {1.7e9, {e}, {}};
}

class KvEventSubscriberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gs-kvsub-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    endpoint_ = "ipc://" + dir_ + "/kv.ipc";
    Bind();
  }
  void TearDown() override {
    subscriber_.reset();
    pub_.close();
    std::filesystem::remove_all(dir_);
  }
  void Bind() {
    pub_ = zmq::socket_t(context_, zmq::socket_type::pub);
    pub_.set(zmq::sockopt::linger, 0);
    pub_.bind(endpoint_);
  }
  void Send(std::string_view seq_frame, std::string_view payload) {
    pub_.send(zmq::buffer(std::string_view("kv")), zmq::send_flags::sndmore);
    pub_.send(zmq::buffer(seq_frame), zmq::send_flags::sndmore);
    pub_.send(zmq::buffer(payload), zmq::send_flags::none);
  }
  void Send(uint64_t seq, const kvevents::KvEventBatch& batch) {
    Send(kvevents::EncodeKvEventSeq(seq), kvevents::EncodeKvEventBatch(batch));
  }
  // Subscribes (the first time), waits for the connection's `connects`-th handshake, then
  // until the publisher sees the subscription (a PUB drops what it sends before it: ZeroMQ's
  // slow joiner) by sending a message that cannot be decoded, which leaves the index as it is,
  // until one arrives.
  void Connect(int connects = 1) {
    if (!subscriber_) {
      subscriber_ = std::make_unique<KvEventSubscriber>(sink_, "kv");
      subscriber_->SetEndpoints({{"r1", endpoint_}});
    }
    ASSERT_TRUE(sink_.WaitFor([&](const WatchedSink& s) { return s.connects_ >= connects; }));
    const int before = Read([](const WatchedSink& s) { return s.errors_; });
    for (int i = 0; i < 10; ++i) {
      Send("prime", "");
      if (sink_.WaitFor([&](const WatchedSink& s) { return s.errors_ > before; },
                        std::chrono::seconds(1))) {
        return;
      }
    }
    FAIL() << "no message arrived";
  }
  int Read(const std::function<int(const WatchedSink&)>& f) {
    int v = 0;
    sink_.WaitFor([&](const WatchedSink& s) { return v = f(s), true; });
    return v;
  }
  // Sends a batch and waits until the sink applied it.
  void SendAndWait(uint64_t seq, const kvevents::KvEventBatch& batch) {
    const int before = Read([](const WatchedSink& s) { return s.messages_; });
    Send(seq, batch);
    ASSERT_TRUE(sink_.WaitFor([&](const WatchedSink& s) { return s.messages_ > before; }));
  }
  // Sends bytes that cannot be decoded and waits until the sink reported them.
  void SendGarbageAndWait(std::string_view seq_frame, std::string_view payload) {
    const int before = Read([](const WatchedSink& s) { return s.errors_; });
    Send(seq_frame, payload);
    ASSERT_TRUE(sink_.WaitFor([&](const WatchedSink& s) { return s.errors_ > before; }));
  }

  std::string dir_, endpoint_;
  zmq::context_t context_{1};
  zmq::socket_t pub_;
  WatchedSink sink_;
  std::unique_ptr<KvEventSubscriber> subscriber_;
};

TEST_F(KvEventSubscriberTest, AppliesAStreamFromSequenceZero) {
  Connect();
  SendAndWait(0, Stores({11, 12, 13}));
  EXPECT_EQ(sink_.CachedBlocks({11, 12, 13, 14}), 3);
  SendAndWait(1, Stores({14}));
  EXPECT_EQ(sink_.CachedBlocks({11, 12, 13, 14}), 4);
  EXPECT_NE(sink_.Metrics().find("gpuscale_gateway_prefix_cache_precise{replica=\"r1\"} 1"),
            std::string::npos);
}

TEST_F(KvEventSubscriberTest, AGapDropsTheReplicasEntriesUntilItResyncs) {
  Connect();
  SendAndWait(0, Stores({11, 12}));
  SendAndWait(2, Stores({13}));  // 1 was lost
  const std::string metrics = sink_.Metrics();
  EXPECT_NE(metrics.find("gpuscale_gateway_kv_events_gaps_total{replica=\"r1\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gpuscale_gateway_prefix_cache_precise{replica=\"r1\"} 0"),
            std::string::npos);
  // Not trusted: looked up on the approximate index, where nothing was routed.
  EXPECT_EQ(sink_.CachedBlocks({11, 12}), 0);
}

TEST_F(KvEventSubscriberTest, GarbageIsReportedAndTheStreamGoesOn) {
  Connect();
  SendAndWait(0, Stores({11}));
  SendGarbageAndWait(kvevents::EncodeKvEventSeq(1), "\xc1\xff not msgpack");
  SendGarbageAndWait("short", kvevents::EncodeKvEventBatch(Stores({12})));
  // The message lost to garbage (sequence 1) is a gap for what follows.
  SendAndWait(2, Stores({11, 12}));
  EXPECT_EQ(sink_.CachedBlocks({11, 12}), 0);
  EXPECT_NE(sink_.Metrics().find("gpuscale_gateway_kv_events_gaps_total{replica=\"r1\"} 1"),
            std::string::npos);
}

TEST_F(KvEventSubscriberTest, ARestartedPublisherStartsTheReplicaAfresh) {
  Connect();
  SendAndWait(0, Stores({11, 12}));
  ASSERT_EQ(sink_.CachedBlocks({11, 12}), 2);
  // The engine exits (its socket closes) and a new one binds the same endpoint.
  pub_.close();
  ASSERT_TRUE(sink_.WaitFor([](const WatchedSink& s) { return s.disconnects_ >= 1; }));
  EXPECT_EQ(sink_.CachedBlocks({11, 12}), 0);  // its blocks went with it
  Bind();
  Connect(2);
  SendAndWait(0, Stores({21}));  // the new process counts from 0 again
  EXPECT_EQ(sink_.CachedBlocks({21}), 1);
  EXPECT_EQ(sink_.CachedBlocks({11, 12}), 0);
}

TEST_F(KvEventSubscriberTest, AnEndpointZeroMqRefusesIsReported) {
  subscriber_ = std::make_unique<KvEventSubscriber>(sink_, "kv");
  subscriber_->SetEndpoints({{"r1", "nonsense://r1"}});
  ASSERT_TRUE(sink_.WaitFor([](const WatchedSink& s) { return s.errors_ >= 1; }));
}

}  // namespace
}  // namespace gpuscale::gateway
