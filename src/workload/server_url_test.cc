#include "workload/server_url.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscale::loadgen {
namespace {

TEST(ServerUrlTest, ParsesServerUrls) {
  struct Case {
    std::string url;
    std::string scheme_host_port;
    std::string base_path;
  };
  const std::vector<Case> cases = {
      {"http://127.0.0.1:8000", "http://127.0.0.1:8000", ""},
      {"http://127.0.0.1:8000/", "http://127.0.0.1:8000", ""},
      {"http://h:1/v1", "http://h:1", ""},
      {"https://api.example/x/y/v1/", "https://api.example", "/x/y"},
  };
  for (const Case& c : cases) {
    Result<ServerUrl> url = ParseServerUrl(c.url);
    ASSERT_TRUE(url.has_value()) << c.url;
    EXPECT_EQ(url->scheme_host_port, c.scheme_host_port) << c.url;
    EXPECT_EQ(url->base_path, c.base_path) << c.url;
  }
  for (std::string bad : {"127.0.0.1:8000", "ftp://h", "http://", "http://:80"}) {
    Result<ServerUrl> url = ParseServerUrl(bad);
    ASSERT_FALSE(url.has_value()) << bad;
    EXPECT_EQ(url.error().field, "--url");
  }
}

}  // namespace
}  // namespace gpuscale::loadgen
