// SseParser: incremental parser of a server-sent-events stream (the WHATWG event-stream
// format that OpenAI-compatible servers use with stream: true). Bytes arrive in arbitrary
// pieces; each complete event's data (its `data:` lines joined with "\n") comes out once the
// blank line that ends it has arrived. Comments (":...") and other fields (event, id, retry)
// are skipped; LF, CRLF and CR line ends are accepted.
//
// Ownership and thread-safety: owns its partial-line buffer; one parser per stream.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuscale::loadgen {

class SseParser {
 public:
  // Consumes `bytes` and returns the data of every event completed by them, in order.
  std::vector<std::string> Feed(std::string_view bytes);

  // True when an event has started (a data line was read) but not yet ended.
  bool HasPartialEvent() const { return has_data_ || !line_.empty(); }

 private:
  void EndLine(std::vector<std::string>& events);

  std::string line_;  // the line read so far
  std::string data_;  // data lines of the current event
  bool has_data_ = false;
  bool last_was_cr_ = false;  // a CR ended the last line: skip the LF of a CRLF
};

}  // namespace gpuscale::loadgen
