#include "store/json_columns.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace gpuscale::store {
namespace {

template <typename T>
Result<std::vector<T>> FromJson(std::string_view text, std::string_view column) {
  if (text.empty()) return std::vector<T>{};
  try {
    return nlohmann::json::parse(text).get<std::vector<T>>();
  } catch (const nlohmann::json::exception& e) {
    return Internal(fmt::format("state database column '{}' holds '{}', expected a JSON array "
                                "({}); was the database edited by hand?",
                                column, text, e.what()));
  }
}

}  // namespace

std::string StringsToJson(const std::vector<std::string>& values) {
  // Replace invalid UTF-8 rather than throw: argv and messages come from users.
  return nlohmann::json(values).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string IntsToJson(const std::vector<int>& values) { return nlohmann::json(values).dump(); }

Result<std::vector<std::string>> StringsFromJson(std::string_view text, std::string_view column) {
  return FromJson<std::string>(text, column);
}

Result<std::vector<int>> IntsFromJson(std::string_view text, std::string_view column) {
  return FromJson<int>(text, column);
}

}  // namespace gpuscale::store
