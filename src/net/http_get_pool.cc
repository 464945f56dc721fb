#include "net/http_get_pool.h"

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace gpuscale::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using asio::awaitable;
// The concrete executor, not tcp_stream's type-erased any_io_executor: each of a response's
// reads would otherwise copy, query and destroy a polymorphic executor.
using Stream = beast::basic_stream<tcp, asio::io_context::executor_type>;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

std::string Cause(const boost::system::error_code& ec, std::string_view stage, Seconds timeout) {
  if (ec == beast::error::timeout) {
    return fmt::format("timed out after {} s while {}", timeout.count(), stage);
  }
  if (ec == asio::error::connection_refused) return "connection refused";
  return fmt::format("{} failed: {}", stage, ec.message());
}

// A reused connection the server had closed fails this way before any byte of the answer.
bool ClosedWhileIdle(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::eof;
}

struct IdleConnection {
  std::unique_ptr<Stream> stream;
  SteadyClock::time_point since;
};

}  // namespace

struct HttpGetPool::Impl {
  explicit Impl(HttpGetPoolOptions o) : options(o) {}

  // An idle connection to `key` young enough to reuse, or null; stale ones are closed.
  std::unique_ptr<Stream> TakeIdle(const std::string& key) {
    std::lock_guard lock(mu);
    auto it = idle.find(key);
    if (it == idle.end()) return nullptr;
    const auto oldest = SteadyClock::now() - std::chrono::duration_cast<SteadyClock::duration>(
                                                 options.idle_timeout);
    while (!it->second.empty()) {
      IdleConnection c = std::move(it->second.back());
      it->second.pop_back();
      if (c.since >= oldest) return std::move(c.stream);
    }
    return nullptr;
  }

  void PutIdle(const std::string& key, std::unique_ptr<Stream> stream) {
    std::lock_guard lock(mu);
    std::deque<IdleConnection>& list = idle[key];
    if (list.size() >= options.max_idle_per_host) list.pop_front();
    stream->expires_never();
    list.push_back({std::move(stream), SteadyClock::now()});
  }

  // A submitted request waiting for a worker.
  struct Queued {
    HttpGetRequest request;
    Done done;
  };

  const HttpGetPoolOptions options;
  asio::io_context ioc;
  mutable std::mutex mu;  // idle: written on the running thread, counted from any
  // By host:port; hashed: a fleet's 10,000 replicas are 10,000 keys sharing a long prefix.
  std::unordered_map<std::string, std::deque<IdleConnection>> idle;
  // The running thread's alone (Submit, Run and the workers run there).
  std::deque<Queued> queue;  // submitted, not started
  size_t workers = 0;        // Worker coroutines alive, at most options.max_in_flight
  size_t pending = 0;        // submitted, `done` not called yet
};

namespace {

// One GET, on a kept connection when one is idle (retried once on a fresh connection when
// the server had closed it), else on a new one. One deadline covers the exchange. `buffer` is
// the worker's (HttpGetPoolOptions::read_buffer_bytes), emptied first.
awaitable<Result<HttpGetResponse>> GetOne(HttpGetPool::Impl& impl, const HttpGetRequest& request,
                                          beast::flat_buffer& buffer, std::atomic<int64_t>& opened,
                                          std::atomic<int64_t>& reused) {
  const std::string key = fmt::format("{}:{}", request.host, request.port);
  const auto deadline = std::chrono::duration_cast<SteadyClock::duration>(request.timeout);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<Stream> stream =
        impl.options.keep_alive && attempt == 0 ? impl.TakeIdle(key) : nullptr;
    const bool kept = stream != nullptr;
    if (!kept) {
      tcp::resolver resolver(impl.ioc);
      const std::string port = std::to_string(request.port);
      boost::system::error_code rec;
      tcp::resolver::results_type endpoints;
      boost::system::error_code not_numeric;
      asio::ip::make_address(request.host, not_numeric);
      if (!not_numeric) {
        // An address literal (every replica the orchestrators start): no name lookup, and no
        // hop through asio's one resolver thread, which runs getaddrinfo calls one at a time.
        endpoints = resolver.resolve(
            request.host, port, tcp::resolver::numeric_host | tcp::resolver::numeric_service, rec);
      } else {
        auto [ec, found] = co_await resolver.async_resolve(request.host, port, kTuple);
        rec = ec;
        endpoints = std::move(found);
      }
      if (rec) {
        co_return Unavailable(fmt::format("cannot resolve '{}': {}", request.host, rec.message()));
      }
      stream = std::make_unique<Stream>(impl.ioc);
      stream->expires_after(deadline);
      auto [cec, endpoint] = co_await stream->async_connect(endpoints, kTuple);
      if (cec) co_return Unavailable(Cause(cec, "connecting", request.timeout));
      // A request/response client: no Nagle wait for the ACK of a previous segment.
      boost::system::error_code ignored;
      stream->socket().set_option(tcp::no_delay(true), ignored);
      ++opened;
    } else {
      stream->expires_after(deadline);
    }
    http::request<http::empty_body> req{http::verb::get, request.target, 11};
    req.set(http::field::host, key);
    req.keep_alive(impl.options.keep_alive);
    for (const auto& [name, value] : request.headers) req.set(name, value);
    auto [wec, written] = co_await http::async_write(*stream, req, kTuple);
    if (wec && kept && ClosedWhileIdle(wec)) continue;
    if (wec) co_return Unavailable(Cause(wec, "sending the request", request.timeout));
    buffer.clear();
    if (impl.options.read_buffer_bytes == 0) buffer.shrink_to_fit();
    http::response_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(request.max_body_bytes);
    auto [ec, read] = co_await http::async_read(*stream, buffer, parser, kTuple);
    if (ec == http::error::body_limit) {
      co_return ResourceExhausted(
          fmt::format("the response is over {} bytes", request.max_body_bytes));
    }
    if (ec && kept && !parser.got_some() && ClosedWhileIdle(ec)) continue;
    if (ec) co_return Unavailable(Cause(ec, "reading the response", request.timeout));
    HttpGetResponse response;
    response.status = parser.get().result_int();
    const bool keep = impl.options.keep_alive && parser.get().keep_alive() && buffer.size() == 0;
    response.body = std::move(parser.get().body());
    if (kept) ++reused;
    if (keep) impl.PutIdle(key, std::move(stream));
    co_return response;
  }
  co_return Unavailable("the connection closed twice before an answer");
}

