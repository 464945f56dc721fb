// The base URL of the OpenAI-compatible server a benchmark loads, split for the HTTP client.
// Pure parsing; loadgen/completion_client.h connects to it.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuscale::loadgen {

// A server's base URL split for the HTTP client: "http://host:port" plus a path prefix
// ("" or e.g. "/serve/llama"); a trailing "/v1" or "/" is dropped so that both
// http://h:8000 and http://h:8000/v1 work.
struct ServerUrl {
  std::string scheme_host_port;
  std::string base_path;
};

// Errors: InvalidArgument (field "--url") unless the URL is http:// or https:// with a host.
Result<ServerUrl> ParseServerUrl(std::string_view url);

}  // namespace gpuscale::loadgen
