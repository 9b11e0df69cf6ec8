#pragma once
// File helpers that return Expected and never throw (std::filesystem is used with error_code).
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>

#include "util/error.hpp"

namespace envfix::util {

namespace fs = std::filesystem;

// Calls `call` again while it fails with EINTR (a signal arrived mid-call): for read, write, open,
// poll, waitpid and the like, which return a negative value and set errno on failure.
template <class F>
auto retry_eintr(F&& call) -> decltype(call()) {
  decltype(call()) r;
  do r = call();
  while (r < 0 && errno == EINTR);
  return r;
}

// Writes all of `data` to `fd` (short writes and EINTR retried). 0, or the errno of the failing write.
[[nodiscard]] int write_all(int fd, std::string_view data);

// The process's umask, read from /proc/self/status so that it is never changed (umask(2) can only
// be read by setting it, which races with other threads creating files); 022 where unreadable.
[[nodiscard]] unsigned current_umask();

[[nodiscard]] Expected<std::string> read_file(const fs::path& path);
// Write to a temp file in the same directory, fsync, rename over `path`, fsync the directory:
// readers see the old or the new content, never a torn file.
[[nodiscard]] Expected<void> write_file_atomic(const fs::path& path, std::string_view content, unsigned mode = 0644);
[[nodiscard]] Expected<void> create_directories(const fs::path& path);
[[nodiscard]] Expected<void> fsync_path(const fs::path& path);
// Copies the bytes of `src` into the new file `dest` (O_EXCL) with `mode`: copy_file_range where
// the kernel can, read/write where it cannot. Returns 0 or the errno of the failing call; `dest`
// does not exist after a failure.
[[nodiscard]] int copy_file_exclusive(const fs::path& src, const fs::path& dest, unsigned mode);
// `path` is `root` or lies under it, compared component by component as written (both normal, or
// spelled alike): "/a/bc" is not under "/a/b".
[[nodiscard]] bool is_within(const fs::path& path, const fs::path& root);
// lstat() succeeds: the path exists, a dangling symlink included. Takes a plain string because the
// installer keeps its per-file paths as strings.
[[nodiscard]] bool exists_nofollow(const std::string& path);
// `path` (absolute) with its parent resolved: realpath() of the nearest existing ancestor of the
// parent, then the rest as written. The last component is not followed, so a symlink is judged
// as itself (what unlink would remove) but a symlinked directory above it is seen through.
[[nodiscard]] std::string resolve_parent(std::string_view path);
// resolve_parent with the resolved directories remembered, for plans of 12,000 files. Each
// directory is resolved from its parent's answer: one lstat() per directory that exists, a
// realpath() only for a symlink, nothing for one under a missing directory (a fresh install's
// 1,400 new directories cost 11,000 readlink calls with a realpath() each). Not thread-safe.
class ParentResolver {
public:
  [[nodiscard]] std::string operator()(std::string_view path);

private:
  struct Dir {
    std::string resolved;
    bool exists = false;
  };
  const Dir& dir(const std::string& path);
  std::unordered_map<std::string, Dir> m_dirs;
};
// A fresh, empty directory under `parent` (or the system temp dir) named prefix-XXXXXX.
[[nodiscard]] Expected<fs::path> make_temp_dir(const fs::path& parent, std::string_view prefix);

// RAII owner of a POSIX file descriptor.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : m_fd(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : m_fd(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd();
  [[nodiscard]] int get() const { return m_fd; }
  [[nodiscard]] bool valid() const { return m_fd >= 0; }
  int release() {
    int f = m_fd;
    m_fd = -1;
    return f;
  }

private:
  int m_fd = -1;
};

// The rest of an open descriptor's bytes (`path` names it in errors). Stops once more than
// `max_bytes` were read: a result longer than that says the file was larger, and the caller says so.
[[nodiscard]] Expected<std::string> read_fd(const Fd& fd, const fs::path& path,
                                            std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// A local file envfix was told to read (a lockfile's or a page's file: URL, a find-links wheel):
// opened with O_NONBLOCK, so that a FIFO does not wait for a writer in open(), and refused unless
// fstat says it is a regular file (not a FIFO, a device such as /dev/zero or a directory; a symlink
// is judged by what it names) of at most `max_bytes` bytes. The descriptor is blocking again when
// returned. Errors name the path and say what it is.
[[nodiscard]] Expected<Fd> open_local_file(const fs::path& path, std::uint64_t max_bytes);

// Read-only memory map of a whole file (empty files map to an empty span).
// Touched pages count in the process's resident set until unmapped or dropped: readers of large
// files drop what they have finished with (drop) so that their peak stays flat.
class MappedFile {
public:
  [[nodiscard]] static Expected<MappedFile> open(const fs::path& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  ~MappedFile();
  [[nodiscard]] const std::uint8_t* data() const { return m_data; }
  [[nodiscard]] std::size_t size() const { return m_size; }
  [[nodiscard]] std::string_view view() const { return {reinterpret_cast<const char*>(m_data), m_size}; }
  // Releases the resident pages wholly inside [offset, offset + length) (clamped to the file):
  // madvise(MADV_DONTNEED) on the page-aligned interior. The bytes stay readable and unchanged,
  // since this is a read-only file mapping: a later read faults them in again from the file.
  void drop(std::size_t offset, std::size_t length) const;

private:
  MappedFile() = default;
  const std::uint8_t* m_data = nullptr;
  std::size_t m_size = 0;
};

} // namespace envfix::util
