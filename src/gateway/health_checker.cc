#include "gateway/health_checker.h"

#include <fmt/format.h>

#include <set>
#include <string>

namespace gpuscale::gateway {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
using net::kTuple;
using tcp = net::tcp;

// What the checks share with their coroutines (which may outlive the HealthChecker object
// until the io_context ends them).
struct HealthChecker::Shared {
  std::shared_ptr<GatewayState> state;
  asio::steady_timer timer;
  std::set<std::string> probing;  // replicas with a probe in flight (this thread only)
  bool stopped = false;

  Shared(asio::io_context& context, std::shared_ptr<GatewayState> s)
      : state(std::move(s)), timer(context) {}
};

namespace {

enum class ProbeResult { kPassed, kFailed, kLocalError };

asio::awaitable<ProbeResult> ProbeOnce(const GatewayConfig& config, const ProbeTarget& target) {
  auto executor = co_await asio::this_coro::executor;
  beast::tcp_stream stream(executor);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(target.host, ec);
  tcp::endpoint endpoint;
  if (ec) {
    tcp::resolver resolver(executor);
    const std::string port = std::to_string(target.port);
    auto [rec, endpoints] = co_await resolver.async_resolve(target.host, port, kTuple);
    if (rec || endpoints.empty()) co_return ProbeResult::kFailed;
    endpoint = endpoints.begin()->endpoint();
  } else {
    endpoint = tcp::endpoint(address, static_cast<unsigned short>(target.port));
  }
  // One deadline for the whole exchange.
  stream.expires_after(net::Ticks(config.health_check_timeout));
  auto [cec] = co_await stream.async_connect(endpoint, kTuple);
  if (cec == asio::error::no_descriptors || cec == asio::error::no_buffer_space) {
    co_return ProbeResult::kLocalError;  // not the replica's fault
  }
  if (cec) co_return ProbeResult::kFailed;
  const bool ipv6 = target.host.find(':') != std::string::npos;
  const std::string request = fmt::format(
      "GET {} HTTP/1.1\r\nHost: {}{}{}:{}\r\nConnection: close\r\n\r\n", config.health_check_path,
      ipv6 ? "[" : "", target.host, ipv6 ? "]" : "", target.port);
  auto [wec, wn] = co_await asio::async_write(stream, asio::buffer(request), kTuple);
  if (wec) co_return ProbeResult::kFailed;
  beast::flat_buffer buffer;
  http::response_parser<http::empty_body> parser;
  parser.skip(true);  // the status line and fields are all a probe needs
  auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, kTuple);
  if (hec) co_return ProbeResult::kFailed;
  co_return parser.get().result_int() < 500 ? ProbeResult::kPassed : ProbeResult::kFailed;
}

asio::awaitable<void> Probe(std::shared_ptr<HealthChecker::Shared> shared, ProbeTarget target) {
  const ProbeResult result = co_await ProbeOnce(shared->state->config(), target);
  shared->probing.erase(target.replica);
  if (shared->stopped || result == ProbeResult::kLocalError) co_return;
  shared->state->ReportProbe(target.replica, result == ProbeResult::kPassed);
}

asio::awaitable<void> CheckLoop(std::shared_ptr<HealthChecker::Shared> shared) {
  const GatewayConfig& config = shared->state->config();
  auto executor = co_await asio::this_coro::executor;
  while (!shared->stopped) {
    for (ProbeTarget& target : shared->state->ProbeTargets()) {
      // A probe still in flight (a replica slower than the interval) is not doubled: its
      // own timeout reports it.
      if (!shared->probing.insert(target.replica).second) continue;
      asio::co_spawn(executor, Probe(shared, std::move(target)), asio::detached);
    }
    shared->timer.expires_after(net::Ticks(config.health_check_interval));
    co_await shared->timer.async_wait(kTuple);
  }
}

}  // namespace

std::unique_ptr<HealthChecker> HealthChecker::Start(asio::io_context& context,
                                                    std::shared_ptr<GatewayState> state) {
  auto shared = std::make_shared<Shared>(context, std::move(state));
  if (shared->state->config().health_check_interval.count() > 0) {
    asio::co_spawn(context, CheckLoop(shared), asio::detached);
  }
  return std::unique_ptr<HealthChecker>(new HealthChecker(std::move(shared)));
}

HealthChecker::~HealthChecker() { Stop(); }

void HealthChecker::Stop() {
  // On the checks' own thread: the timer is used there alone.
  asio::post(shared_->timer.get_executor(), [shared = shared_] {
    shared->stopped = true;
    shared->timer.cancel();
  });
}

}  // namespace gpuscale::gateway
