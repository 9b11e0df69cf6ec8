#include "util/cache_trust.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <openssl/rand.h>

#include "util/env.hpp"
#include "util/text.hpp"

namespace envfix::util {

namespace {

std::mutex g_mutex;
std::map<fs::path, fs::path> g_opened; // dir asked for -> dir used (this run)
std::vector<fs::path> g_private;       // private temporary caches, removed at exit
std::vector<int> g_locks;              // shared cache locks, held until exit
std::set<std::string> g_warned;        // entries already warned about
std::vector<fs::path> g_sealed;        // caches in use that no other user can enter (no group/other x bit)

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

// `sealed`: inside a directory no other user can enter, so that their write bits reach no one (a cache
// made under `umask 000`, issue 60, 7).
std::optional<std::string> judge(const struct stat& st, bool sealed = false) {
  if (st.st_uid != ::geteuid()) return fmt::format("it is owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid());
  if (!sealed && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("it is writable by group or others (mode {:04o})", st.st_mode & 07777);
  return std::nullopt;
}

bool is_sealed(const struct stat& st) { return st.st_uid == ::geteuid() && (st.st_mode & (S_IXGRP | S_IXOTH)) == 0; }

// Absolute, normal, without a trailing separator ("x/." and "x/" are "x"): comparable by components.
fs::path normal(const fs::path& p) {
  std::error_code ec;
  auto n = fs::absolute(p, ec).lexically_normal();
  return n.has_filename() ? n : n.parent_path();
}

// Under a cache this run uses that no one else can enter (g_mutex held).
bool under_sealed(const fs::path& file) {
  return std::any_of(g_sealed.begin(), g_sealed.end(), [&](const fs::path& root) { return is_within(file, root); });
}

constexpr std::string_view cachedir_tag = "Signature: 8a477f597d28d172789f06886806bc55\n"
                                          "# This file is a cache directory tag created by envfix.\n"
                                          "# For information about cache directory tags, see https://bford.info/cachedir/\n";

void write_markers(const fs::path& dir) {
  (void)write_file_atomic(dir / cachedir_tag_name, cachedir_tag);
  (void)write_file_atomic(dir / cache_marker_name, "envfix cache\n");
}

// The first top-level entry of `dir` that is not the running user's alone, with why. A symlink is
// judged twice: the link (its owner; a link's own mode is always 0777) and what it points to.
std::optional<std::string> untrusted_entry(const fs::path& dir, bool sealed) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st = {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    const auto name = it->path().filename().string();
    if (S_ISLNK(st.st_mode)) {
      if (auto why = judge(st, true)) return fmt::format("its entry {} (a symlink): {}", name, *why);
      struct stat target = {};
      if (::stat(it->path().c_str(), &target) != 0) continue; // dangling: nothing to read through it
      std::error_code link_ec;                                // the iterator's own code stays the iterator's
      if (auto why = judge(target))
        return fmt::format("its entry {} points to {}: {}", name, fs::read_symlink(it->path(), link_ec).string(), *why);
      continue;
    }
    if (auto why = judge(st, sealed)) return fmt::format("its entry {}: {}", name, *why);
  }
  return std::nullopt;
}

// A private cache's owner mark: an flock the run that made it holds while it lives. A run that died
// before its exit handler removed the cache (SIGKILL, a signal outside an interrupt scope) leaves the
// mark unlocked, and the next private_cache() removes that leftover (issue 60, 7): gigabytes in
// $TMPDIR do not pile up. A directory without a mark is left alone (it may be one being made).
constexpr const char* kPrivatePrefix = "envfix-private-cache";
constexpr const char* kOwnerMark = ".envfix-private-owner";

void sweep_private(const fs::path& base) {
  std::error_code ec;
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with(kPrivatePrefix)) continue;
    struct stat st = {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    Fd mark(::open((it->path() / kOwnerMark).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!mark.valid() || ::flock(mark.get(), LOCK_EX | LOCK_NB) != 0) continue; // no mark, or its run lives
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
}

Expected<fs::path> private_cache(const fs::path& dir, const std::string& why) {
  std::error_code ec;
  auto base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  sweep_private(base);
  auto tmp = make_temp_dir(base, kPrivatePrefix);
  if (!tmp) return std::unexpected(tmp.error());
  const int mark = ::open((*tmp / kOwnerMark).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (mark >= 0 && ::flock(mark, LOCK_EX) == 0)
    g_locks.push_back(mark); // held until exit, like the shared locks
  else if (mark >= 0)
    ::close(mark);
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
    // This user's alone whatever the umask (issue 60, 7: under `umask 000` a cache came out 0777 and
    // every later run distrusted it); what it holds inherits that.
    ::chmod(dir.c_str(), 0700);
    write_markers(dir);
  }
  struct stat st = {};
  const bool sealed = ::stat(dir.c_str(), &st) == 0 && is_sealed(st);
  auto why = untrusted_because(dir);
  if (!why) why = untrusted_entry(dir, sealed);
  fs::path used = dir;
  if (why)
    used = ENVFIX_TRY(private_cache(dir, *why));
  else {
    hold_shared_lock(dir);
    if (sealed) g_sealed.push_back(normal(dir));
  }
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
  {
    std::lock_guard lock(g_mutex);
    const bool sealed = under_sealed(normal(file));
    auto why = S_ISREG(st.st_mode) ? judge(st, sealed) : std::optional<std::string>("it is not a regular file");
    if (why) {
      if (g_warned.insert(file.string()).second) warn_line(fmt::format("cache entry {} is ignored: {}", file.string(), *why));
      return std::nullopt;
    }
  }
  auto out = read_fd(fd, file);
  if (!out) return std::nullopt;
  return std::move(*out);
}

namespace {

fs::path secret_path() {
  if (auto s = get_env(Env::xdg_state_home); s && fs::path(*s).is_absolute()) return fs::path(*s) / "envfix" / "evidence-key";
  if (auto h = get_env(Env::home); h && fs::path(*h).is_absolute()) return fs::path(*h) / ".local/state/envfix/evidence-key";
  return {};
}

constexpr std::size_t kSecretBytes = 32;

// The key file's bytes, when it is a regular file (not a symlink) of this user that no one else can
// read or write, and whole.
std::optional<std::string> read_secret(const fs::path& p) {
  Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st = {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0 ||
      st.st_size != static_cast<off_t>(kSecretBytes))
    return std::nullopt;
  auto bytes = read_fd(fd, p);
  if (!bytes || bytes->size() != kSecretBytes) return std::nullopt;
  return std::move(*bytes);
}

// 32 random bytes in a new 0600 file (O_EXCL: of two runs that race, the first one's key stands).
void create_secret(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::string bytes(kSecretBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(bytes.size())) != 1) return;
  Fd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return;
  if (::write(fd.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())) (void)::fsync(fd.get());
}

} // namespace

std::string local_secret() {
  static std::once_flag once;
  static std::string secret;
  std::call_once(once, [] {
    if (auto k = get_env(Env::evidence_key); k && !k->empty()) {
      secret = "ENVFIX_EVIDENCE_KEY\n" + *k;
      return;
    }
    const auto p = secret_path();
    if (p.empty()) return;
    if (!fs::exists(fs::symlink_status(p))) create_secret(p);
    if (auto s = read_secret(p)) secret = std::move(*s);
  });
  return secret;
}

} // namespace envfix::util
