// Range-checked numeric fields of policy blocks (the `slo` and `disagg` parsers): the error
// names the field, its line and the accepted range.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuscale::config {

// block[key] as a double with lo <(=) value <= hi (lo_open: strictly above lo); `fallback`
// when absent.
Result<double> ReadRanged(const YAML::Node& block, std::string_view key, const std::string& path,
                          double fallback, double lo, bool lo_open, double hi);

// block[key] as an integer >= lo; `fallback` when absent.
Result<int> ReadAtLeast(const YAML::Node& block, std::string_view key, const std::string& path,
                        int fallback, int lo);

}  // namespace gpuscale::config
