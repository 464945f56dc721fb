// A Kubernetes object as a plain ordered tree (null, bool, integer, number, string, list,
// map), and its YAML and JSON text. Manifests are built as this tree rather than as
// yaml-cpp nodes because YAML nodes forget whether "8000" was a number or a string, which
// decides whether a label or a port is valid; keeping the type lets one tree be printed
// as YAML (`kubectl apply -f`) or JSON without guessing.
//
// Map keys keep insertion order, so output is stable (golden tests compare it exactly).
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace gpuscale::k8s {

class Value {
 public:
  using List = std::vector<Value>;
  using Map = std::vector<std::pair<std::string, Value>>;

  Value() = default;                                // null
  Value(bool b) : data_(b) {}                       // NOLINT: implicit by design
  Value(int i) : data_(static_cast<int64_t>(i)) {}  // NOLINT
  Value(int64_t i) : data_(i) {}                    // NOLINT
  Value(double d) : data_(d) {}                     // NOLINT
  Value(const char* s) : data_(std::string(s)) {}   // NOLINT
  Value(std::string s) : data_(std::move(s)) {}     // NOLINT
  Value(List list) : data_(std::move(list)) {}      // NOLINT
  static Value MakeMap() { return Value(Map{}); }
  static Value MakeList() { return Value(List{}); }
  // {"a", 1}, {"b", "x"}: a map in the given order.
  static Value Of(std::initializer_list<std::pair<std::string, Value>> entries);

  bool is_null() const { return std::holds_alternative<std::monostate>(data_); }
  bool is_map() const { return std::holds_alternative<Map>(data_); }
  bool is_list() const { return std::holds_alternative<List>(data_); }

  // Map: appends `key` (or replaces its value when present) and returns *this for chaining.
  // REQUIRES: is_map().
  Value& Set(std::string_view key, Value value);
  // Map: the value under `key`, or nullptr. REQUIRES: is_map().
  const Value* Find(std::string_view key) const;
  // List: appends. REQUIRES: is_list().
  Value& Append(Value value);

  const std::variant<std::monostate, bool, int64_t, double, std::string, List, Map>& data() const {
    return data_;
  }

 private:
  explicit Value(Map map) : data_(std::move(map)) {}
  std::variant<std::monostate, bool, int64_t, double, std::string, List, Map> data_;
};

// Block-style YAML of one document, ending in a newline. Strings that YAML would read as
// another type (numbers, true/false, null, empty) are double-quoted.
std::string ToYaml(const Value& value);
// Several documents separated by "---" lines (kubectl's multi-document format).
std::string ToYamlDocuments(const std::vector<Value>& documents);
// Pretty-printed JSON (2-space indent), ending in a newline.
std::string ToJson(const Value& value);

}  // namespace gpuscale::k8s
