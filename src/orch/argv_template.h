// Command-line templates for replica processes. A template is an argv vector (never a shell
// string) whose elements may contain placeholders, replaced per replica:
//   {port}     the port the replica must listen on (127.0.0.1)
//   {gpus}     its GPU indices, comma-separated ("0,3"; "" for a CPU-only replica)
//   {replica}  its id ("chat-2")
//   {kv_events_endpoint}  where it publishes its KV events for the gateway's precise
//              prefix-cache routing (KvEventsEndpoint; "" where the engine has none: Slurm)
// Each template element expands to exactly one argument: a value containing spaces or ';'
// stays one argument, because the result is exec'd directly, not interpreted by a shell.
// Braces that do not enclose a lower-case identifier ("{\"temperature\": 0}") are literal;
// an unknown identifier ("{prot}") is an error, so typos surface at config load.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpuscale::orch {

struct ArgvVars {
  std::string port;
  std::string gpus;
  std::string replica;
  std::string kv_events_endpoint = {};
};

// The placeholder's name, for callers that check whether a template uses it.
inline constexpr std::string_view kKvEventsEndpointVar = "kv_events_endpoint";

// A local replica's KV-event endpoint: an ipc socket in the daemon's state directory, named
// for the replica, so that it needs no port, survives a daemon restart unchanged (the gateway
// derives it from the id again) and never collides. The replica binds it (vLLM binds ipc
// endpoints; `gpuscale emulate` binds any); the gateway connects. A Unix socket path is at
// most 107 bytes: a longer state directory makes the replica's bind fail.
std::string KvEventsEndpoint(const std::string& state_dir, const std::string& replica);

// Whether an element of `argv_template` names {`name`}.
bool NamesPlaceholder(const std::vector<std::string>& argv_template, std::string_view name);

// Errors: kInvalidArgument when the template is empty, its program (element 0) is empty, or
// an element names an unknown placeholder; the field is "command[i]".
Status ValidateArgvTemplate(const std::vector<std::string>& argv_template);

// The template with placeholders replaced. Errors: as ValidateArgvTemplate.
Result<std::vector<std::string>> ExpandArgv(const std::vector<std::string>& argv_template,
                                            const ArgvVars& vars);

}  // namespace gpuscale::orch
