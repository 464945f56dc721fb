#include "api/services_list_json.h"

#include <mutex>
#include <string_view>
#include <unordered_map>

#include "api/json_views.h"

namespace gpuscale::api {
namespace {

std::string Dump(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace);
}

// Appends `text` (a dump at indent 0) as if it were printed `depth` spaces deeper: a JSON
// dump has newlines only between its tokens (a string's newline is the escape "\n"), so
// each line after the first gets the extra spaces.
void AppendIndented(std::string& out, std::string_view text, std::string_view depth) {
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', start)) {
    out.append(text.substr(start, nl + 1 - start));
    out.append(depth);
    start = nl + 1;
  }
  out.append(text.substr(start));
}

// The spec's JSON text as it prints inside a service object (one level deep), once per
// distinct spec text: a spec changes only when someone edits it. Bounded as SpecJson is:
// cleared past 16,384 texts.
std::string SpecText(const std::string& yaml_text) {
  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, std::string>();
  {
    std::lock_guard lock(mu);
    if (auto it = cache->find(yaml_text); it != cache->end()) return it->second;
  }
  std::string text;
  AppendIndented(text, Dump(YamlTextToJson(yaml_text)), "  ");
  std::lock_guard lock(mu);
  if (cache->size() >= 16384) cache->clear();
  return cache->emplace(yaml_text, std::move(text)).first->second;
}

// One service as ServiceJson prints at indent 0: its status object with `"spec": ...` as
// the last member (ServiceJson's order).
void AppendService(std::string& out, const daemon::ServiceView& service) {
  std::string status = Dump(ServiceStatusJson(service));
  status.resize(status.size() - 2);  // the closing "\n}"
  status += ",\n  \"spec\": ";
  status += SpecText(service.spec_yaml);
  status += "\n}";
  AppendIndented(out, status, "    ");
}

}  // namespace

std::string ServicesListBody(const std::vector<daemon::ServiceView>& services) {
  if (services.empty()) return "{\n  \"services\": []\n}\n";
  std::string out = "{\n  \"services\": [\n";
  for (size_t i = 0; i < services.size(); ++i) {
    out += i == 0 ? "    " : ",\n    ";
    AppendService(out, services[i]);
  }
  out += "\n  ]\n}\n";
  return out;
}

}  // namespace gpuscale::api
