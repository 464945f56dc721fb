// Router: matches a request's method and path against the API's route patterns
// ("/v1/services/{name}/rules/{id}") and tells a 404 (no route has that path) from a 405
// (the path exists, the method does not: the Allow header lists the methods that do).
// The server (api_server.cc) routes every request here, in its gate before the body is read.
//
// Thread-safety: Add() during set-up only; Match() is const and safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuscale::api {

struct RouteMatch {
  int route = -1;                   // index returned by Add(); -1 when none matched
  std::vector<std::string> params;  // the {placeholders} of the pattern, in order
  std::string allow;                // route == -1: "GET, HEAD, POST" when the path exists
                                    // under other methods (-> 405), "" for an unknown path
};

class Router {
 public:
  // Adds a route; `pattern` is "/"-separated literal segments and {placeholders}, which
  // match one non-empty segment. Returns the route's index (0, 1, ... in Add order).
  int Add(std::string method, std::string_view pattern);

  // HEAD matches GET routes. A trailing "/" is ignored ("/v1/gpus/" is "/v1/gpus").
  RouteMatch Match(std::string_view method, std::string_view path) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;  // "{...}" marks a placeholder
  };
  static bool MatchSegments(const Route& route, const std::vector<std::string_view>& path,
                            std::vector<std::string>* params);
  std::vector<Route> routes_;
};

}  // namespace gpuscale::api
