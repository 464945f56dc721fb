#include "api/router.h"

#include <algorithm>

namespace gpuscale::api {
namespace {

std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> segments;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.empty()) return segments;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    segments.push_back(path.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return segments;
}

bool IsPlaceholder(std::string_view segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

int Router::Add(std::string method, std::string_view pattern) {
  Route route{std::move(method), {}};
  for (std::string_view segment : Split(pattern)) route.segments.emplace_back(segment);
  routes_.push_back(std::move(route));
  return static_cast<int>(routes_.size()) - 1;
}

bool Router::MatchSegments(const Route& route, const std::vector<std::string_view>& path,
                           std::vector<std::string>* params) {
  if (route.segments.size() != path.size()) return false;
  std::vector<std::string> found;
  for (size_t i = 0; i < path.size(); ++i) {
    if (IsPlaceholder(route.segments[i])) {
      if (path[i].empty()) return false;
      found.emplace_back(path[i]);
    } else if (route.segments[i] != path[i]) {
      return false;
    }
  }
  if (params != nullptr) *params = std::move(found);
  return true;
}

RouteMatch Router::Match(std::string_view method, std::string_view path) const {
  const std::vector<std::string_view> segments = Split(path);
  const std::string_view wanted = method == "HEAD" ? std::string_view("GET") : method;
  RouteMatch match;
  std::vector<std::string> allowed;
  for (size_t i = 0; i < routes_.size(); ++i) {
    const Route& route = routes_[i];
    if (route.method == wanted && match.route < 0 &&
        MatchSegments(route, segments, &match.params)) {
      match.route = static_cast<int>(i);
    } else if (MatchSegments(route, segments, nullptr)) {
      allowed.push_back(route.method);
      if (route.method == "GET") allowed.push_back("HEAD");
    }
  }
  if (match.route >= 0) return match;
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  for (const std::string& m : allowed) {
    if (!match.allow.empty()) match.allow += ", ";
    match.allow += m;
  }
  return match;
}

}  // namespace gpuscale::api
