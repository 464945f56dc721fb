#include "workload/server_url.h"

#include <fmt/format.h>

namespace gpuscale::loadgen {

Result<ServerUrl> ParseServerUrl(std::string_view url) {
  ServerUrl parsed;
  std::string_view rest;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (url.starts_with(scheme)) rest = url.substr(scheme.size());
  }
  const size_t slash = rest.find('/');
  const std::string_view host_port = rest.substr(0, slash);
  if (host_port.empty() || host_port.starts_with(':')) {
    return InvalidArgument(
        fmt::format("expected http://HOST[:PORT][/PATH] (or https://), got '{}'", url), "--url");
  }
  parsed.scheme_host_port = std::string(url.substr(0, url.size() - rest.size() + host_port.size()));
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (path.ends_with('/')) path.remove_suffix(1);
  if (path.ends_with("/v1")) path.remove_suffix(3);
  parsed.base_path = std::string(path);
  return parsed;
}

}  // namespace gpuscale::loadgen
