// JSON pieces of the trace readers; see trace_json.h.
#include "sim/trace_json.h"

#include <fmt/format.h>

#include <charconv>

namespace gpuscale::sim {

std::string EchoValue(std::string_view value) {
  constexpr size_t kMaxEcho = 40;
  std::string out;
  for (char c : value.substr(0, kMaxEcho)) {
    out.push_back(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f ? c : '?');
  }
  if (value.size() > kMaxEcho) out += "...";
  return out;
}

std::optional<std::string> JsonObjectScanner::Scan(std::span<const std::string_view> keys,
                                                   std::span<std::string_view> values) {
  SkipSpace();
  if (!Eat('{')) return "expected a JSON object starting with '{'";
  SkipSpace();
  if (Eat('}')) return Finish();
  while (true) {
    std::string_view key;
    SkipSpace();
    if (!ReadString(&key)) return "expected a quoted key";
    SkipSpace();
    if (!Eat(':')) return fmt::format("expected ':' after key \"{}\"", EchoValue(key));
    SkipSpace();
    std::string_view value;
    if (!SkipValue(&value)) return fmt::format("bad value for key \"{}\"", EchoValue(key));
    for (size_t k = 0; k < keys.size(); ++k) {
      if (key == keys[k]) values[k] = value;
    }
    SkipSpace();
    if (Eat('}')) return Finish();
    if (!Eat(',')) return "expected ',' or '}' after a value";
  }
}

std::optional<std::string> JsonObjectScanner::Finish() {
  SkipSpace();
  if (pos_ != s_.size()) return "unexpected text after the JSON object";
  return std::nullopt;
}

void JsonObjectScanner::SkipSpace() {
  while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
}

bool JsonObjectScanner::Eat(char c) {
  if (pos_ < s_.size() && s_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

// A string's raw contents (escapes left as written).
bool JsonObjectScanner::ReadString(std::string_view* out) {
  if (!Eat('"')) return false;
  const size_t start = pos_;
  for (; pos_ < s_.size(); ++pos_) {
    if (s_[pos_] == '\\') {
      ++pos_;
    } else if (s_[pos_] == '"') {
      *out = s_.substr(start, pos_++ - start);
      return true;
    }
  }
  return false;
}

bool JsonObjectScanner::SkipValue(std::string_view* out) {
  if (pos_ < s_.size() && s_[pos_] == '"') return ReadString(out);
  const size_t start = pos_;
  if (pos_ < s_.size() && (s_[pos_] == '[' || s_[pos_] == '{')) {
    if (!SkipNested()) return false;
    *out = s_.substr(start, pos_ - start);
    return true;
  }
  while (pos_ < s_.size() &&
         std::string_view(",}] \t\r").find(s_[pos_]) == std::string_view::npos) {
    ++pos_;
  }
  *out = s_.substr(start, pos_ - start);
  return pos_ > start;
}

// Skips a balanced array/object iteratively (brackets inside strings do not count).
bool JsonObjectScanner::SkipNested() {
  int64_t depth = 0;
  while (pos_ < s_.size()) {
    const char c = s_[pos_];
    std::string_view ignored;
    if (c == '"') {
      if (!ReadString(&ignored)) return false;
      continue;
    }
    ++pos_;
    if (c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && --depth == 0) return true;
  }
  return false;
}

std::optional<std::string> ParseHashIdArray(std::string_view text, std::vector<uint64_t>* out) {
  const size_t kept = out->size();
  auto fail = [&](std::string message) {
    out->resize(kept);
    return std::optional<std::string>(std::move(message));
  };
  auto space = [&](size_t i) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    return i;
  };
  size_t i = space(0);
  if (i >= text.size() || text[i] != '[') {
    return fail(fmt::format("expected an array of block hashes, got '{}'", EchoValue(text)));
  }
  i = space(i + 1);
  if (i < text.size() && text[i] == ']')
    return space(i + 1) == text.size() ? std::nullopt : fail("unexpected text after the array");
  while (true) {
    uint64_t id = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data() + i, end, id);
    if (ec != std::errc() || ptr == text.data() + i) {
      return fail(fmt::format("element {}: expected a non-negative integer below 2^64, got '{}'",
                              out->size() - kept,
                              EchoValue(text.substr(i, text.find_first_of(",]", i) - i))));
    }
    out->push_back(id);
    i = space(static_cast<size_t>(ptr - text.data()));
    if (i < text.size() && text[i] == ']') break;
    if (i >= text.size() || text[i] != ',') {
      return fail(fmt::format("element {}: expected ',' or ']' after it", out->size() - kept - 1));
    }
    i = space(i + 1);
  }
  if (space(i + 1) != text.size()) return fail("unexpected text after the array");
  return std::nullopt;
}

}  // namespace gpuscale::sim
