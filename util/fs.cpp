#include "util/fs.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace envfix::util {

namespace {
std::unexpected<Error> errno_error(std::string_view what, const fs::path& p, int err) {
  return with_errno(make_error(ErrorCode::io, util::msg("{} {}: {}", what, p.string(), std::strerror(err))), err);
}
} // namespace

int write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = retry_eintr([&] { return ::write(fd, data.data(), data.size()); });
    if (n < 0) return errno;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

unsigned current_umask() {
  auto status = read_file("/proc/self/status");
  if (!status) return 022;
  auto at = status->find("\nUmask:");
  if (at == std::string::npos) return 022;
  unsigned mask = 0;
  bool any = false;
  for (std::size_t i = at + 7; i < status->size() && (*status)[i] != '\n'; ++i) {
    char c = (*status)[i];
    if (c >= '0' && c <= '7') {
      mask = mask * 8 + static_cast<unsigned>(c - '0');
      any = true;
    } else if (any || (c != ' ' && c != '\t')) {
      break;
    }
  }
  return any ? (mask & 0777) : 022;
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = o.release();
  }
  return *this;
}
Fd::~Fd() {
  if (m_fd >= 0) ::close(m_fd);
}

Expected<std::string> read_fd(const Fd& fd, const fs::path& path, std::uint64_t max_bytes) {
  std::string out;
  char buf[65536];
  while (out.size() <= max_bytes) {
    ssize_t n = retry_eintr([&] { return ::read(fd.get(), buf, sizeof buf); });
    if (n < 0) return errno_error("cannot read", path, errno);
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

Expected<std::string> read_file(const fs::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno_error("cannot open", path, errno);
  return read_fd(fd, path);
}

Expected<Fd> open_local_file(const fs::path& path, std::uint64_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return errno_error("cannot open", path, errno);
  struct stat st = {};
  if (::fstat(fd.get(), &st) != 0) return errno_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a plain file";
    return make_error(ErrorCode::invalid_input, util::msg("refusing to read {}: not a regular file ({})", path.string(), what),
                      util::msg("a local file: URL or find-links entry must name a wheel file"));
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return make_error(ErrorCode::invalid_input,
                      util::msg("refusing to read {}: it is larger than the {} bytes expected of it ({} bytes)", path.string(),
                                max_bytes, st.st_size),
                      util::msg("the lockfile or page that names it gives another size: regenerate it, or replace the file"));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) return errno_error("cannot use", path, errno);
  return fd;
}

Expected<void> fsync_path(const fs::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno_error("cannot open", path, errno);
  if (::fsync(fd.get()) != 0 && errno != EINVAL) return errno_error("cannot fsync", path, errno);
  return {};
}

Expected<void> write_file_atomic(const fs::path& path, std::string_view content, unsigned mode) {
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  int raw = ::mkstemp(tmpl.data());
  if (raw < 0) return errno_error("cannot create temporary file in", dir, errno);
  Fd fd(raw);
  auto cleanup = [&] { ::unlink(tmpl.c_str()); };
  if (int e = write_all(fd.get(), content); e != 0) {
    cleanup();
    return errno_error("cannot write", path, e);
  }
  if (::fchmod(fd.get(), mode) != 0 || ::fsync(fd.get()) != 0) {
    int e = errno;
    cleanup();
    return errno_error("cannot sync", path, e);
  }
  fd = Fd();
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    int e = errno;
    cleanup();
    return errno_error("cannot rename into", path, e);
  }
  return fsync_path(dir);
}

Expected<void> create_directories(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec)
    return with_errno(make_error(ErrorCode::io, util::msg("cannot create directory {}: {}", path.string(), ec.message())),
                      ec.value());
  return {};
}

bool is_within(const fs::path& path, const fs::path& root) {
  return std::mismatch(root.begin(), root.end(), path.begin(), path.end()).first == root.end();
}

