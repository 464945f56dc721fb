// The JSON pieces of the trace readers (trace.cc): a scanner for one flat JSON object per
// line and the parser of a block-hash array (Mooncake's hash_ids). Hand-written over
// std::string_view like the rest of the readers: bounds checked, not recursive, no allocation
// but the output vectors. Internal to sim/; the public API is trace.h.
// Thread-safety: free functions and a scanner object owned by one caller.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscale::sim {

// A value for an error message: at most 40 characters, control bytes as '?', so that a
// binary file does not flood the terminal.
std::string EchoValue(std::string_view value);

// Scans one flat JSON object and returns the raw text of the values of the wanted keys:
// a scalar's text (a string without its quotes), or an array's / object's whole text with
// its brackets. Nested values are skipped without being parsed.
class JsonObjectScanner {
 public:
  explicit JsonObjectScanner(std::string_view text) : s_(text) {}

  // On failure returns a message (no line number); on success fills values[k] for keys[k]
  // (a default-constructed view, data() == nullptr, when the key is absent).
  // REQUIRES: values.size() == keys.size().
  std::optional<std::string> Scan(std::span<const std::string_view> keys,
                                  std::span<std::string_view> values);

 private:
  std::optional<std::string> Finish();
  void SkipSpace();
  bool Eat(char c);
  bool ReadString(std::string_view* out);
  bool SkipValue(std::string_view* out);
  bool SkipNested();

  std::string_view s_;
  size_t pos_ = 0;
};

// Parses a JSON array of non-negative integers that fit uint64 (`[0, 1, 2]`, `[]`) and
// appends them to *out. On failure returns what is wrong (without the field name) and
// leaves *out as it was.
std::optional<std::string> ParseHashIdArray(std::string_view text, std::vector<uint64_t>* out);

}  // namespace gpuscale::sim
