#include "yaml/yaml_util.h"

#include <gtest/gtest.h>

namespace gpuscale::yaml {
namespace {

TEST(YamlUtilTest, ReadsTypedFieldsWithDefaults) {
  auto root = ParseYaml("a: 1.5\nb: 3\nc: true\nd: hello\n", "test");
  ASSERT_TRUE(root);
  EXPECT_DOUBLE_EQ(*ReadDouble(*root, "a", ""), 1.5);
  EXPECT_EQ(*ReadInt(*root, "b", ""), 3);
  EXPECT_TRUE(*ReadBool(*root, "c", ""));
  EXPECT_EQ(*ReadString(*root, "d", ""), "hello");
  EXPECT_EQ(*ReadInt(*root, "missing", "", 7), 7);
}

TEST(YamlUtilTest, WrongTypeNamesFieldAndLine) {
  auto root = ParseYaml("rules:\n  - threshold: abc\n", "test");
  ASSERT_TRUE(root);
  auto value = ReadDouble((*root)["rules"][0], "threshold", "rules[0]");
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().ToString(), "rules[0].threshold: expected a number, got 'abc' (line 2)");
}

TEST(YamlUtilTest, MissingRequiredAndUnknownKeys) {
  auto root = ParseYaml("min_replicas: 1\nmax_replica: 3\n", "test");
  ASSERT_TRUE(root);
  EXPECT_EQ(ReadInt(*root, "max_replicas", "").error().field, "max_replicas");
  auto status = CheckKnownKeys(*root, "", {"min_replicas", "max_replicas"});
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().field, "max_replica");
  EXPECT_NE(status.error().message.find("line 2"), std::string::npos);
}

// Found by fuzz/sim_config_fuzz: a list as a key (`? [a]`) made as<std::string>() throw.
TEST(YamlUtilTest, ANonScalarKeyIsAnErrorNotAnException) {
  auto root = ParseYaml("min_replicas: 1\n? [max_replicas]\n: 3\n", "test");
  ASSERT_TRUE(root) << root.error().ToString();
  auto status = CheckKnownKeys(*root, "policy", {"min_replicas", "max_replicas"});
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().ToString(),
            "policy: expected a field name, got a list or mapping as a key (line 2)");
}

TEST(YamlUtilTest, SyntaxErrorReportsLine) {
  auto root = ParseYaml("a: [1, 2\nb: 3\n", "cfg.yaml");
  ASSERT_FALSE(root);
  EXPECT_NE(root.error().message.find("cfg.yaml"), std::string::npos);
  EXPECT_NE(root.error().message.find("line"), std::string::npos);
}

}  // namespace
}  // namespace gpuscale::yaml
