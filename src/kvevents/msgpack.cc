#include "kvevents/msgpack.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

namespace gpuscale::kvevents {
namespace {

using Type = MsgValue::Type;

// A cursor over the input; every read checks the bytes left.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> data) : data_(data) {}

  Result<MsgValue> Value(int depth);
  size_t offset() const { return at_; }
  size_t left() const { return data_.size() - at_; }

 private:
  Unexpected<Error> Fail(std::string what) const {
    return InvalidArgument(fmt::format("msgpack: {} at byte {}", what, at_));
  }
  Result<uint64_t> BigEndian(int bytes);
  Result<std::string_view> Bytes(uint64_t n);
  Result<MsgValue> Container(Type type, uint64_t n, int depth);
  Result<MsgValue> Sized(uint8_t head);

  std::span<const uint8_t> data_;
  size_t at_ = 0;
};

Result<uint64_t> Reader::BigEndian(int bytes) {
  if (left() < static_cast<size_t>(bytes)) return Fail("truncated input");
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | data_[at_++];
  return v;
}

Result<std::string_view> Reader::Bytes(uint64_t n) {
  if (n > left()) return Fail(fmt::format("length {} runs past the end", n));
  std::string_view v(reinterpret_cast<const char*>(data_.data() + at_), n);
  at_ += n;
  return v;
}

Result<MsgValue> Reader::Container(Type type, uint64_t n, int depth) {
  const uint64_t slots = type == Type::kMap ? 2 * n : n;
  // Each element takes at least one byte: a longer count cannot be honest, and checking it
  // first bounds the allocation by the input's size.
  if (slots > left())
    return Fail(fmt::format("{} of {} elements runs past the end", MsgTypeName(type), n));
  MsgValue v;
  v.type = type;
  v.items.reserve(slots);
  for (uint64_t i = 0; i < slots; ++i) {
    GS_ASSIGN_OR_RETURN(MsgValue item, Value(depth + 1));
    v.items.push_back(std::move(item));
  }
  return v;
}

// The forms whose head byte is followed by a big-endian length or value (0xc4..0xdb).
Result<MsgValue> Reader::Sized(uint8_t head) {
  static constexpr int kWidth[] = {1, 2, 4};
  MsgValue v;
  if (head >= 0xc4 && head <= 0xc6) {  // bin 8/16/32
    GS_ASSIGN_OR_RETURN(uint64_t n, BigEndian(kWidth[head - 0xc4]));
    v.type = Type::kBin;
    GS_ASSIGN_OR_RETURN(v.bytes, Bytes(n));
  } else if (head >= 0xc7 && head <= 0xc9) {  // ext 8/16/32: length, type byte, data
    GS_ASSIGN_OR_RETURN(uint64_t n, BigEndian(kWidth[head - 0xc7]));
    GS_RETURN_IF_ERROR(BigEndian(1));
    v.type = Type::kExt;
    GS_ASSIGN_OR_RETURN(v.bytes, Bytes(n));
  } else if (head == 0xca) {
    GS_ASSIGN_OR_RETURN(uint64_t bits, BigEndian(4));
    v.type = Type::kFloat;
    v.real = std::bit_cast<float>(static_cast<uint32_t>(bits));
  } else if (head == 0xcb) {
    GS_ASSIGN_OR_RETURN(uint64_t bits, BigEndian(8));
    v.type = Type::kFloat;
    v.real = std::bit_cast<double>(bits);
  } else if (head >= 0xcc && head <= 0xcf) {  // uint 8/16/32/64
    v.type = Type::kUint;
    GS_ASSIGN_OR_RETURN(v.uint, BigEndian(1 << (head - 0xcc)));
  } else if (head >= 0xd0 && head <= 0xd3) {  // int 8/16/32/64, sign-extended
    const int bytes = 1 << (head - 0xd0);
    GS_ASSIGN_OR_RETURN(uint64_t raw, BigEndian(bytes));
    const int shift = 64 - 8 * bytes;
    const int64_t s = static_cast<int64_t>(raw << shift) >> shift;
    if (s < 0) {
      v.type = Type::kInt;
      v.sint = s;
    } else {
      v.type = Type::kUint;
      v.uint = static_cast<uint64_t>(s);
    }
  } else if (head >= 0xd4 && head <= 0xd8) {  // fixext 1/2/4/8/16
    GS_RETURN_IF_ERROR(BigEndian(1));
    v.type = Type::kExt;
    GS_ASSIGN_OR_RETURN(v.bytes, Bytes(uint64_t{1} << (head - 0xd4)));
  } else {  // 0xd9..0xdb: str 8/16/32 (the caller handles 0xdc and above)
    GS_ASSIGN_OR_RETURN(uint64_t n, BigEndian(kWidth[head - 0xd9]));
    v.type = Type::kStr;
    GS_ASSIGN_OR_RETURN(v.bytes, Bytes(n));
  }
  return v;
}

Result<MsgValue> Reader::Value(int depth) {
  if (depth > kMaxMsgpackDepth) return Fail("nesting deeper than 32");
  GS_ASSIGN_OR_RETURN(uint64_t h, BigEndian(1));
  const auto head = static_cast<uint8_t>(h);
  MsgValue v;
  if (head <= 0x7f) {
    v.type = Type::kUint, v.uint = head;
  } else if (head >= 0xe0) {
    v.type = Type::kInt, v.sint = static_cast<int8_t>(head);
  } else if (head <= 0x8f) {
    return Container(Type::kMap, head & 0x0f, depth);
  } else if (head <= 0x9f) {
    return Container(Type::kArray, head & 0x0f, depth);
  } else if (head <= 0xbf) {
    v.type = Type::kStr;
    GS_ASSIGN_OR_RETURN(v.bytes, Bytes(head & 0x1f));
  } else if (head == 0xc0) {
    v.type = Type::kNil;
  } else if (head == 0xc2 || head == 0xc3) {
    v.type = Type::kBool, v.boolean = head == 0xc3;
  } else if (head == 0xc1) {
    --at_;
    return Fail("reserved byte 0xc1");
  } else if (head >= 0xdc) {
    // array 16/32, map 16/32
    GS_ASSIGN_OR_RETURN(uint64_t n, BigEndian(head & 1 ? 4 : 2));
    return Container(head <= 0xdd ? Type::kArray : Type::kMap, n, depth);
  } else {
    return Sized(head);
  }
  return v;
}

}  // namespace