bool exists_nofollow(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string resolve_parent(std::string_view path) {
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return p;
  std::string dir = slash == 0 ? "/" : p.substr(0, slash);
  std::string rest = p.substr(slash); // "/name"
  // Walk up to an ancestor that exists (an install creates its parents later).
  for (;;) {
    char buf[PATH_MAX];
    if (::realpath(dir.c_str(), buf)) {
      std::string r(buf);
      return (r == "/" ? "" : r) + rest;
    }
    auto s = dir.rfind('/');
    if (s == std::string::npos || dir == "/") return p;
    rest = dir.substr(s) + rest;
    dir = s == 0 ? "/" : dir.substr(0, s);
  }
}

const ParentResolver::Dir& ParentResolver::dir(const std::string& path) {
  if (auto it = m_dirs.find(path); it != m_dirs.end()) return it->second;
  Dir d;
  const auto slash = path.rfind('/');
  const std::string_view name = slash == std::string::npos ? std::string_view(path) : std::string_view(path).substr(slash + 1);
  if (slash == std::string::npos || slash == 0 || name.empty() || name == "." || name == "..") {
    // A top-level directory or a path that is not plain: the walk of resolve_parent.
    auto r = resolve_parent(path + "/x");
    d.resolved = r.substr(0, r.size() - 2);
    struct stat st;
    d.exists = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  } else {
    const Dir parent = dir(path.substr(0, slash)); // a copy: the map may rehash below
    d.resolved = parent.resolved + "/" + std::string(name);
    struct stat st;
    if (parent.exists && ::lstat(d.resolved.c_str(), &st) == 0) {
      if (S_ISLNK(st.st_mode)) {
        char buf[PATH_MAX];
        if (::realpath(d.resolved.c_str(), buf)) {
          d.resolved = buf;
          d.exists = ::stat(buf, &st) == 0 && S_ISDIR(st.st_mode);
        } // a dangling link: judged as itself under its parent, like resolve_parent
      } else {
        d.exists = S_ISDIR(st.st_mode);
      }
    }
  }
  return m_dirs.emplace(path, std::move(d)).first->second;
}

std::string ParentResolver::operator()(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return resolve_parent(path);
  const auto& d = dir(std::string(path.substr(0, slash)));
  return (d.resolved == "/" ? "" : d.resolved) + std::string(path.substr(slash));
}

int copy_file_exclusive(const fs::path& src, const fs::path& dest, unsigned mode) {
  util::Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return errno;
  util::Fd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!out.valid()) return errno;
  auto fail_with = [&](int err) {
    ::unlink(dest.c_str());
    return err;
  };
  bool use_range = true;
  char buf[1 << 16];
  for (;;) {
    if (use_range) {
      auto n = ::copy_file_range(in.get(), nullptr, out.get(), nullptr, 1 << 30, 0);
      if (n > 0) continue;
      if (n == 0) break;
      if (errno == EINTR) continue;
      if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) return fail_with(errno);
      use_range = false; // older kernels / some filesystem pairs: plain read/write
    }
    auto n = retry_eintr([&] { return ::read(in.get(), buf, sizeof buf); });
    if (n < 0) return fail_with(errno);
    if (n == 0) break;
    if (int e = write_all(out.get(), std::string_view(buf, static_cast<std::size_t>(n))); e != 0) return fail_with(e);
  }
  ::fchmod(out.get(), static_cast<mode_t>(mode));
  return 0;
}

Expected<fs::path> make_temp_dir(const fs::path& parent, std::string_view prefix) {
  std::error_code ec;
  fs::path base = parent.empty() ? fs::temp_directory_path(ec) : parent;
  if (ec) base = "/tmp";
  std::string tmpl = (base / (std::string(prefix) + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) return errno_error("cannot create temporary directory in", base, errno);
  return fs::path(tmpl);
}

Expected<MappedFile> MappedFile::open(const fs::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno_error("cannot open", path, errno);
  struct stat st = {};
  if (::fstat(fd.get(), &st) != 0) return errno_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorCode::invalid_input, util::msg("{} is not a regular file", path.string()));
  MappedFile m;
  m.m_size = static_cast<std::size_t>(st.st_size);
  if (m.m_size == 0) return m;
  void* p = ::mmap(nullptr, m.m_size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p == MAP_FAILED) return errno_error("cannot map", path, errno);
  m.m_data = static_cast<const std::uint8_t*>(p);
  return m;
}

void MappedFile::drop(std::size_t offset, std::size_t length) const {
  if (!m_data || offset >= m_size) return;
  length = std::min(length, m_size - offset);
  static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<std::uintptr_t>(m_data);
  std::uintptr_t begin = (base + offset + page - 1) & ~(page - 1);
  std::uintptr_t end = base + offset + length;
  // The mapping's last page is wholly ours (the tail past the file's end is zero fill).
  end = offset + length == m_size ? (end + page - 1) & ~(page - 1) : end & ~(page - 1);
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : m_data(o.m_data), m_size(o.m_size) {
  o.m_data = nullptr;
  o.m_size = 0;
}
MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (m_data) ::munmap(const_cast<std::uint8_t*>(m_data), m_size);
    m_data = o.m_data;
    m_size = o.m_size;
    o.m_data = nullptr;
    o.m_size = 0;
  }
  return *this;
}
MappedFile::~MappedFile() {
  if (m_data) ::munmap(const_cast<std::uint8_t*>(m_data), m_size);
}

} // namespace envfix::util
