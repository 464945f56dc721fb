#include "config/read_ranged.h"

#include <fmt/format.h>

#include <cmath>

#include "yaml/yaml_util.h"

namespace gpuscale::config {

Result<double> ReadRanged(const YAML::Node& block, std::string_view key, const std::string& path,
                          double fallback, double lo, bool lo_open, double hi) {
  GS_ASSIGN_OR_RETURN(double v, yaml::ReadDouble(block, key, path, fallback));
  bool ok = (lo_open ? v > lo : v >= lo) && v <= hi && std::isfinite(v);
  if (!ok) {
    return yaml::FieldError(block[std::string(key)], yaml::Join(path, key),
                            fmt::format("must be in {}{}, {}]", lo_open ? "(" : "[", lo, hi));
  }
  return v;
}

Result<int> ReadAtLeast(const YAML::Node& block, std::string_view key, const std::string& path,
                        int fallback, int lo) {
  GS_ASSIGN_OR_RETURN(int v, yaml::ReadInt(block, key, path, fallback));
  if (v < lo) {
    return yaml::FieldError(block[std::string(key)], yaml::Join(path, key),
                            fmt::format("must be >= {}", lo));
  }
  return v;
}

}  // namespace gpuscale::config
