#pragma once
// envfix cache dir|size|clean: the index cache (downloads, pages, metadata, interpreter probes).
// cli/command_cache.cpp renders what these return.
#include <cstdint>
#include <filesystem>

#include "api/options.hpp"
#include "util/error.hpp"

namespace envfix::api {

struct CacheUsage {
  std::filesystem::path dir;
  std::uint64_t bytes = 0, files = 0;
};

// --cache-dir, else $ENVFIX_CACHE_DIR, $XDG_CACHE_HOME/envfix or ~/.cache/envfix (index/index_client.hpp).
[[nodiscard]] Expected<std::filesystem::path> cache_dir(const Options& o);
// The regular files under the cache (symlinks not followed); zero for a cache not made yet.
[[nodiscard]] Expected<CacheUsage> cache_usage(const Options& o);
// Empties the cache under its lock (index::clean_cache: a directory that is not an envfix cache, or
// one a run holds, is refused); what was removed.
[[nodiscard]] Expected<CacheUsage> clean_cache(const Options& o);

} // namespace envfix::api
