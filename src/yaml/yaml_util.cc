#include "yaml/yaml_util.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace gpuscale::yaml {

Result<YAML::Node> ParseYaml(std::string_view text, std::string_view source) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("cannot parse {}: {} (line {}, column {})", source,
                                       e.msg, e.mark.line + 1, e.mark.column + 1),
                           std::string(source));
  }
}

Result<YAML::Node> LoadYamlFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(fmt::format("cannot open file '{}'", path), path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseYaml(buffer.str(), path);
}

int LineOf(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

std::string Index(std::string_view path, size_t i) { return fmt::format("{}[{}]", path, i); }

Unexpected<Error> FieldError(const YAML::Node& node, std::string_view path,
                                  std::string_view message) {
  const int line = LineOf(node);
  std::string text =
      line > 0 ? fmt::format("{} (line {})", message, line) : std::string(message);
  return InvalidArgument(std::move(text), std::string(path));
}

namespace {

// The node for parent[key] without inserting; an undefined node when absent or null.
YAML::Node Child(const YAML::Node& parent, std::string_view key) {
  if (!parent.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node child = parent[std::string(key)];
  if (!child.IsDefined() || child.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return child;
}

template <typename T>
Result<T> Missing(const YAML::Node& parent, std::string_view path, std::optional<T> fallback) {
  if (fallback) return *fallback;
  return FieldError(parent, path, "required field is missing");
}

}  // namespace

Result<double> ReadDouble(const YAML::Node& parent, std::string_view key,
                          std::string_view path, std::optional<double> fallback) {
  const std::string field = Join(path, key);
  YAML::Node node = Child(parent, key);
  if (!node.IsDefined()) return Missing(parent, field, fallback);
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || std::isnan(value)) {
    return FieldError(node, field,
                      fmt::format("expected a number, got '{}'",
                                  node.IsScalar() ? node.Scalar() : std::string("a non-scalar")));
  }
  return value;
}

Result<int> ReadInt(const YAML::Node& parent, std::string_view key, std::string_view path,
                    std::optional<int> fallback) {
  const std::string field = Join(path, key);
  YAML::Node node = Child(parent, key);
  if (!node.IsDefined()) return Missing(parent, field, fallback);
  int value = 0;
  if (!node.IsScalar() || !YAML::convert<int>::decode(node, value)) {
    return FieldError(node, field,
                      fmt::format("expected an integer, got '{}'",
                                  node.IsScalar() ? node.Scalar() : std::string("a non-scalar")));
  }
  return value;
}

Result<bool> ReadBool(const YAML::Node& parent, std::string_view key, std::string_view path,
                      std::optional<bool> fallback) {
  const std::string field = Join(path, key);
  YAML::Node node = Child(parent, key);
  if (!node.IsDefined()) return Missing(parent, field, fallback);
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return FieldError(node, field, "expected true or false");
  }
  return value;
}

Result<std::string> ReadString(const YAML::Node& parent, std::string_view key,
                               std::string_view path, std::optional<std::string> fallback) {
  const std::string field = Join(path, key);
  YAML::Node node = Child(parent, key);
  if (!node.IsDefined()) return Missing(parent, field, std::move(fallback));
  if (!node.IsScalar()) return FieldError(node, field, "expected a string");
  return node.Scalar();
}

Result<std::string> KeyName(const YAML::Node& key, std::string_view path) {
  if (!key.IsScalar()) {
    return FieldError(key, path.empty() ? "<root>" : path,
                      "expected a field name, got a list or mapping as a key");
  }
  return key.Scalar();
}

Status CheckKnownKeys(const YAML::Node& map, std::string_view path,
                      std::initializer_list<std::string_view> known) {
  if (!map.IsMap()) return FieldError(map, path.empty() ? "<root>" : path, "expected a mapping");
  for (const auto& entry : map) {
    GS_ASSIGN_OR_RETURN(const std::string key, KeyName(entry.first, path));
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) {
      return FieldError(entry.first, Join(path, key),
                        fmt::format("unknown field; accepted fields: {}", fmt::join(known, ", ")));
    }
  }
  return OkStatus();
}

}  // namespace gpuscale::yaml
