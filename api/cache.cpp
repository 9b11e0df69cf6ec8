#include "api/cache.hpp"

#include "index/cache.hpp"
#include "index/index_client.hpp"

namespace envfix::api {

namespace fs = std::filesystem;

Expected<fs::path> cache_dir(const Options& o) {
  if (!o.cache_dir.empty()) return fs::path(o.cache_dir);
  return index::default_cache_dir();
}

Expected<CacheUsage> cache_usage(const Options& o) {
  CacheUsage u{ENVFIX_TRY(cache_dir(o))};
  std::error_code ec;
  if (!fs::exists(u.dir, ec)) return u;
  fs::recursive_directory_iterator it(u.dir, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) return fail(ErrorCode::io, "{}: {}", u.dir.string(), ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return fail(ErrorCode::io, "{}: {}", u.dir.string(), ec.message());
    if (it->is_symlink(ec)) continue;
    if (it->is_regular_file(ec)) {
      u.bytes += it->file_size(ec);
      ++u.files;
    }
  }
  return u;
}

Expected<CacheUsage> clean_cache(const Options& o) {
  CacheUsage u{ENVFIX_TRY(cache_dir(o))};
  const auto removed = ENVFIX_TRY(index::clean_cache(u.dir));
  u.bytes = removed.bytes;
  u.files = removed.files;
  return u;
}

} // namespace envfix::api
