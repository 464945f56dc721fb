// Internal to store/: list-valued columns are stored as JSON arrays in TEXT columns. These
// helpers keep nlohmann::json out of every header.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpuscale::store {

std::string StringsToJson(const std::vector<std::string>& values);
std::string IntsToJson(const std::vector<int>& values);

// Errors: kInternal naming `column` when the text is not a JSON array of the right type
// (the database was edited by hand or is corrupt).
Result<std::vector<std::string>> StringsFromJson(std::string_view text, std::string_view column);
Result<std::vector<int>> IntsFromJson(std::string_view text, std::string_view column);

}  // namespace gpuscale::store
