// A small MessagePack reader and writer (the format: github.com/msgpack/msgpack spec.md), enough
// for vLLM's KV-event batches: nil, bool, integers, floats, str, bin, ext, arrays and maps.
// Written here rather than taken from msgpack-cxx because Debian 12's libmsgpack-cxx-dev pulls
// Boost 1.74, which conflicts with the Boost 1.81 the gateway builds on.
//
// ParseMsgpack reads one value into a tree whose str/bin views point into the input (the input
// must outlive it). It refuses truncated input, the reserved byte 0xc1, nesting deeper than
// kMaxMsgpackDepth and lengths longer than the bytes left, so that no input makes it allocate
// more than a few times its own size. Pure; thread-compatible values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpuscale::kvevents {

inline constexpr int kMaxMsgpackDepth = 32;

struct MsgValue {
  enum class Type { kNil, kBool, kUint, kInt, kFloat, kStr, kBin, kExt, kArray, kMap };
  Type type = Type::kNil;
  bool boolean = false;
  uint64_t uint = 0;            // kUint: any non-negative integer
  int64_t sint = 0;             // kInt: a negative integer
  double real = 0;              // kFloat (float 32 widened)
  std::string_view bytes;       // kStr, kBin, kExt (the ext's data; its type byte is dropped)
  std::vector<MsgValue> items;  // kArray: elements; kMap: key, value, key, value, ...
};

// The one value `data` holds. Errors (kInvalidArgument) name the byte offset at fault;
// bytes left after the value are an error.
Result<MsgValue> ParseMsgpack(std::span<const uint8_t> data);

// "nil", "an integer", "a string", ... for messages ("expected an array, got a string").
std::string_view MsgTypeName(MsgValue::Type type);

// Appends msgpack encodings to a byte string, choosing the shortest form as msgpack requires.
class MsgWriter {
 public:
  void Nil() { out_.push_back('\xc0'); }
  void Bool(bool v) { out_.push_back(v ? '\xc3' : '\xc2'); }
  void Uint(uint64_t v);
  void Int(int64_t v);  // negative values take the signed forms
  void Float(double v);
  void Str(std::string_view v);
  void Bin(std::string_view v);
  void ArrayHeader(uint32_t n);
  void MapHeader(uint32_t n);

  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Head(uint8_t fix_base, uint32_t fix_max, uint8_t b8, uint8_t b16, uint8_t b32, uint32_t n);
  void BigEndian(uint64_t v, int bytes);

  std::string out_;
};

}  // namespace gpuscale::kvevents
