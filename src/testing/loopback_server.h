// LoopbackServer: a cpp-httplib server on 127.0.0.1 and a kernel-chosen port for tests that
// need a real HTTP peer (a replica's /metrics, a Prometheus API, an OpenAI-style endpoint).
// Add routes on server() before Start(); Stop() (or the destructor) stops and joins it.
// A test fixture whose handlers touch its own members derives from it and calls Stop() in its
// destructor, so no handler runs once those members are gone.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>
#include <string_view>
#include <thread>

namespace gpuscale::testing {

class LoopbackServer {
 public:
  LoopbackServer() = default;
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;
  ~LoopbackServer() { Stop(); }

  httplib::Server& server() { return server_; }

  // Binds and runs the accept loop on a thread; returns once it accepts. False when no port
  // could be bound (port() is then <= 0).
  bool Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) return false;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs, so wait for it before anyone can stop.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    return true;
  }

  void Stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  // "http://127.0.0.1:<port>" followed by `path`.
  std::string Url(std::string_view path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
};

}  // namespace gpuscale::testing
