#include "orch/http_probe.h"

#include <httplib.h>

#include <chrono>

namespace gpuscale::orch {

bool HttpGetOk(int port, const std::string& path, Seconds timeout) {
  try {
    httplib::Client client("127.0.0.1", port);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout);
    client.set_connection_timeout(micros);
    client.set_read_timeout(micros);
    client.set_write_timeout(micros);
    const auto response = client.Get(path.c_str());
    return response && response->status == 200;
  } catch (...) {  // httplib may throw on odd input; a probe only answers yes or no
    return false;
  }
}

}  // namespace gpuscale::orch
