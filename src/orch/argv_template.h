// Command-line templates for replica processes. A template is an argv vector (never a shell
// string) whose elements may contain placeholders, replaced per replica:
//   {port}     the port the replica must listen on (127.0.0.1)
//   {gpus}     its GPU indices, comma-separated ("0,3"; "" for a CPU-only replica)
//   {replica}  its id ("chat-2")
// Each template element expands to exactly one argument: a value containing spaces or ';'
// stays one argument, because the result is exec'd directly, not interpreted by a shell.
// Braces that do not enclose a lower-case identifier ("{\"temperature\": 0}") are literal;
// an unknown identifier ("{prot}") is an error, so typos surface at config load.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace gpuscale::orch {

struct ArgvVars {
  std::string port;
  std::string gpus;
  std::string replica;
};

// Errors: kInvalidArgument when the template is empty, its program (element 0) is empty, or
// an element names an unknown placeholder; the field is "command[i]".
Status ValidateArgvTemplate(const std::vector<std::string>& argv_template);

// The template with placeholders replaced. Errors: as ValidateArgvTemplate.
Result<std::vector<std::string>> ExpandArgv(const std::vector<std::string>& argv_template,
                                            const ArgvVars& vars);

}  // namespace gpuscale::orch
