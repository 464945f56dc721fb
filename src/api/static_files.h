// Static files of the web dashboard, served from a directory (ApiServerOptions::web_root)
// at "/": "/" and directories serve their index.html; everything resolves inside the root
// (no "..", no symlink pointing outside), else it does not exist.
//
// Thread-safety: pure functions over the file system (read-only).
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuscale::api {

struct StaticFile {
  std::string path;          // resolved file path inside the root
  std::string content_type;  // from the extension; application/octet-stream if unknown
};

// Resolves `url_path` (already percent-decoded, starting with "/") under `root`.
// Errors: kNotFound for a missing file or one outside the root (a traversal attempt is
// answered as if the file did not exist); kInvalidArgument when root is not a directory.
Result<StaticFile> ResolveStaticFile(const std::string& root, std::string_view url_path);

// Reads the whole file. Errors: kNotFound when it cannot be read.
Result<std::string> ReadStaticFile(const StaticFile& file);

// "text/html; charset=utf-8" for .html, "text/javascript" for .js, ...
std::string ContentTypeFor(std::string_view path);

}  // namespace gpuscale::api
