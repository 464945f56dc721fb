#include "orch/argv_template.h"

#include <gtest/gtest.h>

namespace gpuscale::orch {
namespace {

struct ExpandCase {
  std::string name;
  std::vector<std::string> tmpl;
  std::vector<std::string> expected;
};

TEST(ArgvTemplateTest, ExpandsPlaceholdersOneArgumentPerElement) {
  const ArgvVars vars{"8123", "0,3", "chat-2"};
  const std::vector<ExpandCase> cases = {
      {"all placeholders",
       {"vllm", "serve", "--port", "{port}", "--name={replica}", "{gpus}"},
       {"vllm", "serve", "--port", "8123", "--name=chat-2", "0,3"}},
      {"several in one element", {"x", "{replica}:{port}/{port}"}, {"x", "chat-2:8123/8123"}},
      {"shell metacharacters stay one argument",
       {"echo", "a; rm -rf / {port}", "$(whoami) `id` | cat"},
       {"echo", "a; rm -rf / 8123", "$(whoami) `id` | cat"}},
      {"json braces are literal",
       {"x", "{\"temperature\": 0}", "{}", "{1}", "{Port}"},
       {"x", "{\"temperature\": 0}", "{}", "{1}", "{Port}"}},
      {"unterminated brace is literal", {"x", "{port", "a{"}, {"x", "{port", "a{"}},
      {"literal brace before a placeholder", {"x", "{{port}}"}, {"x", "{8123}"}},
  };
  for (const ExpandCase& c : cases) {
    auto argv = ExpandArgv(c.tmpl, vars);
    ASSERT_TRUE(argv) << c.name << ": " << argv.error().ToString();
    EXPECT_EQ(*argv, c.expected) << c.name;
  }
}

TEST(ArgvTemplateTest, KvEventsEndpointIsAnIpcSocketInTheStateDirNamedForTheReplica) {
  EXPECT_EQ(KvEventsEndpoint("/var/lib/gpuscale", "chat-2"),
            "ipc:///var/lib/gpuscale/chat-2.kv-events");
  const ArgvVars vars{"8123", "", "chat-2", KvEventsEndpoint("/s", "chat-2")};
  const std::vector<std::string> tmpl = {"gpuscale", "emulate", "--kv-events-endpoint",
                                         "{kv_events_endpoint}"};
  EXPECT_TRUE(NamesPlaceholder(tmpl, kKvEventsEndpointVar));
  EXPECT_FALSE(NamesPlaceholder({"vllm", "{port}"}, kKvEventsEndpointVar));
  auto argv = ExpandArgv(tmpl, vars);
  ASSERT_TRUE(argv) << argv.error().ToString();
  EXPECT_EQ(argv->back(), "ipc:///s/chat-2.kv-events");
}

struct ErrorCase {
  std::vector<std::string> tmpl;
  std::string field;
};

TEST(ArgvTemplateTest, RejectsEmptyCommandsAndUnknownPlaceholders) {
  const std::vector<ErrorCase> cases = {
      {{}, "command"},
      {{""}, "command[0]"},
      {{"vllm", "--port", "{prot}"}, "command[2]"},
      {{"vllm", "{gpu_ids}"}, "command[1]"},
  };
  for (const ErrorCase& c : cases) {
    Status status = ValidateArgvTemplate(c.tmpl);
    ASSERT_FALSE(status) << c.field;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(status.error().field, c.field);
    EXPECT_FALSE(ExpandArgv(c.tmpl, {}));
  }
  EXPECT_NE(ValidateArgvTemplate({"x", "{prot}"}).error().message.find("{prot}"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuscale::orch
