#include "cli/api_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <utility>

#include "loadgen/http_error.h"

namespace gpuscale::cli {
namespace {

using Json = ApiClient::Json;

std::string FromEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// http:// or https:// and a host, no path (routes are absolute). A trailing "/" is dropped
// so that paths join cleanly.
Result<std::string> CheckBaseUrl(std::string url) {
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  const size_t host = url.find("://");
  const std::string scheme = host == std::string::npos ? "" : url.substr(0, host);
  const std::string_view rest =
      host == std::string::npos ? std::string_view() : std::string_view(url).substr(host + 3);
  if ((scheme != "http" && scheme != "https") || rest.empty() ||
      rest.find('/') != std::string_view::npos) {
    return InvalidArgument(
        fmt::format("expected http://HOST[:PORT] or https://HOST[:PORT] (e.g. {}), got '{}'", kDefaultApiUrl, url),
        "--api");
  }
  return url;
}

// Maps an error reply to an Error: the API's own body when it has one.
Error ReplyError(const httplib::Response& response, const std::string& base_url) {
  if (response.status == 401) {
    return Error{ErrorCode::kInvalidArgument,
                 fmt::format("gpuscale at {} refused the request (401): the bearer token is "
                             "missing or wrong; pass --token or set GPUSCALE_TOKEN",
                             base_url),
                 "--token"};
  }
  const Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    const Json& error = body["error"];
    const std::string code = error.value("code", "");
    const std::string field =
        error.contains("field") && error["field"].is_string() ? error["field"].get<std::string>()
                                                              : "";
    return Error{ErrorCodeFromName(code), error.value("message", code), field};
  }
  return Error{ErrorCode::kInternal,
               fmt::format("gpuscale at {} answered HTTP {} without an error body: {}", base_url,
                           response.status, response.body.substr(0, 200)),
               ""};
}

// cpp-httplib names its errors in one word ("Connection"); say what happened.
// Sends one request with `send` and turns the reply into JSON or an Error.
Result<Json> Exchange(const ApiClientOptions& options,
                      const std::function<httplib::Result(httplib::Client&)>& send) {
  GS_ASSIGN_OR_RETURN(std::string base_url, CheckBaseUrl(options.base_url));
  httplib::Client client(base_url);
  const auto seconds = static_cast<time_t>(options.timeout.count());
  client.set_connection_timeout(seconds, 0);
  client.set_read_timeout(seconds, 0);
  client.set_write_timeout(seconds, 0);
  if (!options.token.empty()) client.set_bearer_token_auth(options.token.c_str());
  httplib::Result result = send(client);
  if (!result) {
    return Unavailable(fmt::format("cannot reach gpuscale at {}: {}; is `gpuscale serve` running?",
                                   base_url, loadgen::DescribeHttpError(result.error())));
  }
  if (result->status >= 400) return Unexpected<Error>(ReplyError(*result, base_url));
  Json body = Json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return Internal(fmt::format("gpuscale at {} answered HTTP {} with a body that is not JSON",
                                base_url, result->status));
  }
  return body;
}

}  // namespace

ApiClientOptions ResolveApiOptions(const std::string& api_flag, const std::string& token_flag) {
  ApiClientOptions options;
  const std::string env_url = FromEnv("GPUSCALE_API");
  if (!api_flag.empty()) {
    options.base_url = api_flag;
  } else if (!env_url.empty()) {
    options.base_url = env_url;
  }
  options.token = token_flag.empty() ? FromEnv("GPUSCALE_TOKEN") : token_flag;
  return options;
}

ApiClient::ApiClient(ApiClientOptions options) : options_(std::move(options)) {}

Result<ApiClient::Json> ApiClient::Get(std::string_view path) const {
  const std::string target(path);
  return Exchange(options_, [&](httplib::Client& c) { return c.Get(target.c_str()); });
}

Result<ApiClient::Json> ApiClient::Delete(std::string_view path) const {
  const std::string target(path);
  return Exchange(options_, [&](httplib::Client& c) { return c.Delete(target.c_str()); });
}

Result<ApiClient::Json> ApiClient::Post(std::string_view path, const std::string& body,
                                        const std::string& content_type) const {
  const std::string target(path);
  return Exchange(options_, [&](httplib::Client& c) {
    return c.Post(target.c_str(), body, content_type.c_str());
  });
}

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (ErrorCode code : {ErrorCode::kInvalidArgument, ErrorCode::kNotFound,
                         ErrorCode::kFailedPrecondition, ErrorCode::kResourceExhausted,
                         ErrorCode::kUnavailable, ErrorCode::kDeadlineExceeded}) {
    if (ErrorCodeName(code) == name) return code;
  }
  return ErrorCode::kInternal;
}

}  // namespace gpuscale::cli
