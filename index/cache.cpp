#include "index/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "util/cache_trust.hpp"

namespace envfix::index {

namespace fs = std::filesystem;

Expected<PartFile> create_part(const fs::path& tmp_dir, std::string_view random_name) {
  ENVFIX_TRY_VOID(util::create_directories(tmp_dir));
  PartFile p{tmp_dir / (std::string(random_name) + ".part"), {}};
  const fs::path fresh = tmp_dir / (std::string(random_name) + ".part.new");
  p.lock = util::Fd(::open(fresh.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!p.lock.valid()) return fail_errno(errno, ErrorCode::io, "cannot create {}: {}", fresh.string(), std::strerror(errno));
  std::error_code ec;
  if (::flock(p.lock.get(), LOCK_EX | LOCK_NB) != 0 || (fs::rename(fresh, p.path, ec), ec)) {
    int err = ec ? ec.value() : errno;
    fs::remove(fresh, ec);
    return fail_errno(err, ErrorCode::io, "cannot lock the partial download {}: {}", fresh.string(), std::strerror(err));
  }
  return p;
}

std::size_t remove_dead_parts(const fs::path& tmp_dir) {
  std::size_t removed = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(tmp_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    std::error_code rec;
    if (name.ends_with(".part.new")) {
      // A writer killed between create and rename; a live one renames within microseconds.
      auto t = fs::last_write_time(p, rec);
      if (!rec && now - t > std::chrono::hours(1) && fs::remove(p, rec)) ++removed;
      continue;
    }
    if (!name.ends_with(".part")) continue;
    util::Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd.valid()) continue;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue; // a live download
    // Still the file we locked (not a new one renamed over it meanwhile): then it is dead.
    struct stat a = {}, b = {};
    if (::fstat(fd.get(), &a) == 0 && ::lstat(p.c_str(), &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev &&
        fs::remove(p, rec))
      ++removed;
  }
  return removed;
}

namespace {

CleanResult usage(const fs::path& dir) {
  CleanResult u;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_symlink(fec) || !it->is_regular_file(fec)) continue;
    u.bytes += it->file_size(fec);
    ++u.files;
  }
  return u;
}

} // namespace

Expected<CleanResult> clean_cache(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return CleanResult{};
  if (!util::is_envfix_cache(dir))
    return make_error(
        ErrorCode::invalid_input,
        util::msg("{} is not an envfix cache (it has no {} marker): nothing was removed", dir.string(), util::cache_marker_name),
        util::msg("check --cache-dir / ENVFIX_CACHE_DIR; `envfix cache dir` prints the cache envfix uses"));
  if (auto why = util::untrusted_because(dir))
    return make_error(ErrorCode::invalid_input, util::msg("{} is not this user's cache: {}", dir.string(), *why),
                      util::msg("clean it as its owner"));
  const fs::path lock_path = dir / util::cache_lock_name;
  util::Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock.valid())
    return fail_errno(errno, ErrorCode::io, "cannot open the cache lock {}: {}", lock_path.string(), std::strerror(errno));
  if (util::retry_eintr([&] { return ::flock(lock.get(), LOCK_EX | LOCK_NB); }) != 0)
    return make_error(ErrorCode::io, util::msg("the cache {} is in use by another envfix run: nothing was removed", dir.string()),
                      util::msg("run `envfix cache clean` again once it has finished"));
  CleanResult u = usage(dir);
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto name = e.path().filename().string();
    if (name == util::cache_lock_name || name == util::cache_marker_name || name == util::cachedir_tag_name) continue;
    fs::remove_all(e.path(), ec);
    if (ec) return fail(ErrorCode::io, "removing {}: {}", e.path().string(), ec.message());
  }
  if (ec) return fail(ErrorCode::io, "{}: {}", dir.string(), ec.message());
  return u;
}

} // namespace envfix::index
