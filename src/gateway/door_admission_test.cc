#include "gateway/door_admission.h"

#include <gtest/gtest.h>

namespace gpuscale::gateway {
namespace {

using route::Priority;

struct PriorityCase {
  const char* name;
  std::string model;
  std::optional<std::string_view> header;
  std::optional<Priority> expected;  // nullopt: a 400 naming the header
};

TEST(DoorAdmissionTest, PriorityComesFromTheHeaderElseTheModelElseTheDefault) {
  AdmissionConfig config;
  config.default_priority = Priority::kStandard;
  config.model_priority = {{"batch", Priority::kSheddable}};
  for (const PriorityCase& c : {
           PriorityCase{"default", "chat", std::nullopt, Priority::kStandard},
           PriorityCase{"the model's", "batch", std::nullopt, Priority::kSheddable},
           PriorityCase{"the header over the model's", "batch", "critical", Priority::kCritical},
           PriorityCase{"any case, spaces ignored", "chat", " Sheddable ", Priority::kSheddable},
           PriorityCase{"unknown", "chat", "urgent", std::nullopt},
           PriorityCase{"empty", "chat", "", std::nullopt},
       }) {
    Result<DoorAdmission> a = ReadDoorAdmission(config, c.model, {.priority = c.header}, 40);
    if (!c.expected) {
      ASSERT_FALSE(a.has_value()) << c.name;
      EXPECT_EQ(a.error().field, "x-gpuscale-priority") << c.name;
      EXPECT_NE(a.error().message.find("critical, standard or sheddable"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(a.has_value()) << c.name << ": " << a.error().ToString();
    EXPECT_EQ(a->priority, *c.expected) << c.name;
  }
}

TEST(DoorAdmissionTest, TheTenantIsAHashOfTheApiKeyOrTheConfiguredHeader) {
  AdmissionConfig config;
  auto tenant = [&](DoorHeaders h) { return ReadDoorAdmission(config, "m", h, 0)->tenant; };
  const std::string k1 = tenant({.authorization = "Bearer sk-secret-1"});
  EXPECT_EQ(k1, tenant({.authorization = "bearer sk-secret-1"}));
  EXPECT_NE(k1, tenant({.authorization = "Bearer sk-secret-2"}));
  EXPECT_EQ(k1.find("sk-secret"), std::string::npos) << "the key is never kept";
  EXPECT_TRUE(k1.starts_with("key-")) << k1;
  EXPECT_EQ(tenant({}), "anonymous");
  EXPECT_EQ(tenant({.authorization = "Basic abc"}), "anonymous");
  // A configured header names the tenant; absent, the key does.
  config.tenant_header = "x-tenant";
  EXPECT_EQ(tenant({.tenant = "acme", .authorization = "Bearer sk-secret-1"}), "header-acme");
  EXPECT_EQ(tenant({.authorization = "Bearer sk-secret-1"}), k1);
}

TEST(DoorAdmissionTest, ExpectedTokensAreAQuarterOfTheBodyPlusTheAssumedOutput) {
  EXPECT_DOUBLE_EQ(ExpectedTokens(0), kAssumedOutputTokens);
  EXPECT_DOUBLE_EQ(ExpectedTokens(4000), 1000 + kAssumedOutputTokens);
  EXPECT_DOUBLE_EQ(ExpectedTokens(5), 2 + kAssumedOutputTokens);
}

TEST(DoorAdmissionTest, RateLimitHeadersAreOpenAis) {
  const auto headers = RateLimitHeaders(
      {.allowed = false, .limit_tokens = 90000, .remaining_tokens = 12.7, .reset_seconds = 52});
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers[0], (std::pair<std::string, std::string>{"x-ratelimit-limit-tokens", "90000"}));
  EXPECT_EQ(headers[1],
            (std::pair<std::string, std::string>{"x-ratelimit-remaining-tokens", "12"}));
  EXPECT_EQ(headers[2], (std::pair<std::string, std::string>{"x-ratelimit-reset-tokens", "52s"}));
}

}  // namespace
}  // namespace gpuscale::gateway
