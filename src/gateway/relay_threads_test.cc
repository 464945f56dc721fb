#include "gateway/relay_threads.h"

#include <gtest/gtest.h>

#include <chrono>

namespace gpuscale::gateway {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A socket connected to a loopback listener (the backlog completes the handshake; nothing
// needs to accept it).
class UpstreamPoolTest : public ::testing::Test {
 protected:
  net::tcp::socket Connected() {
    net::tcp::socket s(io_);
    s.connect(acceptor_.local_endpoint());
    return s;
  }

  net::asio::io_context io_;
  net::tcp::acceptor acceptor_{io_, {net::asio::ip::make_address("127.0.0.1"), 0}};
};

TEST_F(UpstreamPoolTest, ASweepClosesConnectionsIdlePastThePooledIdleTimeAndForgetsTheirReplica) {
  UpstreamPool pool;
  const Clock::time_point t0 = Clock::now();
  pool.Give("gone:1", Connected(), t0);  // a replica that is scaled in: never taken again
  pool.Give("gone:1", Connected(), t0);
  pool.Give("busy:2", Connected(), t0 + 1500ms);
  EXPECT_EQ(pool.idle_count(), 3u);
  pool.Sweep(t0 + UpstreamPool::kPooledIdle - 1ms);
  EXPECT_EQ(pool.idle_count(), 3u) << "nothing has been idle for the whole time yet";
  pool.Sweep(t0 + UpstreamPool::kPooledIdle);
  EXPECT_EQ(pool.idle_count(), 1u) << "the gone replica's two are closed, the newer one kept";
  EXPECT_FALSE(pool.Take("gone:1").has_value());
}

TEST_F(UpstreamPoolTest, GivingSweepsAtMostOncePerPooledIdleTime) {
  UpstreamPool pool;
  const Clock::time_point t0 = Clock::now();
  pool.Give("a:1", Connected(), t0);  // the first Give sweeps (nothing to close)
  pool.Give("b:2", Connected(), t0 + 1s);
  pool.Give("b:2", Connected(), t0 + UpstreamPool::kPooledIdle + 500ms);  // sweeps: a's goes
  EXPECT_EQ(pool.idle_count(), 2u);
  pool.Give("b:2", Connected(), t0 + UpstreamPool::kPooledIdle + 1s);  // no sweep this soon
  EXPECT_EQ(pool.idle_count(), 3u);
}

TEST_F(UpstreamPoolTest, ConnectionsAreClosedOnceIdleEvenWhenNoRequestFollows) {
  UpstreamPool pool;
  pool.Give("r:1", Connected());
  net::tcp::socket replica_side = acceptor_.accept();
  // Only the pool's own timer runs here: no request gives a connection back or takes one.
  // run_for returns early once the timer's loop ends with the pool empty.
  io_.run_for(10 * UpstreamPool::kPooledIdle);
  ASSERT_EQ(pool.idle_count(), 0u);  // else the read below would wait forever
  char byte;
  boost::system::error_code ec;
  replica_side.read_some(net::asio::buffer(&byte, 1), ec);
  EXPECT_EQ(ec, net::asio::error::eof) << "the replica sees the gateway close its connection";
}

TEST_F(UpstreamPoolTest, TakeHandsOutTheNewestOpenConnection) {
  UpstreamPool pool;
  net::tcp::socket older = Connected();
  net::tcp::socket newer = Connected();
  const auto newer_port = newer.local_endpoint().port();
  pool.Give("r:1", std::move(older));
  pool.Give("r:1", std::move(newer));
  std::optional<net::tcp::socket> taken = pool.Take("r:1");
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->local_endpoint().port(), newer_port);
  EXPECT_EQ(pool.idle_count(), 1u);
  EXPECT_FALSE(pool.Take("other:2").has_value());
}

}  // namespace
}  // namespace gpuscale::gateway
