#include "metrics/scraper.h"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <chrono>
#include <exception>

namespace gpuscale::metrics {
namespace {

constexpr std::string_view kScheme = "http://";

Unexpected<Error> BadUrl(std::string_view url, std::string_view why) {
  return InvalidArgument(
      fmt::format("invalid scrape URL '{}': {} (expected http://host[:port][/path])", url, why),
      "url");
}

std::string Describe(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "connection refused or host unreachable";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out";
    case httplib::Error::Read:
      return "reading the response failed or timed out";
    case httplib::Error::Write:
      return "sending the request failed";
    case httplib::Error::Canceled:
      return "timed out reading the body";
    default:
      return httplib::to_string(error);
  }
}

}  // namespace

Result<ScrapeUrl> ParseScrapeUrl(std::string_view url) {
  if (!url.starts_with(kScheme)) return BadUrl(url, "only http:// is supported");
  std::string_view rest = url.substr(kScheme.size());
  ScrapeUrl out;
  size_t slash = rest.find('/');
  if (slash != std::string_view::npos) out.path = std::string(rest.substr(slash));
  std::string_view authority = rest.substr(0, slash);
  size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    std::string_view port = authority.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
    if (ec != std::errc() || ptr != port.data() + port.size() || out.port < 1 || out.port > 65535) {
      return BadUrl(url, "port must be a number in 1..65535");
    }
    authority = authority.substr(0, colon);
  }
  if (authority.empty()) return BadUrl(url, "missing host");
  out.host = std::string(authority);
  return out;
}

// Over 40 lines only because each transport outcome maps to its own message.
Result<Exposition> ScrapeMetrics(std::string_view url, const ScrapeOptions& options) {
  GS_ASSIGN_OR_RETURN(ScrapeUrl target, ParseScrapeUrl(url));
  std::string body;
  bool too_big = false;
  bool late = false;
  try {
    httplib::Client client(target.host, target.port);
    const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(options.timeout);
    client.set_connection_timeout(timeout);
    client.set_read_timeout(timeout);
    client.set_write_timeout(timeout);
    // httplib's read timeout applies per read; this deadline bounds a slowly trickling body.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    httplib::Headers headers = {{"Accept", "text/plain;version=0.0.4"}};
    httplib::Result result = client.Get(target.path, headers, [&](const char* data, size_t n) {
      too_big = body.size() + n > options.max_body_bytes;
      late = std::chrono::steady_clock::now() > deadline;
      if (too_big || late) return false;  // cancels the transfer
      body.append(data, n);
      return true;
    });
    if (too_big) {
      return ResourceExhausted(
          fmt::format("scrape of {} returned more than {} bytes", url, options.max_body_bytes));
    }
    if (!result) {
      std::string cause = late ? "timed out reading the body" : Describe(result.error());
      return Unavailable(fmt::format("scrape of {} failed: {} (timeout {}s)", url, cause,
                                     options.timeout.count()));
    }
    if (result->status != 200) {
      return Unavailable(
          fmt::format("scrape of {} returned HTTP {} (expected 200)", url, result->status));
    }
  } catch (const std::exception& e) {  // no exception crosses the module boundary
    return Unavailable(fmt::format("scrape of {} failed: {}", url, e.what()));
  }
  Result<Exposition> parsed = ParsePrometheusText(body, options.parse);
  if (!parsed) {
    Error error = std::move(parsed).error();
    error.message = fmt::format("{} (in the body of {})", error.message, url);
    return Unexpected<Error>(std::move(error));
  }
  return parsed;
}

}  // namespace gpuscale::metrics
