// ReadNamed: a YAML field holding one of a name table's spellings (core/name_table.h rows:
// scale/enum_names.h's shared tables, or a parser's own for names only it reads). Spellings
// are case-sensitive, as Kubernetes' are; the error names the field, its line and every
// accepted spelling, e.g. `rules[1].comparator: expected one of LESS_THAN, ... (line 7)`.
#pragma once

#include <yaml-cpp/yaml.h>

#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/name_table.h"
#include "core/result.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {

// The enum a table of NameRow<E> spells.
template <typename Table>
using SpelledEnum = decltype(std::begin(std::declval<const Table&>())->first);

// parent[key] as the value it spells; `fallback` when the key is absent or null (no fallback:
// the key is required).
template <typename Table>
Result<SpelledEnum<Table>> ReadNamed(const YAML::Node& parent, std::string_view key,
                                     const std::string& path, const Table& names,
                                     std::optional<SpelledEnum<Table>> fallback = std::nullopt) {
  const YAML::Node node = parent[std::string(key)];
  if (fallback && (!node.IsDefined() || node.IsNull())) return *fallback;
  GS_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(parent, key, path));
  const NameTable<SpelledEnum<Table>> table(names);
  if (auto value = ValueIn(table, text)) return *value;
  return yaml::FieldError(node, yaml::Join(path, key),
                          "expected one of " + NamesIn(table) + ", got '" + text + "'");
}

}  // namespace gpuscale::config
