// ApiRequest and ApiResponse: the REST API's view of one HTTP exchange, free of the HTTP
// library's types, so that handlers (api_handlers.cc) are plain synchronous functions the
// server (api_server.cc) runs on its worker pool, and tests can call them without a socket.
//
// Header names compare case-insensitively (RFC 9110); query parameters are percent-decoded
// (request_parsing.h: ParseTarget).
//
// Thread-safety: plain values; one handler uses a pair at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/request_parsing.h"

namespace gpuscale::api {

class EventStream;

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct ApiRequest {
  std::string method;  // "GET", "HEAD", "POST", ...
  std::string path;    // percent-decoded, without the query
  QueryParams params;  // the query, decoded
  HeaderList headers;  // as received
  std::string body;

  bool HasParam(std::string_view name) const { return params.count(std::string(name)) > 0; }
  // The first value of `name`, or "".
  std::string Param(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
  // The first value of `name`, or "".
  std::string Header(std::string_view name) const;
};

struct ApiResponse {
  int status = 200;
  HeaderList headers;  // besides Content-Type and Content-Length
  std::string content_type;
  std::string body;
  // Set by the event-stream handler: the server sends the headers, then this stream's
  // events until the client leaves or the server stops (status 200, no body).
  std::shared_ptr<EventStream> stream;

  void SetHeader(std::string name, std::string value);
  void SetContent(std::string content, std::string type) {
    body = std::move(content);
    content_type = std::move(type);
  }
};

}  // namespace gpuscale::api
