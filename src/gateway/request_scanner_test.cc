#include "gateway/request_scanner.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscale::gateway {
namespace {

using Stream = ScannedRequest::StreamValue;

TEST(RequestScannerTest, AcceptsWhatJsonAcceptsAndNothingElse) {
  struct Case {
    std::string body;
    bool ok;
  } cases[] = {
      {R"({"model": "m"})", true},
      {"\xEF\xBB\xBF{\"model\": \"m\"}", true},  // a byte order mark
      {R"( {"a": [1, -0, 0.5, 1e9, -2.5E-3, true, false, null, {}, [], ""]} )", true},
      {R"({"s": "\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"})", true},
      {"{\"s\": \"\xC3\xA9\xF0\x9F\x98\x80\"}", true},  // raw UTF-8
      {"", false},
      {"[1]", false},
      {R"("text")", false},
      {R"({"a": 1,})", false},
      {R"({"a": 01})", false},
      {R"({"a": 1.})", false},
      {R"({"a": 1e400})", false},  // overflows a double
      {R"({"a": tru})", false},
      {R"({"a": "\x"})", false},
      {R"({"a": "\ud83d"})", false},             // a lone high surrogate
      {R"({"a": "\ude00"})", false},             // a lone low surrogate
      {"{\"a\": \"\x01\"}", false},              // an unescaped control character
      {"{\"a\": \"\xC0\xAF\"}", false},          // an overlong form
      {"{\"a\": \"\xED\xA0\x80\"}", false},      // a UTF-16 surrogate in UTF-8
      {"{\"a\": \"\xF4\x90\x80\x80\"}", false},  // above U+10FFFF
      {R"({"a": 1} x)", false},
      {"\xEF\xBB{}", false},  // a partial byte order mark
      {R"({"a": "unterminated)", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ScanRequest(c.body, 16).ok, c.ok) << c.body;
  }
  std::string deep(kMaxDepth, '[');
  deep = "{\"a\": " + deep + std::string(kMaxDepth, ']') + "}";
  const ScannedRequest too_deep = ScanRequest(deep, 16);
  EXPECT_FALSE(too_deep.ok);
  EXPECT_NE(too_deep.error.find("invalid JSON at byte"), std::string::npos) << too_deep.error;
}

TEST(RequestScannerTest, ReadsTheLastModelAndStreamMembers) {
  const ScannedRequest r =
      ScanRequest(R"({"model": "a", "stream": false, "model": "b\u00e9", "stream": true})", 8);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.model, "b\xC3\xA9");
  EXPECT_EQ(r.stream, Stream::kTrue);
  EXPECT_FALSE(ScanRequest(R"({"model": 7})", 8).model_is_string);
  EXPECT_EQ(ScanRequest(R"({"model": "m", "stream": "yes"})", 8).stream, Stream::kOther);
  EXPECT_EQ(ScanRequest(R"({"model": "m", "stream": null})", 8).stream, Stream::kNull);
  EXPECT_FALSE(ScanRequest(R"({"stream": true})", 8).has_model);
}

TEST(RequestScannerTest, ThePrefixComesFromPromptThenMessagesThenInput) {
  struct Case {
    const char* body;
    size_t limit;
    const char* prefix;
  } cases[] = {
      {R"({"prompt": "abcdefgh"})", 4, "abcd"},
      {R"({"prompt": ["abcdefgh", "x"]})", 4, "abcd"},
      {R"({"prompt": [[{"text": "ab"}, {"text": "cd"}]]})", 3, "abc"},
      {R"({"prompt": [1, 2, 3]})", 4, ""},                          // token ids: no text
      {R"({"prompt": 5, "messages": [{"content": "m"}]})", 4, ""},  // prompt wins, even empty
      // Each message's text and each text part ends with a newline, as the emulator's.
      {R"({"messages": [{"content": "You are "}, {"content": [{"type": "text", "text": "terse"}]}]})",
       64, "You are \nterse\n"},
      {R"({"messages": [{"content": "abc"}, {"content": "def"}]})", 5, "abc\nd"},
      {R"({"messages": [{"content": "abc"}, {"content": "def"}]})", 3, "abc"},
      {R"({"messages": [{"content": [{"text": "a"}, {"text": "b"}]}]})", 8, "a\nb\n"},
      {R"({"messages": [{"content": "a", "content": "b"}]})", 8, "b\n"},  // the last one
      {R"({"messages": [{"content": [{"text": "a", "text": 1}]}]})", 8, ""},
      {R"({"messages": [{"content": null}, {"content": "x"}]})", 8, "x\n"},
      {R"({"messages": "not a list", "input": "in"})", 8, "in"},
      {R"({"messages": [], "input": "in"})", 8, ""},
      {R"({"input": ["abc", "def"]})", 8, "abc"},
      {R"({"messages": [{"content": "x"}], "prompt": "p"})", 8, "p"},
      {R"({"prompt": "\u00e9t\u00e9"})", 3, "\xC3\xA9t"},  // bytes, not characters
  };
  for (const Case& c : cases) {
    const ScannedRequest r = ScanRequest(c.body, c.limit);
    ASSERT_TRUE(r.ok) << c.body;
    EXPECT_EQ(r.prefix, c.prefix) << c.body;
  }
}

}  // namespace
}  // namespace gpuscale::gateway
