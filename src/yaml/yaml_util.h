// Reading YAML (and JSON, which yaml-cpp also parses) into domain types with errors that
// name the field path and line: `rules[1].comparator: expected one of LESS_THAN, ... (line 7)`.
//
// This is an adapter-side internal header: it exposes yaml-cpp types, so only yaml/, config/,
// gpu/ and cli/ include it; domain headers never do (third-party headers stay in adapters).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "core/result.h"

namespace gpuscale::yaml {

// Parses YAML/JSON text. `source` names the input in messages (a file path or "<stdin>").
Result<YAML::Node> ParseYaml(std::string_view text, std::string_view source);
// Reads and parses a file; kNotFound / kInvalidArgument with the path in the message.
Result<YAML::Node> LoadYamlFile(const std::string& path);

// 1-based line of a node, or 0 when unknown (e.g. a node built in code).
int LineOf(const YAML::Node& node);

// `path` joined with `key`: Join("rules[1]", "comparator") == "rules[1].comparator".
std::string Join(std::string_view path, std::string_view key);
std::string Index(std::string_view path, size_t i);  // "rules" , 1 -> "rules[1]"

// An invalid_argument error for `path`, with " (line N)" appended when the node knows it.
Unexpected<Error> FieldError(const YAML::Node& node, std::string_view path,
                                  std::string_view message);

// Typed readers for `parent[key]`. When the key is absent, the default is returned, or an
// error "required field is missing" when no default is given. Wrong types give
// "expected a number, got 'abc'" and the like.
Result<double> ReadDouble(const YAML::Node& parent, std::string_view key,
                          std::string_view path, std::optional<double> fallback = {});
Result<int> ReadInt(const YAML::Node& parent, std::string_view key, std::string_view path,
                    std::optional<int> fallback = {});
Result<bool> ReadBool(const YAML::Node& parent, std::string_view key, std::string_view path,
                      std::optional<bool> fallback = {});
Result<std::string> ReadString(const YAML::Node& parent, std::string_view key,
                               std::string_view path,
                               std::optional<std::string> fallback = {});

// The name of a map entry's key. YAML allows a list or a mapping as a key (`? [a, b]`),
// which no config of ours means: that is an error naming `path` and the line, where
// yaml-cpp's as<std::string>() would throw.
Result<std::string> KeyName(const YAML::Node& key, std::string_view path);

// Rejects keys of a map that are not listed (typos must not be silently ignored); the
// error names the unknown key and lists the accepted ones.
Status CheckKnownKeys(const YAML::Node& map, std::string_view path,
                      std::initializer_list<std::string_view> known);

}  // namespace gpuscale::yaml
