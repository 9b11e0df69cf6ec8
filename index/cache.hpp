#pragma once
// What the index owns in its cache directory beyond pages and wheels (index/index_client.cpp): the
// partial downloads of <cache>/tmp, and `envfix cache clean`. The trust rules for the directory itself
// are util/cache_trust.hpp.
#include <cstdint>
#include <filesystem>

#include "util/error.hpp"
#include "util/fs.hpp"

namespace envfix::index {

// A new partial download in `tmp_dir`, named <random>.part and held under an exclusive flock for as
// long as the returned descriptor lives: the next run tells a live writer's file from a dead one's by
// that lock. The file becomes visible as .part only once locked (created under another name, renamed).
struct PartFile {
  std::filesystem::path path;
  util::Fd lock;
};
[[nodiscard]] Expected<PartFile> create_part(const std::filesystem::path& tmp_dir, std::string_view random_name);

// Removes every .part in `tmp_dir` whose flock can be taken (its writer is dead: killed mid-download),
// and the creation leftovers (.part.new) older than an hour. Returns how many were removed.
std::size_t remove_dead_parts(const std::filesystem::path& tmp_dir);

struct CleanResult {
  std::uint64_t bytes = 0, files = 0;
};
// `envfix cache clean`: empties `dir`, keeping its markers and lock, only when it is an envfix cache
// (util::is_envfix_cache) and no run holds it (its lock taken exclusive without waiting).
[[nodiscard]] Expected<CleanResult> clean_cache(const std::filesystem::path& dir);

} // namespace envfix::index
