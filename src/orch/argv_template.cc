#include "orch/argv_template.h"

#include <fmt/format.h>

#include <filesystem>
#include <string_view>

namespace gpuscale::orch {
namespace {

bool IsIdentifier(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(c >= 'a' && c <= 'z') && c != '_') return false;
  }
  return true;
}

// Expands one element; `vars` == nullptr only validates.
Result<std::string> ExpandOne(const std::string& element, size_t position, const ArgvVars* vars) {
  std::string out;
  size_t i = 0;
  while (i < element.size()) {
    const size_t open = element.find('{', i);
    if (open == std::string::npos) break;
    const size_t close = element.find('}', open + 1);
    if (close == std::string::npos) break;
    const std::string_view name(element.data() + open + 1, close - open - 1);
    out.append(element, i, open - i);
    if (!IsIdentifier(name)) {  // not a placeholder: keep the brace, rescan after it
      out.push_back('{');
      i = open + 1;
      continue;
    }
    const std::string* value = nullptr;
    static const ArgvVars kNone;  // validation only: any known name resolves
    const ArgvVars& source = vars != nullptr ? *vars : kNone;
    if (name == "port") value = &source.port;
    if (name == "gpus") value = &source.gpus;
    if (name == "replica") value = &source.replica;
    if (name == kKvEventsEndpointVar) value = &source.kv_events_endpoint;
    if (value == nullptr) {
      return InvalidArgument(
          fmt::format("unknown placeholder '{{{}}}' in '{}'; expected "
                      "{{port}}, {{gpus}}, {{replica}} or {{kv_events_endpoint}}",
                      name, element),
          fmt::format("command[{}]", position));
    }
    out += *value;
    i = close + 1;
  }
  out.append(element, i, std::string::npos);
  return out;
}

}  // namespace

std::string KvEventsEndpoint(const std::string& state_dir, const std::string& replica) {
  std::error_code ec;  // a relative state_dir resolved from here; as given if that fails
  const std::filesystem::path dir = std::filesystem::absolute(state_dir, ec);
  return fmt::format("ipc://{}/{}.kv-events", ec ? state_dir : dir.string(), replica);
}

bool NamesPlaceholder(const std::vector<std::string>& argv_template, std::string_view name) {
  const std::string braced = fmt::format("{{{}}}", name);
  for (const std::string& element : argv_template) {
    if (element.find(braced) != std::string::npos) return true;
  }
  return false;
}

Status ValidateArgvTemplate(const std::vector<std::string>& argv_template) {
  if (argv_template.empty()) {
    return InvalidArgument("expected a command: a list of arguments, program first", "command");
  }
  if (argv_template[0].empty()) {
    return InvalidArgument("expected the program to run, got an empty string", "command[0]");
  }
  for (size_t i = 0; i < argv_template.size(); ++i) {
    GS_RETURN_IF_ERROR(ExpandOne(argv_template[i], i, nullptr));
  }
  return OkStatus();
}

Result<std::vector<std::string>> ExpandArgv(const std::vector<std::string>& argv_template,
                                            const ArgvVars& vars) {
  GS_RETURN_IF_ERROR(ValidateArgvTemplate(argv_template));
  std::vector<std::string> argv;
  argv.reserve(argv_template.size());
  for (size_t i = 0; i < argv_template.size(); ++i) {
    GS_ASSIGN_OR_RETURN(std::string arg, ExpandOne(argv_template[i], i, &vars));
    argv.push_back(std::move(arg));
  }
  return argv;
}

}  // namespace gpuscale::orch
