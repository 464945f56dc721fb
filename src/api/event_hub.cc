#include "api/event_hub.h"

#include <utility>

namespace gpuscale::api {

EventHub::EventHub(daemon::DaemonApi& daemon, Seconds poll) : daemon_(daemon), poll_(poll) {}

EventHub::~EventHub() { Stop(); }

void EventHub::Stop() {
  std::thread thread;
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
  WakeAll();
}

int64_t EventHub::Subscribe(Wake wake) {
  std::lock_guard lock(mu_);
  if (!thread_.joinable() && !stop_) thread_ = std::thread([this] { Run(); });
  const int64_t handle = next_handle_++;
  wakes_.emplace(handle, std::move(wake));
  return handle;
}

void EventHub::Unsubscribe(int64_t handle) {
  std::lock_guard lock(mu_);
  wakes_.erase(handle);
}

int EventHub::subscribers() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(wakes_.size());
}

std::shared_ptr<const std::vector<daemon::ServiceView>> EventHub::Services(Seconds max_age) {
  std::lock_guard lock(services_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!services_ || !services_at_ || now - *services_at_ >= max_age) {
    services_ = daemon_.ServicesSnapshot();
    services_at_ = now;
  }
  return services_;
}

void EventHub::WakeAll() {
  // Under the lock: a stream that unsubscribes waits until its wake-up has returned, so a
  // wake-up never runs for a stream that is gone.
  std::lock_guard lock(mu_);
  for (const auto& [handle, wake] : wakes_) wake();
}

void EventHub::Run() {
  int64_t newest = daemon_.WaitForEvents(0, Seconds{0});
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    const int64_t now_newest = daemon_.WaitForEvents(newest, poll_);
    if (now_newest > newest) {
      newest = now_newest;
      WakeAll();
    }
  }
}

}  // namespace gpuscale::api
