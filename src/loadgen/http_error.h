// DescribeHttpError: cpp-httplib's client errors as a sentence a user can act on
// ("connection refused or host unreachable"), where httplib::to_string gives one word
// ("Connection"). Shared by the bench client and the CLI's API client.
//
// An I/O-side internal header: it exposes cpp-httplib, so only .cc files include it.
#pragma once

#include <httplib.h>

#include <string>

namespace gpuscale::loadgen {

inline std::string DescribeHttpError(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "connection refused or host unreachable";
    case httplib::Error::ConnectionTimeout:
      return "timed out connecting";
    case httplib::Error::Read:
      return "the connection failed while reading the reply";
    case httplib::Error::Write:
      return "the connection failed while sending the request";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    default:
      return "HTTP client error: " + httplib::to_string(error);
  }
}

}  // namespace gpuscale::loadgen
