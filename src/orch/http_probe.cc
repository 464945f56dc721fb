#include "orch/http_probe.h"

#include <httplib.h>

#include <chrono>

namespace gpuscale::orch {

ProbeResult HttpProbe(int port, const std::string& path, Seconds timeout) {
  try {
    httplib::Client client("127.0.0.1", port);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout);
    client.set_connection_timeout(micros);
    client.set_read_timeout(micros);
    client.set_write_timeout(micros);
    const auto response = client.Get(path.c_str());
    if (response) return response->status == 200 ? ProbeResult::kOk : ProbeResult::kFailed;
    // Connected but nothing came back in time: busy or hung, which only time tells apart.
    return response.error() == httplib::Error::Read ? ProbeResult::kNoAnswer
                                                    : ProbeResult::kFailed;
  } catch (...) {  // httplib may throw on odd input
    return ProbeResult::kFailed;
  }
}

}  // namespace gpuscale::orch
