#include "gateway/relay_threads.h"

#include <algorithm>
#include <iterator>

namespace gpuscale::gateway {

namespace asio = net::asio;

std::optional<net::tcp::socket> UpstreamPool::Take(const std::string& key) {
  const auto now = std::chrono::steady_clock::now();
  auto it = idle_.find(key);
  while (it != idle_.end() && !it->second.empty()) {
    Idle c = std::move(it->second.back());
    it->second.pop_back();
    --total_;
    const auto idle = now - c.since;
    if (idle < kPooledIdle &&
        (idle < kCheckedIdle || Peek(c.socket.native_handle()) == PeekResult::kQuiet)) {
      return std::move(c.socket);
    }
    // Closed by the replica, idle too long, or unexpected bytes: `c` closes it.
  }
  return std::nullopt;
}

void UpstreamPool::Give(const std::string& key, net::tcp::socket socket,
                        std::chrono::steady_clock::time_point now) {
  if (now - last_sweep_ >= kPooledIdle) Sweep(now);
  std::vector<Idle>& idle = idle_[key];
  if (idle.size() >= kMaxIdlePerReplica || total_ >= max_idle_) return;  // `socket` closes
  if (!sweeping_) {
    sweeping_ = true;
    asio::co_spawn(socket.get_executor(), SweepLoop(), asio::detached);
  }
  idle.push_back({std::move(socket), now});
  ++total_;
}

asio::awaitable<void> UpstreamPool::SweepLoop() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!idle_.empty()) {
    timer.expires_after(kPooledIdle);
    co_await timer.async_wait(net::kTuple);
    Sweep(std::chrono::steady_clock::now());
  }
  sweeping_ = false;
}

void UpstreamPool::Sweep(std::chrono::steady_clock::time_point now) {
  last_sweep_ = now;
  for (auto it = idle_.begin(); it != idle_.end();) {
    std::vector<Idle>& idle = it->second;
    // Oldest first: the expired ones are a prefix.
    auto fresh = std::find_if(idle.begin(), idle.end(),
                              [now](const Idle& c) { return now - c.since < kPooledIdle; });
    total_ -= static_cast<size_t>(fresh - idle.begin());
    idle.erase(idle.begin(), fresh);
    it = idle.empty() ? idle_.erase(it) : std::next(it);
  }
}

void RelayWatch::Add(Relay& r, const asio::any_io_executor& executor) {
  r.index = relays_.size();
  relays_.push_back(&r);
  if (!checking_) {
    checking_ = true;
    asio::co_spawn(executor, CheckLoop(), asio::detached);
  }
}

void RelayWatch::Remove(Relay& r) {
  Relay* last = relays_.back();
  relays_[r.index] = last;
  last->index = r.index;
  relays_.pop_back();
}

asio::awaitable<void> RelayWatch::CheckLoop() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!relays_.empty()) {
    timer.expires_after(kInterval);
    co_await timer.async_wait(net::kTuple);
    CheckOnce(Clock::now());
  }
  checking_ = false;
}

void RelayWatch::CheckOnce(Clock::time_point now) {
  // A cancelled operation completes later (its handler is posted), so relays_ does not
  // change under this loop.
  for (Relay* r : relays_) {
    if (r->ended != Ended::kNo) continue;
    const bool waiting_upstream = r->upstream_since != Clock::time_point{};
    const bool writing_client = r->client_since != Clock::time_point{};
    // Bytes of a next pipelined request (kData) mean the client is still there.
    if (r->awaiting_first_byte &&
        Peek(r->client->socket().native_handle()) == PeekResult::kClosed) {
      r->ended = Ended::kClientGone;
    } else if (waiting_upstream && r->replica_down != nullptr &&
               r->replica_down->load(std::memory_order_relaxed)) {
      r->ended = Ended::kReplicaDown;
    } else if (waiting_upstream && now - r->upstream_since > r->SilenceLimit()) {
      r->ended = Ended::kUpstreamTimeout;
    } else if (writing_client && now - r->client_since > net::kClientWriteTimeout) {
      r->ended = Ended::kClientTimeout;
    } else {
      continue;
    }
    r->upstream->cancel();  // closing the replica's connection stops the work there
    r->client->cancel();
  }
}

RelayThread& RelayThreads::For(const asio::any_io_executor& executor) {
  const void* context = &asio::query(executor, asio::execution::context);
  MutexLock lock(mu_);
  for (auto& [owner, thread] : threads_) {
    if (owner == context) return *thread;
  }
  threads_.emplace_back(context, std::make_unique<RelayThread>());
  threads_.back().second->pool.set_max_idle(max_idle_per_thread_);
  return *threads_.back().second;
}

void RelayThreads::CloseIdle() {
  MutexLock lock(mu_);
  for (auto& [owner, thread] : threads_) thread->pool.CloseIdle();
}

}  // namespace gpuscale::gateway
