#include "gateway/request_scanner.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace gpuscale::gateway {
namespace {

constexpr size_t kAll = std::numeric_limits<size_t>::max();

// Bytes that stand for themselves inside a JSON string: printable ASCII but '"' and '\'.
constexpr std::array<bool, 256> kPlain = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<size_t>(c)] = c != '"' && c != '\\';
  return t;
}();

// True when one of the 8 bytes of `v` is not kPlain (SWAR: a control byte, '"', '\', or a
// byte >= 0x80), so that long runs of prompt text are skipped 8 bytes at a time.
bool AnySpecial(uint64_t v) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  auto has_zero = [](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
  const uint64_t below_space = (v - kOnes * 0x20) & ~v & kHigh;
  return (below_space | has_zero(v ^ (kOnes * '"')) | has_zero(v ^ (kOnes * '\\')) | (v & kHigh)) !=
         0;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

size_t Room(const std::string& out, size_t limit) {
  return out.size() >= limit ? 0 : limit - out.size();
}

class Scanner {
 public:
  explicit Scanner(std::string_view s)
      : begin_(s.data()), p_(s.data()), end_(s.data() + s.size()) {}

  size_t fail_at() const { return fail_at_; }

  bool Fail() {
    if (fail_at_ == kAll) fail_at_ = static_cast<size_t>(p_ - begin_);
    return false;
  }

  // A UTF-8 byte order mark at the very start is skipped (as nlohmann does).
  bool SkipBom() {
    if (p_ == end_ || static_cast<unsigned char>(*p_) != 0xEF) return true;
    if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) {
      p_ += 3;
      return true;
    }
    return Fail();
  }

  void SkipWs() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool AtEnd() {
    SkipWs();
    return p_ == end_;
  }
  // The first byte of the next value (after whitespace); '\0' at the end.
  char Next() {
    SkipWs();
    return p_ < end_ ? *p_ : '\0';
  }
  bool Consume(char c) {
    SkipWs();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  // One object at p_; `member(key, depth)` must read exactly one value.
  template <typename Member>
  bool Object(int depth, Member&& member) {
    if (depth > kMaxDepth || !Consume('{')) return Fail();
    if (Consume('}')) return true;
    std::string key;
    for (;;) {
      if (Next() != '"') return Fail();
      key.clear();
      if (!String(&key, kAll) || !Consume(':')) return Fail();
      if (!member(std::string_view(key), depth + 1)) return false;
      if (Consume(',')) continue;
      return Consume('}') || Fail();
    }
  }

  // One array at p_; `element(index, depth)` must read exactly one value.
  template <typename Element>
  bool Array(int depth, Element&& element) {
    if (depth > kMaxDepth || !Consume('[')) return Fail();
    if (Consume(']')) return true;
    for (size_t i = 0;; ++i) {
      if (!element(i, depth + 1)) return false;
      if (Consume(',')) continue;
      return Consume(']') || Fail();
    }
  }

  // Any value, validated and kept nowhere.
  bool Skip(int depth) {
    switch (Next()) {
      case '"':
        return String(nullptr, 0);
      case '{':
        return Object(depth, [this](std::string_view, int d) { return Skip(d); });
      case '[':
        return Array(depth, [this](size_t, int d) { return Skip(d); });
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        return Number();
    }
  }

  // The string at p_ (Next() == '"'); its first `room` unescaped bytes are appended to `out`
  // when it is not null.
  bool String(std::string* out, size_t room) {
    ++p_;
    for (;;) {
      const char* run = p_;
      while (end_ - p_ >= 8) {
        uint64_t v;
        std::memcpy(&v, p_, 8);
        if (AnySpecial(v)) break;
        p_ += 8;
      }
      while (p_ < end_ && kPlain[static_cast<unsigned char>(*p_)]) ++p_;
      Emit(out, room, run, static_cast<size_t>(p_ - run));
      if (p_ == end_) return Fail();
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        if (!Escape(out, room)) return false;
        continue;
      }
      if (c < 0x20) return Fail();  // control characters must be escaped
      const char* sequence = p_;
      if (!Utf8()) return false;
      Emit(out, room, sequence, static_cast<size_t>(p_ - sequence));
    }
  }

  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() ||
        std::memcmp(p_, word.data(), word.size()) != 0) {
      return Fail();
    }
    p_ += word.size();
    return true;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and finite as a double (nlohmann refuses
  // a number that overflows, e.g. 1e400).
  bool Number() {
    const char* start = p_;
    const char* q = p_;
    if (q < end_ && *q == '-') ++q;
    if (q == end_ || !IsDigit(*q)) return Fail();
    const char* digits = q;
    if (*q == '0') {
      ++q;
    } else {
      while (q < end_ && IsDigit(*q)) ++q;
    }
    const bool long_integer = q - digits > 300;
    bool exponent = false;
    if (q < end_ && *q == '.') {
      ++q;
      if (q == end_ || !IsDigit(*q)) return Fail();
      while (q < end_ && IsDigit(*q)) ++q;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      exponent = true;
      ++q;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q == end_ || !IsDigit(*q)) return Fail();
      while (q < end_ && IsDigit(*q)) ++q;
    }
    p_ = q;
    if (exponent || long_integer) {  // the only numbers that can overflow a double
      const std::string text(start, q);
      if (!std::isfinite(std::strtod(text.c_str(), nullptr))) return Fail();
    }
    return true;
  }

 private:
  static void Emit(std::string* out, size_t& room, const char* s, size_t n) {
    if (out == nullptr || room == 0) return;
    n = std::min(n, room);  // may cut a UTF-8 sequence, as a byte prefix of the text does
    out->append(s, n);
    room -= n;
  }

  bool Hex4(uint32_t& value) {
    if (end_ - p_ < 4) return Fail();
    value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Fail();
      }
      value = value * 16 + digit;
    }
    return true;
  }

  // The escape at p_ ('\'); a \u escape of a UTF-16 surrogate pair is one code point, a lone
  // surrogate is an error.
  bool Escape(std::string* out, size_t& room) {
    ++p_;
    if (p_ == end_) return Fail();
    char plain;
    switch (*p_++) {
      case '"':
        plain = '"';
        break;
      case '\\':
        plain = '\\';
        break;
      case '/':
        plain = '/';
        break;
      case 'b':
        plain = '\b';
        break;
      case 'f':
        plain = '\f';
        break;
      case 'n':
        plain = '\n';
        break;
      case 'r':
        plain = '\r';
        break;
      case 't':
        plain = '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!Hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail();
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return Fail();
          p_ += 2;
          if (!Hex4(low)) return false;
          if (low < 0xDC00 || low > 0xDFFF) return Fail();
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        char utf8[4];
        size_t n;
        if (cp < 0x80) {
          utf8[0] = static_cast<char>(cp);
          n = 1;
        } else if (cp < 0x800) {
          utf8[0] = static_cast<char>(0xC0 | (cp >> 6));
          utf8[1] = static_cast<char>(0x80 | (cp & 0x3F));
          n = 2;
        } else if (cp < 0x10000) {
          utf8[0] = static_cast<char>(0xE0 | (cp >> 12));
          utf8[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          utf8[2] = static_cast<char>(0x80 | (cp & 0x3F));
          n = 3;
        } else {
          utf8[0] = static_cast<char>(0xF0 | (cp >> 18));
          utf8[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
          utf8[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          utf8[3] = static_cast<char>(0x80 | (cp & 0x3F));
          n = 4;
        }
        Emit(out, room, utf8, n);
        return true;
      }
      default:
        --p_;
        return Fail();
    }
    Emit(out, room, &plain, 1);
    return true;
  }

  // One well-formed UTF-8 sequence of 2-4 bytes at p_ (RFC 3629: no overlong forms, no
  // surrogates, nothing above U+10FFFF).
  bool Utf8() {
    const auto left = static_cast<size_t>(end_ - p_);
    auto in = [&](size_t i, unsigned lo, unsigned hi) {
      if (i >= left) return false;
      const auto b = static_cast<unsigned char>(p_[i]);
      return b >= lo && b <= hi;
    };
    const auto c = static_cast<unsigned char>(*p_);
    size_t n = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      n = in(1, 0x80, 0xBF) ? 2 : 0;
    } else if (c == 0xE0) {
      n = in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      n = in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if (c == 0xED) {
      n = in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if (c == 0xF0) {
      n = in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    } else if (c >= 0xF1 && c <= 0xF3) {
      n = in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    } else if (c == 0xF4) {
      n = in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    }
    if (n == 0) return Fail();
    p_ += n;
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  size_t fail_at_ = kAll;
};

// What an OpenAI request's prompt fields contribute, each read as the tree-based reader did.
class PromptReader {
 public:
  // `separator` (when not '\0') follows each string and each text part read, within the limit.
  PromptReader(Scanner& s, size_t limit, char separator = '\0')
      : s_(s), limit_(limit), separator_(separator) {}

  // A message `content` or a prompt element: a string, or an array of parts whose last
  // "text" member, when a string, counts; anything else contributes nothing.
  bool Content(int depth, std::string& out) {
    switch (s_.Next()) {
      case '"':
        return s_.String(&out, Room(out, limit_)) && Separate(out);
      case '[':
        return s_.Array(depth, [&](size_t, int d) { return Part(d, out); });
      default:
        return s_.Skip(depth);
    }
  }

  // `prompt` or `input`: an array's first element, else the value itself.
  bool PromptLike(int depth, std::string& out) {
    if (s_.Next() != '[') return Content(depth, out);
    return s_.Array(depth, [&](size_t i, int d) { return i == 0 ? Content(d, out) : s_.Skip(d); });
  }

  // `messages` (an array; REQUIRES Next() == '['): each message's last `content`.
  bool Messages(int depth, std::string& out) {
    return s_.Array(depth, [&](size_t, int d) { return Message(d, out); });
  }

 private:
  bool Part(int depth, std::string& out) {
    if (s_.Next() != '{') return s_.Skip(depth);
    std::string text;
    bool text_is_string = false;
    const bool ok = s_.Object(depth, [&](std::string_view key, int d) {
      if (key != "text") return s_.Skip(d);
      text.clear();
      text_is_string = s_.Next() == '"';
      return text_is_string ? s_.String(&text, Room(out, limit_)) : s_.Skip(d);
    });
    if (ok && text_is_string) Separate(out += text);
    return ok;
  }

  bool Separate(std::string& out) const {
    if (separator_ != '\0' && Room(out, limit_) > 0) out += separator_;
    return true;
  }

  bool Message(int depth, std::string& out) {
    if (s_.Next() != '{') return s_.Skip(depth);
    std::string piece;
    bool has_content = false;
    const size_t room = Room(out, limit_);
    const bool ok = s_.Object(depth, [&](std::string_view key, int d) {
      if (key != "content") return s_.Skip(d);
      piece.clear();
      has_content = true;
      // `gpuscale emulate` ends each message's text (and each text part) with a newline
      // before it cuts the prompt into words (emulator/openai_protocol.cc): without one here,
      // the last word of a message and the first of the next would be one word, and the
      // prompt's block keys would not be those the emulator publishes.
      PromptReader within(s_, room, '\n');
      return within.Content(d, piece);
    });
    if (ok && has_content) out += piece;
    return ok;
  }

  Scanner& s_;
  size_t limit_;
  char separator_;
};

}  // namespace

ScannedRequest ScanRequest(std::string_view body, size_t prefix_chars) {
  ScannedRequest r;
  Scanner s(body);
  PromptReader prompt(s, prefix_chars);
  bool has_prompt = false, has_input = false, messages_is_array = false;
  std::string prompt_text, messages_text, input_text;
  auto member = [&](std::string_view key, int d) {
    if (key == "model") {
      r.has_model = true;
      r.model.clear();
      r.model_is_string = s.Next() == '"';
      return r.model_is_string ? s.String(&r.model, kAll) : s.Skip(d);
    }
    if (key == "stream") {
      r.has_stream = true;
      const char next = s.Next();
      r.stream = next == 't'   ? ScannedRequest::StreamValue::kTrue
                 : next == 'f' ? ScannedRequest::StreamValue::kFalse
                 : next == 'n' ? ScannedRequest::StreamValue::kNull
                               : ScannedRequest::StreamValue::kOther;
      return s.Skip(d);
    }
    if (key == "prompt" || key == "input") {
      (key == "prompt" ? has_prompt : has_input) = true;
      std::string& text = key == "prompt" ? prompt_text : input_text;
      text.clear();
      return prompt.PromptLike(d, text);
    }
    if (key == "messages") {
      messages_text.clear();
      messages_is_array = s.Next() == '[';
      return messages_is_array ? prompt.Messages(d, messages_text) : s.Skip(d);
    }
    return s.Skip(d);
  };
  if (!s.SkipBom()) {
    r.error = "invalid JSON at byte 0 (a partial byte order mark)";
    return r;
  }
  if (s.Next() != '{') {
    r.error = s.AtEnd() ? "the body is empty" : "the body is not a JSON object";
    return r;
  }
  if (!s.Object(1, member) || !s.AtEnd()) {
    s.Fail();
    r.error = fmt::format("invalid JSON at byte {}", s.fail_at());
    return r;
  }
  r.ok = true;
  r.prefix = has_prompt          ? std::move(prompt_text)
             : messages_is_array ? std::move(messages_text)
             : has_input         ? std::move(input_text)
                                 : std::string();
  return r;
}

}  // namespace gpuscale::gateway
