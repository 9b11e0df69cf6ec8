#include "util/cache_trust.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "util/text.hpp"

namespace envfix::util {

namespace {

std::mutex g_mutex;
std::map<fs::path, fs::path> g_opened; // dir asked for -> dir used (this run)
std::vector<fs::path> g_private;       // private temporary caches, removed at exit
std::vector<int> g_locks;              // shared cache locks, held until exit
std::set<std::string> g_warned;        // entries already warned about

void warn_line(const std::string& text) {
  const std::string line = "warning: " + escape_control(text, true, false) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

} // namespace

void cache_notice(const std::string& text) {
  const std::string line = "note: " + escape_control(text, true, false) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

namespace {

void remove_private() {
  std::error_code ec;
  for (const auto& p : g_private) fs::remove_all(p, ec);
}

std::optional<std::string> judge(const struct stat& st) {
  if (st.st_uid != ::geteuid()) return fmt::format("it is owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid());
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("it is writable by group or others (mode {:04o})", st.st_mode & 07777);
  return std::nullopt;
}

constexpr std::string_view cachedir_tag = "Signature: 8a477f597d28d172789f06886806bc55\n"
                                          "# This file is a cache directory tag created by envfix.\n"
                                          "# For information about cache directory tags, see https://bford.info/cachedir/\n";

void write_markers(const fs::path& dir) {
  (void)write_file_atomic(dir / cachedir_tag_name, cachedir_tag);
  (void)write_file_atomic(dir / cache_marker_name, "envfix cache\n");
}

// The first top-level entry of `dir` that is not the running user's alone, with why.
std::optional<std::string> untrusted_entry(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st = {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (auto why = judge(st)) return fmt::format("its entry {}: {}", it->path().filename().string(), *why);
  }
  return std::nullopt;
}

Expected<fs::path> private_cache(const fs::path& dir, const std::string& why) {
  auto tmp = make_temp_dir({}, "envfix-private-cache");
  if (!tmp) return std::unexpected(tmp.error());
  if (g_private.empty()) std::atexit(remove_private);
  g_private.push_back(*tmp);
  warn_line(fmt::format("the cache directory {} is not used for this run: {}; a private temporary cache is used "
                        "instead (give it to this user alone: chown -R and chmod go-w, or pass another --cache-dir)",
                        dir.string(), why));
  return *tmp;
}

void hold_shared_lock(const fs::path& dir) {
  int fd = ::open((dir / cache_lock_name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return; // a read-only cache still serves; clean then finds no holder
  if (retry_eintr([&] { return ::flock(fd, LOCK_SH); }) != 0) {
    ::close(fd);
    return;
  }
  g_locks.push_back(fd);
}

} // namespace

std::optional<std::string> untrusted_because(const fs::path& dir) {
  struct stat st = {};
  if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  return judge(st);
}

Expected<fs::path> open_cache(const fs::path& dir, bool create) {
  std::lock_guard lock(g_mutex);
  if (auto it = g_opened.find(dir); it != g_opened.end()) return it->second;
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  if (!existed) {
    if (!create) return dir; // nothing to trust or distrust: every read misses
    if (auto made = util::create_directories(dir); !made) return std::unexpected(made.error());
    write_markers(dir);
  }
  auto why = untrusted_because(dir);
  if (!why) why = untrusted_entry(dir);
  fs::path used = dir;
  if (why)
    used = ENVFIX_TRY(private_cache(dir, *why));
  else
    hold_shared_lock(dir);
  g_opened.emplace(dir, used);
  return used;
}

bool is_envfix_cache(const fs::path& dir) {
  struct stat st = {};
  return ::lstat((dir / cache_marker_name).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::optional<std::string> read_trusted(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    std::lock_guard lock(g_mutex);
    if (errno == ELOOP && g_warned.insert(file.string()).second)
      warn_line(fmt::format("cache entry {} is a symlink: ignored", file.string()));
    return std::nullopt;
  }
  struct stat st = {};
  if (::fstat(fd.get(), &st) != 0) return std::nullopt;
  auto why = S_ISREG(st.st_mode) ? judge(st) : std::optional<std::string>("it is not a regular file");
  if (why) {
    std::lock_guard lock(g_mutex);
    if (g_warned.insert(file.string()).second) warn_line(fmt::format("cache entry {} is ignored: {}", file.string(), *why));
    return std::nullopt;
  }
  auto out = read_fd(fd, file);
  if (!out) return std::nullopt;
  return std::move(*out);
}

} // namespace envfix::util
