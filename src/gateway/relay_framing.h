// The bytes the relay writes itself: the request head sent to a replica and the response
// head and body framing sent back to the client. Beast still parses both directions; the
// relay writes heads as one string and the body as the replica's own bytes, so a request
// or SSE chunk costs no per-field allocation and no serializer state machine (Beast's
// request rebuild and response serializer were the largest user-space cost per relayed
// chunk: scripts/gateway-bench). Private to the gateway (it includes net's Beast headers).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "net/http_server.h"

namespace gpuscale::gateway {

// Hop-by-hop headers (RFC 9110 7.6.1), the ones the relay frames itself (Host,
// Content-Length) and Expect (answered by the gateway) are not copied from one side to the
// other.
bool IsHopByHop(net::http::field f);

// The request line and fields for the replica: the client's fields less hop-by-hop ones
// (and less Authorization when `drop_authorization`: the gateway's own token is for the
// gateway), Host = the replica, Content-Length = the body's size. HTTP/1.1, kept alive.
std::string RequestHead(const net::Request& req, std::string_view host, std::string_view port,
                        bool drop_authorization);

// How the response body goes to the client.
struct ResponseFraming {
  bool content_length = false;  // the replica's Content-Length is kept and the bytes copied
  bool chunked = false;         // re-chunked as the bytes arrive (length unknown)
  bool keep_alive = true;       // false: the response ends when the connection closes
};

// From the client's request and the replica's parsed response head: a length the replica
// gave is kept; otherwise an HTTP/1.1 client gets chunks and an HTTP/1.0 one an
// EOF-delimited body; a response with no body (1xx, 204, 304) gets no framing.
ResponseFraming Framing(const net::Request& req,
                        const net::http::response_parser<net::http::buffer_body>& parser);

// The status line and fields for the client: the replica's fields less hop-by-hop ones,
// then the framing's Content-Length / Transfer-Encoding / Connection.
std::string ResponseHead(const net::http::response<net::http::buffer_body>& res,
                         const ResponseFraming& framing);

// Feeds `parser` the bytes a read left in `buffer` (SSE events that arrived together) into
// its body buffer until the buffer is full or the bytes end mid-chunk, so that they go to
// the client in one write instead of a write (and a send) each. An error is the replica's
// framing error; the parser is then unusable.
boost::system::error_code ParseBuffered(net::http::response_parser<net::http::buffer_body>& parser,
                                        net::beast::flat_buffer& buffer);

// One write's buffers: an optional head, then a body piece with its chunk framing, and the
// last chunk when the body ends. Keeps the chunk-size line it points to: use it in place.
class ChunkWriter {
 public:
  void Add(std::string_view bytes);
  // `body` may be empty; with `chunked`, `last` appends the terminating chunk.
  void AddBody(std::string_view body, bool chunked, bool last);
  bool empty() const { return count_ == 0; }
  std::span<const net::asio::const_buffer> buffers() const { return {buffers_.data(), count_}; }

 private:
  std::array<net::asio::const_buffer, 5> buffers_;
  size_t count_ = 0;
  std::array<char, 20> size_line_{};
};

}  // namespace gpuscale::gateway