// Takes the next queued request until none is left.
awaitable<void> Worker(HttpGetPool::Impl& impl, std::atomic<int64_t>& opened,
                       std::atomic<int64_t>& reused) {
  beast::flat_buffer buffer;  // HttpGetPoolOptions::read_buffer_bytes
  buffer.reserve(impl.options.read_buffer_bytes);
  while (!impl.queue.empty()) {
    HttpGetPool::Impl::Queued next = std::move(impl.queue.front());
    impl.queue.pop_front();
    Result<HttpGetResponse> result = co_await GetOne(impl, next.request, buffer, opened, reused);
    --impl.pending;
    next.done(std::move(result));
  }
  --impl.workers;
}

}  // namespace

HttpGetPool::HttpGetPool(HttpGetPoolOptions options)
    : impl_(std::make_unique<Impl>(options)) {}

HttpGetPool::~HttpGetPool() = default;

std::vector<Result<HttpGetResponse>> HttpGetPool::GetAll(
    const std::vector<HttpGetRequest>& requests) {
  std::vector<Result<HttpGetResponse>> results(requests.size(), Unavailable("not requested"));
  size_t left = requests.size();
  for (size_t i = 0; i < requests.size(); ++i) {
    Submit(requests[i], [&results, &left, i](Result<HttpGetResponse> result) {
      results[i] = std::move(result);
      --left;
    });
  }
  Run(SteadyClock::time_point::max(), [&left] { return left == 0; });
  return results;
}

void HttpGetPool::Submit(HttpGetRequest request, Done done) {
  Impl& impl = *impl_;
  impl.queue.push_back({std::move(request), std::move(done)});
  ++impl.pending;
  if (impl.workers >= std::max<size_t>(impl.options.max_in_flight, 1)) return;
  ++impl.workers;
  asio::co_spawn(impl.ioc, Worker(impl, opened_, reused_), asio::detached);
}

void HttpGetPool::Run(SteadyClock::time_point deadline, const std::function<bool()>& finished) {
  if (impl_->pending == 0) return;
  asio::io_context& ioc = impl_->ioc;
  ioc.restart();  // after a Run that ran out of work (the context then stops)
  // First whatever is ready, `finished` or not: an answer that came between two Runs (a
  // straggler's) is read in the first Run after it, even one that asks nothing new.
  while (SteadyClock::now() < deadline && ioc.poll_one() > 0) {
  }
  // Then one handler at a time, to stop as soon as `finished` holds; run_one_until returns 0
  // at the deadline or once no work is left.
  while (!finished() && ioc.run_one_until(deadline) > 0) {
  }
}

size_t HttpGetPool::pending() const { return impl_->pending; }

size_t HttpGetPool::idle_connections() const {
  std::lock_guard lock(impl_->mu);
  size_t n = 0;
  for (const auto& [key, list] : impl_->idle) n += list.size();
  return n;
}

}  // namespace gpuscale::net
