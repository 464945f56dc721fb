// ApiClient: the CLI's client of a running daemon's REST API (docs/api.md), for commands
// such as `gpuscale task ...` that act on `gpuscale serve` rather than on local state.
// Replies are parsed JSON; API error bodies ({"error": {"code", "message", "field"}}) come
// back as Error values with the same code and field, so the CLI's exit codes follow the
// daemon's verdict (400 -> 2, 404 -> 2, 409 resource_exhausted -> 3, ...).
//
// Where the daemon is: --api URL, else $GPUSCALE_API, else http://127.0.0.1:8080; the
// bearer token: --token, else $GPUSCALE_TOKEN, else none (ResolveApiOptions).
//
// Thread-safety: one ApiClient per thread (each request opens its own connection).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::cli {

inline constexpr const char* kDefaultApiUrl = "http://127.0.0.1:8080";

struct ApiClientOptions {
  std::string base_url = kDefaultApiUrl;  // http[s]://host[:port], no path
  std::string token;                       // bearer token; empty = none
  Seconds timeout{30};                     // connect, read and write time-out each
};

// Flags over environment over defaults. Empty flags count as not given.
ApiClientOptions ResolveApiOptions(const std::string& api_flag, const std::string& token_flag);

class ApiClient {
 public:
  using Json = nlohmann::ordered_json;

  explicit ApiClient(ApiClientOptions options);

  // `path` starts with "/" (e.g. "/v1/tasks/3"). Errors: kInvalidArgument (field "--api")
  // for a base URL that is not http[s]://host[:port]; kUnavailable "cannot reach gpuscale at
  // URL: ...; is `gpuscale serve` running?" when the connection fails; the API's own error
  // (code, message, field) for an error status; kInvalidArgument (field "--token") for 401;
  // kInternal for a reply that is not the documented JSON.
  Result<Json> Get(std::string_view path) const;
  Result<Json> Delete(std::string_view path) const;
  Result<Json> Post(std::string_view path, const std::string& body,
                    const std::string& content_type) const;

  const std::string& base_url() const { return options_.base_url; }

 private:
  ApiClientOptions options_;
};

// The ErrorCode of an API error body's `code` ("not_found" -> kNotFound); unknown codes
// -> kInternal.
ErrorCode ErrorCodeFromName(std::string_view name);

}  // namespace gpuscale::cli
