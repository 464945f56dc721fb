// net::HttpGet: one HTTP/1.1 GET whose timeout bounds the whole exchange (resolve aside):
// connect, send, and reading the status, headers and body together. What the daemon's
// scrapes need: under per-read timeouts (cpp-httplib's), a replica that trickles its answer a
// byte at a time holds a scrape thread (and so the control tick) for as long as it trickles. A
// one-request HttpGetPool (http_get_pool.h) in the calling thread.
//
// Thread-safety: stateless; calls may run concurrently.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::net {

struct HttpGetRequest {
  std::string host;
  int port = 80;
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  Seconds timeout{2};
  size_t max_body_bytes = size_t{32} << 20;
};

struct HttpGetResponse {
  int status = 0;
  std::string body;
};

// Errors: kUnavailable with the cause ("connection refused", "timed out after 2 s while
// reading the response", ...); kResourceExhausted when the body is over max_body_bytes.
Result<HttpGetResponse> HttpGet(const HttpGetRequest& request);

}  // namespace gpuscale::net
