#include "api/static_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace gpuscale::api {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Refuses "..", NUL and backslashes before touching the file system; "." segments and
// doubled slashes are harmless and left to the canonical-path check.
bool SafeUrlPath(std::string_view url_path) {
  if (url_path.empty() || url_path.front() != '/') return false;
  if (url_path.find('\0') != std::string_view::npos) return false;
  if (url_path.find('\\') != std::string_view::npos) return false;
  size_t start = 1;
  while (start <= url_path.size()) {
    size_t slash = url_path.find('/', start);
    if (slash == std::string_view::npos) slash = url_path.size();
    if (url_path.substr(start, slash - start) == "..") return false;
    start = slash + 1;
  }
  return true;
}

// True when `path` (canonical) is `root` (canonical) or inside it.
bool Inside(const fs::path& root, const fs::path& path) {
  auto [root_end, unused] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return root_end == root.end();
}

}  // namespace

Result<StaticFile> ResolveStaticFile(const std::string& root, std::string_view url_path) {
  std::error_code ec;
  const fs::path canonical_root = fs::canonical(root, ec);
  if (ec || !fs::is_directory(canonical_root, ec)) {
    return InvalidArgument(fmt::format("'{}' is not a directory", root), "web_root");
  }
  const auto not_found = [&] { return NotFound(fmt::format("no file {}", url_path)); };
  if (!SafeUrlPath(url_path)) return not_found();
  fs::path candidate = canonical_root / fs::path(std::string(url_path.substr(1)));
  if (EndsWith(url_path, "/") || fs::is_directory(candidate, ec)) candidate /= "index.html";
  const fs::path resolved = fs::canonical(candidate, ec);
  if (ec || !Inside(canonical_root, resolved) || !fs::is_regular_file(resolved, ec)) {
    return not_found();
  }
  return StaticFile{resolved.string(), ContentTypeFor(resolved.string())};
}

Result<std::string> ReadStaticFile(const StaticFile& file) {
  std::ifstream in(file.path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {}", file.path));
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string ContentTypeFor(std::string_view path) {
  static const std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
      {".map", "application/json"},
      {".woff2", "font/woff2"},
  };
  for (const auto& [extension, type] : kTypes) {
    if (EndsWith(path, extension)) return std::string(type);
  }
  return "application/octet-stream";
}

}  // namespace gpuscale::api
