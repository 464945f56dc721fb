#include "daemon/state_dir_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace gpuscale::daemon {

Result<StateDirLock> StateDirLock::Acquire(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Unavailable(fmt::format("cannot create state directory '{}': {}", dir, ec.message()),
                       "state_dir");
  }
  const std::string path = dir + "/gpuscale.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Unavailable(fmt::format("cannot open lock file '{}': {}", path, std::strerror(errno)),
                       "state_dir");
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char buf[32] = {};
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (error == EWOULDBLOCK) {
      const std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
      return FailedPrecondition(
          fmt::format("state directory '{}' is in use by another gpuscale serve (pid {}); "
                      "stop it, or give this daemon its own --state-dir",
                      dir, pid.substr(0, pid.find('\n'))),
          "state_dir");
    }
    return Unavailable(fmt::format("cannot lock '{}': {}", path, std::strerror(error)),
                       "state_dir");
  }
  // The PID is only for the message above; a failed write does not weaken the lock.
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
  return StateDirLock(fd);
}

StateDirLock& StateDirLock::operator=(StateDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

StateDirLock::~StateDirLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace gpuscale::daemon
