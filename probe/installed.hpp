#pragma once
// Installed distributions (PEP 376/627 dist-info folders): pure parsers plus the folder reader.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "probe/host_facts.hpp"
#include "wheel/record.hpp"

namespace envfix::probe {

// "torch-2.7.0+cu128.dist-info" → {"torch", "2.7.0+cu128"}; the version is split at the first
// '-' (names in dist-info folders have '-' escaped to '_').
struct DistInfoName {
  std::string name;
  std::string version;
};
[[nodiscard]] Expected<DistInfoName> parse_dist_info_dirname(std::string_view dirname);

// Read one dist-info folder: METADATA (Name, Version, Requires-Dist; the folder name when METADATA
// is missing or broken), INSTALLER, REQUESTED, direct_url.json, RECORD presence. Requires-Dist lines
// that do not parse are skipped; `notes` (if given) gets one line for each.
[[nodiscard]] Expected<InstalledDist> read_dist_info(const std::filesystem::path& dir,
                                                     std::vector<util::Message>* notes = nullptr);

// Every *.dist-info directly under `site_dir`, sorted by normalized name then version.
[[nodiscard]] std::vector<InstalledDist> scan_site_directory(const std::filesystem::path& site_dir,
                                                             std::vector<util::Message>* notes = nullptr);

// Groups of dists sharing one normalized name (only groups with two or more members).
[[nodiscard]] std::vector<std::vector<const InstalledDist*>> find_duplicates(const std::vector<InstalledDist>& dists);

// The normalized names of `roots` and of every installed dist their Requires-Dist reaches,
// transitively. Markers and extras are not evaluated: callers want everything a build may have
// brought in (a framework's own CUDA libraries), so a superset is the safe side.
[[nodiscard]] std::set<std::string> requirement_closure(const std::vector<InstalledDist>& dists,
                                                        const std::vector<std::string>& roots);

// A shared object a dist installed, with its RECORD row.
struct InstalledObject {
  std::filesystem::path path; // resolved against the site directory
  wheel::RecordEntry record;  // path as RECORD gives it, hash, size
};
// Shared objects a dist installed: RECORD paths ending in ".so" or containing ".so." that exist,
// resolved against the site directory (dist_info's parent), sorted by path. Empty without a RECORD.
[[nodiscard]] Expected<std::vector<InstalledObject>> installed_shared_objects(const InstalledDist& dist);
// The platform tags of the wheel it was installed from (WHEEL's `Tag:` lines), e.g.
// {"manylinux_2_28_x86_64"}; empty when WHEEL is missing.
[[nodiscard]] std::vector<std::string> installed_platform_tags(const InstalledDist& dist);

// The URL in direct_url.json ("url" key), or "" when absent or unreadable.
[[nodiscard]] std::string direct_url_of(const InstalledDist& dist);

} // namespace envfix::probe