Result<MsgValue> ParseMsgpack(std::span<const uint8_t> data) {
  Reader reader(data);
  GS_ASSIGN_OR_RETURN(MsgValue v, reader.Value(0));
  if (reader.left() != 0) {
    return InvalidArgument(fmt::format("msgpack: {} bytes after the value at byte {}",
                                       reader.left(), reader.offset()));
  }
  return v;
}

std::string_view MsgTypeName(MsgValue::Type type) {
  switch (type) {
    case Type::kNil:
      return "nil";
    case Type::kBool:
      return "a boolean";
    case Type::kUint:
      return "an integer";
    case Type::kInt:
      return "a negative integer";
    case Type::kFloat:
      return "a float";
    case Type::kStr:
      return "a string";
    case Type::kBin:
      return "bytes";
    case Type::kExt:
      return "an extension value";
    case Type::kArray:
      return "an array";
    case Type::kMap:
      return "a map";
  }
  return "?";
}

void MsgWriter::BigEndian(uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out_.push_back(static_cast<char>(v >> (8 * i)));
}

void MsgWriter::Uint(uint64_t v) {
  if (v <= 0x7f) return BigEndian(v, 1);
  if (v <= UINT8_MAX) return out_.push_back('\xcc'), BigEndian(v, 1);
  if (v <= UINT16_MAX) return out_.push_back('\xcd'), BigEndian(v, 2);
  if (v <= UINT32_MAX) return out_.push_back('\xce'), BigEndian(v, 4);
  out_.push_back('\xcf'), BigEndian(v, 8);
}

void MsgWriter::Int(int64_t v) {
  if (v >= 0) return Uint(static_cast<uint64_t>(v));
  const auto bits = static_cast<uint64_t>(v);
  if (v >= -32) return BigEndian(bits, 1);
  if (v >= INT8_MIN) return out_.push_back('\xd0'), BigEndian(bits, 1);
  if (v >= INT16_MIN) return out_.push_back('\xd1'), BigEndian(bits, 2);
  if (v >= INT32_MIN) return out_.push_back('\xd2'), BigEndian(bits, 4);
  out_.push_back('\xd3'), BigEndian(bits, 8);
}

void MsgWriter::Float(double v) {
  out_.push_back('\xcb');
  BigEndian(std::bit_cast<uint64_t>(v), 8);
}

// fix_max == 0: the kind has no fix form; b8 == 0: no 8-bit length form.
void MsgWriter::Head(uint8_t fix_base, uint32_t fix_max, uint8_t b8, uint8_t b16, uint8_t b32,
                     uint32_t n) {
  if (fix_max != 0 && n <= fix_max) return out_.push_back(static_cast<char>(fix_base | n));
  if (b8 != 0 && n <= UINT8_MAX) return out_.push_back(static_cast<char>(b8)), BigEndian(n, 1);
  if (n <= UINT16_MAX) return out_.push_back(static_cast<char>(b16)), BigEndian(n, 2);
  out_.push_back(static_cast<char>(b32)), BigEndian(n, 4);
}

void MsgWriter::Str(std::string_view v) {
  Head(0xa0, 31, 0xd9, 0xda, 0xdb, static_cast<uint32_t>(v.size()));
  out_.append(v);
}

void MsgWriter::Bin(std::string_view v) {
  Head(0, 0, 0xc4, 0xc5, 0xc6, static_cast<uint32_t>(v.size()));
  out_.append(v);
}

void MsgWriter::ArrayHeader(uint32_t n) { Head(0x90, 15, 0, 0xdc, 0xdd, n); }
void MsgWriter::MapHeader(uint32_t n) { Head(0x80, 15, 0, 0xde, 0xdf, n); }

}  // namespace gpuscale::kvevents
