#include "k8s/document.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <type_traits>

namespace gpuscale::k8s {
namespace {

bool LooksNumeric(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i == s.size()) return false;
  const std::string_view rest = s.substr(i);
  if (rest == ".inf" || rest == ".Inf" || rest == ".INF") return true;
  bool digit = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (c != '.' && c != 'e' && c != 'E' && c != '_' && c != '+' && c != '-' && c != 'x' &&
               c != 'o' && !(digit && std::isxdigit(static_cast<unsigned char>(c)))) {
      return false;
    }
  }
  return digit;
}

// Strings a YAML 1.1 or 1.2 reader (kubectl's go-yaml, the npm `yaml` package) would take
// for a number, boolean or null; they must be quoted to stay strings.
bool NeedsQuotes(std::string_view s) {
  if (s.empty() || LooksNumeric(s)) return true;
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view word :
       {"true", "false", "yes", "no", "y", "n", "on", "off", "null", "~", ".nan"}) {
    if (lower == word) return true;
  }
  return false;
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  return fmt::format("{}", d);
}

void Emit(YAML::Emitter& out, const Value& value) {
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          out << YAML::Null;
        } else if constexpr (std::is_same_v<T, bool>) {
          out << YAML::TrueFalseBool << v;
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out << v;
        } else if constexpr (std::is_same_v<T, double>) {
          out << FormatDouble(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (NeedsQuotes(v)) out << YAML::DoubleQuoted;
          out << v;
        } else if constexpr (std::is_same_v<T, Value::List>) {
          out << YAML::BeginSeq;
          for (const Value& item : v) Emit(out, item);
          out << YAML::EndSeq;
        } else {
          out << YAML::BeginMap;
          for (const auto& [key, item] : v) {
            out << YAML::Key << key << YAML::Value;
            Emit(out, item);
          }
          out << YAML::EndMap;
        }
      },
      value.data());
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// One visitor over every alternative, like Emit above (43 lines: splitting lists and maps
// out would only pass the same three arguments around).
void WriteJson(std::string& out, const Value& value, int indent) {
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  const std::string close_pad(static_cast<size_t>(indent), ' ');
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out += fmt::format("{}", v);
        } else if constexpr (std::is_same_v<T, double>) {
          out += std::isfinite(v) ? fmt::format("{}", v) : "null";  // JSON has no inf/nan
        } else if constexpr (std::is_same_v<T, std::string>) {
          out += JsonString(v);
        } else if constexpr (std::is_same_v<T, Value::List>) {
          if (v.empty()) {
            out += "[]";
            return;
          }
          out += "[\n";
          for (size_t i = 0; i < v.size(); ++i) {
            out += pad;
            WriteJson(out, v[i], indent + 2);
            out += i + 1 < v.size() ? ",\n" : "\n";
          }
          out += close_pad + "]";
        } else {
          if (v.empty()) {
            out += "{}";
            return;
          }
          out += "{\n";
          for (size_t i = 0; i < v.size(); ++i) {
            out += pad + JsonString(v[i].first) + ": ";
            WriteJson(out, v[i].second, indent + 2);
            out += i + 1 < v.size() ? ",\n" : "\n";
          }
          out += close_pad + "}";
        }
      },
      value.data());
}

}  // namespace

Value Value::Of(std::initializer_list<std::pair<std::string, Value>> entries) {
  Value map = MakeMap();
  for (const auto& [key, value] : entries) map.Set(key, value);
  return map;
}

Value& Value::Set(std::string_view key, Value value) {
  Map& map = std::get<Map>(data_);
  for (auto& entry : map) {
    if (entry.first == key) {
      entry.second = std::move(value);
      return *this;
    }
  }
  map.emplace_back(std::string(key), std::move(value));
  return *this;
}

const Value* Value::Find(std::string_view key) const {
  for (const auto& entry : std::get<Map>(data_)) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

Value& Value::Append(Value value) {
  std::get<List>(data_).push_back(std::move(value));
  return *this;
}

std::string ToYaml(const Value& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  out.SetMapFormat(YAML::Block);
  Emit(out, value);
  return std::string(out.c_str()) + "\n";
}

std::string ToYamlDocuments(const std::vector<Value>& documents) {
  std::string text;
  for (size_t i = 0; i < documents.size(); ++i) {
    if (i > 0) text += "---\n";
    text += ToYaml(documents[i]);
  }
  return text;
}

std::string ToJson(const Value& value) {
  std::string out;
  WriteJson(out, value, 0);
  return out + "\n";
}

}  // namespace gpuscale::k8s
