#include "gateway/relay_framing.h"

#include <fmt/format.h>

namespace gpuscale::gateway {

namespace http = net::http;

bool IsHopByHop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade:
    case http::field::host:
    case http::field::content_length:
    // The gateway answered `Expect: 100-continue` itself (net::HttpServer) and has the whole
    // body: forwarded, it made the replica send a 100 of its own.
    case http::field::expect:
      return true;
    default:
      return false;
  }
}

namespace {

void AppendField(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

}  // namespace

std::string RequestHead(const net::Request& req, std::string_view host, std::string_view port,
                        bool drop_authorization) {
  std::string out;
  out.reserve(256 + req.target().size());
  const auto method = req.method_string();
  const auto target = req.target();
  out.append(method.data(), method.size())
      .append(" ")
      .append(target.data(), target.size())
      .append(" HTTP/1.1\r\n");
  for (const auto& field : req) {
    if (IsHopByHop(field.name())) continue;
    if (drop_authorization && field.name() == http::field::authorization) continue;
    const auto name = field.name_string();
    const auto value = field.value();
    AppendField(out, {name.data(), name.size()}, {value.data(), value.size()});
  }
  // An IPv6 literal goes in brackets (RFC 9110 7.2: Host is uri-host [":" port]).
  const bool ipv6 = host.find(':') != std::string_view::npos;
  out.append("Host: ").append(ipv6 ? "[" : "").append(host).append(ipv6 ? "]:" : ":");
  out.append(port).append("\r\n");
  out.append("Content-Length: ").append(std::to_string(req.body().size())).append("\r\n\r\n");
  return out;
}

ResponseFraming Framing(const net::Request& req,
                        const http::response_parser<http::buffer_body>& parser) {
  ResponseFraming framing;
  framing.keep_alive = req.keep_alive();
  if (parser.content_length().has_value()) {
    framing.content_length = true;
  } else if (!parser.is_done()) {  // a body of unknown length follows
    if (req.version() >= 11) {
      framing.chunked = true;
    } else {
      framing.keep_alive = false;  // HTTP/1.0 has no chunks: the close ends the body
    }
  }
  return framing;
}

std::string ResponseHead(const http::response<http::buffer_body>& res,
                         const ResponseFraming& framing) {
  std::string out;
  out.reserve(256);
  const auto reason = res.reason();
  const auto fallback = http::obsolete_reason(res.result());
  fmt::format_to(std::back_inserter(out), "HTTP/1.1 {} {}\r\n", res.result_int(),
                 reason.empty() ? std::string_view(fallback.data(), fallback.size())
                                : std::string_view(reason.data(), reason.size()));
  for (const auto& field : res) {
    if (IsHopByHop(field.name())) continue;
    const auto name = field.name_string();
    const auto value = field.value();
    AppendField(out, {name.data(), name.size()}, {value.data(), value.size()});
  }
  if (framing.content_length) {
    const auto length = res[http::field::content_length];
    AppendField(out, "Content-Length", {length.data(), length.size()});
  }
  if (framing.chunked) out.append("Transfer-Encoding: chunked\r\n");
  if (!framing.keep_alive) out.append("Connection: close\r\n");
  out.append("\r\n");
  return out;
}

boost::system::error_code ParseBuffered(http::response_parser<http::buffer_body>& parser,
                                        net::beast::flat_buffer& buffer) {
  boost::system::error_code ec;
  while (!parser.is_done() && buffer.size() > 0 && parser.get().body().size > 0) {
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more || ec == http::error::need_buffer) return {};
    if (ec) return ec;
    if (used == 0) break;
  }
  return {};
}

void ChunkWriter::Add(std::string_view bytes) {
  if (!bytes.empty()) buffers_[count_++] = net::asio::buffer(bytes.data(), bytes.size());
}

void ChunkWriter::AddBody(std::string_view body, bool chunked, bool last) {
  if (!chunked) {
    Add(body);
    return;
  }
  if (!body.empty()) {
    const auto line =
        fmt::format_to_n(size_line_.data(), size_line_.size(), "{:x}\r\n", body.size());
    Add(std::string_view(size_line_.data(), line.size));
    Add(body);
    Add("\r\n");
  }
  if (last) Add("0\r\n\r\n");
}

}  // namespace gpuscale::gateway
