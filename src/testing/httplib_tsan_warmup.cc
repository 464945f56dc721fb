// Compiled into test executables of ThreadSanitizer builds only (gpuscale_test adds it).
//
// Debian's cpp-httplib is a shared library built without -fsanitize=thread. The first request
// a server parses initializes function-local statics inside it (parse_request_line's set of
// methods, for one); a thread that reaches them later takes the guard's inline fast path,
// which TSan does not see from uninstrumented code. Two loopback servers answering their first
// requests at once (ReplicaScrapesTest scrapes three in parallel) then show as a race on
// the set's nodes, inside memcpy and memcmp called from the library. A suppression cannot
// name just that: the reports hold only library frames, and a module-wide one would also hide
// races in our handlers, which httplib calls.
//
// So one request is served and answered here before main, by a server that is stopped and
// joined: the join orders those writes before every thread the tests start.
#include <httplib.h>

#include <chrono>
#include <thread>

namespace {

struct HttplibStaticsWarmup {
  HttplibStaticsWarmup() {
    httplib::Server server;
    server.Post("/warmup", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body, "application/json");
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    if (port <= 0) return;
    std::thread listener([&server] { server.listen_after_bind(); });
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(std::chrono::seconds(5));
    client.set_read_timeout(std::chrono::seconds(5));
    client.Post("/warmup", "{}", "application/json");
    // stop() is a no-op until the accept loop runs.
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server.stop();
    listener.join();
  }
};

const HttplibStaticsWarmup warmup;

}  // namespace
