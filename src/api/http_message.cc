#include "api/http_message.h"

#include <strings.h>

namespace gpuscale::api {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string ApiRequest::Param(std::string_view name) const {
  const auto it = params.find(std::string(name));
  return it == params.end() ? std::string() : it->second;
}

bool ApiRequest::HasHeader(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (SameName(key, name)) return true;
  }
  return false;
}

std::string ApiRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (SameName(key, name)) return value;
  }
  return "";
}

void ApiResponse::SetHeader(std::string name, std::string value) {
  for (auto& [key, old] : headers) {
    if (SameName(key, name)) {
      old = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

}  // namespace gpuscale::api
