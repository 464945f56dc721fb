#include "net/http_client.h"

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace gpuscale::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string Cause(const boost::system::error_code& ec, std::string_view stage, Seconds timeout) {
  if (ec == beast::error::timeout) {
    return fmt::format("timed out after {} s while {}", timeout.count(), stage);
  }
  if (ec == asio::error::connection_refused) return "connection refused";
  return fmt::format("{} failed: {}", stage, ec.message());
}

}  // namespace

Result<HttpGetResponse> HttpGet(const HttpGetRequest& request) {
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  const auto endpoints = resolver.resolve(request.host, std::to_string(request.port), ec);
  if (ec) return Unavailable(fmt::format("cannot resolve '{}': {}", request.host, ec.message()));

  beast::tcp_stream stream(ioc);
  // One deadline for every operation below: Beast's stream timer covers all reads and writes
  // started until it is set again.
  stream.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      request.timeout));
  http::request<http::empty_body> req{http::verb::get, request.target, 11};
  req.set(http::field::host, fmt::format("{}:{}", request.host, request.port));
  req.set(http::field::connection, "close");
  for (const auto& [name, value] : request.headers) req.set(name, value);

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(64 * 1024);
  parser.body_limit(request.max_body_bytes);
  bool too_big = false;
  std::string failure;
  stream.async_connect(endpoints, [&](const boost::system::error_code& cec, const tcp::endpoint&) {
    if (cec) {
      failure = Cause(cec, "connecting", request.timeout);
      return;
    }
    http::async_write(stream, req, [&](const boost::system::error_code& wec, size_t) {
      if (wec) {
        failure = Cause(wec, "sending the request", request.timeout);
        return;
      }
      http::async_read(stream, buffer, parser, [&](const boost::system::error_code& rec, size_t) {
        if (rec == http::error::body_limit) {
          too_big = true;
        } else if (rec) {
          failure = Cause(rec, "reading the response", request.timeout);
        }
      });
    });
  });
  ioc.run();
  if (too_big) {
    return ResourceExhausted(
        fmt::format("the response is over {} bytes", request.max_body_bytes));
  }
  if (!failure.empty()) return Unavailable(failure);
  HttpGetResponse response;
  response.status = parser.get().result_int();
  response.body = std::move(parser.get().body());
  return response;
}

}  // namespace gpuscale::net
