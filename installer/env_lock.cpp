#include "installer/env_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "util/fs.hpp"

namespace envfix::installer {

namespace fs = std::filesystem;

namespace {

struct Held {
  util::Fd fd; // the flock is released when the last holder closes it
  int count = 0;
};

std::mutex g_mutex;
std::map<std::string, Held>& held() {
  static std::map<std::string, Held> m;
  return m;
}

std::string holder_of(const fs::path& path) {
  auto text = util::read_file(path);
  if (!text) return {};
  auto line = text->substr(0, text->find('\n'));
  return line.find_first_not_of("0123456789") == std::string::npos ? line : std::string();
}

Error busy(const fs::path& prefix, const fs::path& path, const std::string& holder, bool waited) {
  const auto who = holder.empty() ? util::msg("another envfix process") : util::msg("another envfix process (pid {})", holder);
  return Error::made(
      ErrorCode::io,
      waited ? util::msg("{} is changing {} (lock {}), and did not finish in time", who, prefix.string(), path.string())
             : util::msg("{} is changing {} (lock {})", who, prefix.string(), path.string()),
      {}, util::msg("wait for it to finish and try again"));
}

// Takes the flock on `fd`, waiting (in steps, so the bound holds) when asked to.
Expected<void> lock_fd(int fd, const fs::path& prefix, const fs::path& path, const EnvLockOptions& o) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return {};
  if (errno != EWOULDBLOCK && errno != EINTR)
    return fail_errno(errno, ErrorCode::io, "cannot lock {}: {}", path.string(), std::strerror(errno));
  const std::string holder = holder_of(path);
  if (!o.wait) return std::unexpected(busy(prefix, path, holder, false));
  if (o.on_wait)
    o.on_wait(util::msg("waiting for the lock on {} held by pid {}", prefix.string(), holder.empty() ? "?" : holder));
  const auto end = std::chrono::steady_clock::now() + o.bound;
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return {};
    if (errno != EWOULDBLOCK && errno != EINTR)
      return fail_errno(errno, ErrorCode::io, "cannot lock {}: {}", path.string(), std::strerror(errno));
  }
  return std::unexpected(busy(prefix, path, holder_of(path), true));
}

} // namespace

Expected<EnvLock> EnvLock::acquire(const fs::path& prefix, const EnvLockOptions& o) {
  auto dir = prefix / ".envfix";
  ENVFIX_TRY_VOID(util::create_directories(dir));
  auto path = dir / "lock";
  util::Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) return fail_errno(errno, ErrorCode::io, "cannot open {}: {}", path.string(), std::strerror(errno));
  struct stat st = {};
  if (::fstat(fd.get(), &st) != 0)
    return fail_errno(errno, ErrorCode::io, "cannot stat {}: {}", path.string(), std::strerror(errno));
  EnvLock l;
  l.m_key = fmt::format("{}:{}", static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino));
  {
    std::lock_guard g(g_mutex);
    if (auto it = held().find(l.m_key); it != held().end()) { // this process holds it already
      ++it->second.count;
      return l;
    }
  }
  // Not under g_mutex: waiting for another process must not block this one's other holders.
  ENVFIX_TRY_VOID(lock_fd(fd.get(), prefix, path, o));
  auto pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) == 0) (void)!::pwrite(fd.get(), pid.data(), pid.size(), 0);
  std::lock_guard g(g_mutex);
  auto& h = held()[l.m_key];
  h.fd = std::move(fd);
  ++h.count;
  return l;
}

EnvLock::EnvLock(EnvLock&& other) noexcept : m_key(std::move(other.m_key)) { other.m_key.clear(); }

EnvLock& EnvLock::operator=(EnvLock&& other) noexcept {
  if (this != &other) {
    release();
    m_key = std::move(other.m_key);
    other.m_key.clear();
  }
  return *this;
}

EnvLock::~EnvLock() { release(); }

void EnvLock::release() {
  if (m_key.empty()) return;
  std::lock_guard g(g_mutex);
  if (auto it = held().find(m_key); it != held().end() && --it->second.count == 0) held().erase(it);
  m_key.clear();
}

std::optional<std::filesystem::path> lockable_prefix(const std::filesystem::path& python) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path prefix = fs::absolute(python, ec).lexically_normal().parent_path().parent_path();
  if (ec || !(fs::exists(prefix / "pyvenv.cfg", ec) || fs::is_directory(prefix / ".envfix", ec) ||
              fs::is_directory(prefix / "conda-meta", ec)))
    return std::nullopt;
  return prefix;
}

} // namespace envfix::installer
