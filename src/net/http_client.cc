#include "net/http_client.h"

#include "net/http_get_pool.h"

namespace gpuscale::net {

// A pool of one request that keeps nothing: the same code path as the daemon's scrapes.
Result<HttpGetResponse> HttpGet(const HttpGetRequest& request) {
  HttpGetPoolOptions options;
  options.max_in_flight = 1;
  options.keep_alive = false;
  HttpGetPool pool(options);
  return std::move(pool.GetAll({request})[0]);
}

}  // namespace gpuscale::net
