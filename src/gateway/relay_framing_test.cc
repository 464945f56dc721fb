#include "gateway/relay_framing.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>

namespace gpuscale::gateway {
namespace {

namespace http = net::http;
namespace asio = net::asio;

net::Request ParseRequest(const std::string& text) {
  http::request_parser<http::string_body> parser;
  boost::system::error_code ec;
  parser.eager(true);
  parser.put(asio::buffer(text), ec);
  EXPECT_FALSE(ec) << ec.message();
  return parser.release();
}

// A response parser that has read `head` (the header only, as the relay has when it frames).
struct ParsedHead {
  explicit ParsedHead(const std::string& head) {
    boost::system::error_code ec;
    parser.put(asio::buffer(head), ec);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_TRUE(parser.is_header_done());
  }
  http::response_parser<http::buffer_body> parser;
};

std::string Concat(const ChunkWriter& w) {
  std::string out;
  for (const asio::const_buffer& b : w.buffers()) {
    out.append(static_cast<const char*>(b.data()), b.size());
  }
  return out;
}

TEST(RelayFramingTest, TheRequestHeadKeepsEndToEndFieldsAndFramesTheBody) {
  const net::Request req = ParseRequest(
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: gateway:8000\r\nConnection: keep-alive\r\n"
      "Authorization: Bearer gw\r\nX-Request-Id: 7\r\nTransfer-Encoding: chunked\r\n"
      "Content-Type: application/json\r\n\r\n4\r\n{}  \r\n0\r\n\r\n");
  EXPECT_EQ(RequestHead(req, "127.0.0.1", "9001", /*drop_authorization=*/true),
            "POST /v1/completions?x=1 HTTP/1.1\r\nX-Request-Id: 7\r\n"
            "Content-Type: application/json\r\nHost: 127.0.0.1:9001\r\nContent-Length: 4\r\n\r\n");
  const std::string kept = RequestHead(req, "::1", "9001", /*drop_authorization=*/false);
  EXPECT_NE(kept.find("Authorization: Bearer gw\r\n"), std::string::npos) << kept;
  EXPECT_NE(kept.find("Host: [::1]:9001\r\n"), std::string::npos) << kept;
}

TEST(RelayFramingTest, FramingFollowsTheReplicaAndTheClientsVersion) {
  const net::Request http11 = ParseRequest("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  const net::Request http10 = ParseRequest("POST / HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
  const net::Request close11 =
      ParseRequest("POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
  struct Case {
    const char* name;
    const net::Request& req;
    std::string head;
    bool content_length, chunked, keep_alive;
  } cases[] = {
      {"length kept", http11, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", true, false, true},
      {"chunks for 1.1", http11, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false,
       true, true},
      {"close ends 1.0's body", http10, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
       false, false, false},
      {"no body", http11, "HTTP/1.1 204 No Content\r\n\r\n", false, false, true},
      {"client closes", close11, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", true, false,
       false},
  };
  for (const Case& c : cases) {
    ParsedHead parsed(c.head);
    const ResponseFraming f = Framing(c.req, parsed.parser);
    EXPECT_EQ(f.content_length, c.content_length) << c.name;
    EXPECT_EQ(f.chunked, c.chunked) << c.name;
    EXPECT_EQ(f.keep_alive, c.keep_alive) << c.name;
  }
}

TEST(RelayFramingTest, TheResponseHeadDropsHopByHopFieldsAndStatesItsFraming) {
  ParsedHead parsed(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\n"
      "Keep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\nX-Served-By: r1\r\n\r\n");
  EXPECT_EQ(ResponseHead(parsed.parser.get(), {.chunked = true, .keep_alive = false}),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Served-By: r1\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  ParsedHead sized("HTTP/1.1 503 \r\nContent-Length: 12\r\n\r\n");
  EXPECT_EQ(ResponseHead(sized.parser.get(), {.content_length = true}),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 12\r\n\r\n");
}

TEST(RelayFramingTest, EventsThatArrivedTogetherAreParsedIntoOneWrite) {
  ParsedHead parsed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  net::beast::flat_buffer buffer;
  const std::string bytes = "7\r\ndata: 1\r\n7\r\ndata: 2\r\n7\r\ndata: 3\r\n7\r\ndat";
  auto space = buffer.prepare(bytes.size());
  std::memcpy(space.data(), bytes.data(), bytes.size());
  buffer.commit(bytes.size());
  std::array<char, 64> body{};
  parsed.parser.get().body().data = body.data();
  parsed.parser.get().body().size = body.size();
  EXPECT_FALSE(ParseBuffered(parsed.parser, buffer));
  const size_t got = body.size() - parsed.parser.get().body().size;
  // A chunk's bytes go on as they come, the fourth one's too.
  EXPECT_EQ(std::string(body.data(), got), "data: 1data: 2data: 3dat");
  EXPECT_FALSE(parsed.parser.is_done());
  EXPECT_EQ(buffer.size(), 0u);

  ParsedHead full("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  net::beast::flat_buffer one;
  const std::string large = "40\r\n" + std::string(64, 'x') + "\r\n";
  auto room = one.prepare(large.size());
  std::memcpy(room.data(), large.data(), large.size());
  one.commit(large.size());
  std::array<char, 16> small{};
  full.parser.get().body().data = small.data();
  full.parser.get().body().size = small.size();
  EXPECT_FALSE(ParseBuffered(full.parser, one));
  EXPECT_EQ(full.parser.get().body().size, 0u) << "stops when the body buffer is full";
}

TEST(RelayFramingTest, ChunksCarryTheirSizeAndTheLastOneEndsTheBody) {
  // The writer points at the bytes it is given: they must outlive the write.
  const std::string event(26, 'x');
  ChunkWriter head_and_chunk;
  head_and_chunk.Add("HEAD\r\n\r\n");
  head_and_chunk.AddBody(event, /*chunked=*/true, /*last=*/false);
  EXPECT_EQ(Concat(head_and_chunk), "HEAD\r\n\r\n1a\r\n" + event + "\r\n");

  ChunkWriter end;
  end.AddBody("", /*chunked=*/true, /*last=*/true);
  EXPECT_EQ(Concat(end), "0\r\n\r\n");

  ChunkWriter raw;
  raw.AddBody("{}", /*chunked=*/false, /*last=*/true);
  EXPECT_EQ(Concat(raw), "{}");

  ChunkWriter nothing;
  nothing.AddBody("", /*chunked=*/false, /*last=*/true);
  EXPECT_TRUE(nothing.empty());
}

}  // namespace
}  // namespace gpuscale::gateway
