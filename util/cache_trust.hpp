#pragma once
// The cache is a trust boundary (docs/reliability.md §6): what it holds decides what is installed and
// run, so a run uses a cache directory only when it and what it reads back belong to the running user
// and no one else can write them, as pip does with a cache owned by another user. Every place that
// opens a cache directory (index/index_client.cpp, api/host.cpp, api/doctor.cpp, api/matrix.cpp)
// goes through open_cache; every entry read back goes through read_trusted.
#include <filesystem>
#include <optional>
#include <string>

#include "util/error.hpp"
#include "util/fs.hpp"

namespace envfix::util {

// The marker files envfix writes into a cache it creates: the standard cache directory tag
// (https://bford.info/cachedir/) and envfix's own, which `cache clean` requires before it deletes.
inline constexpr const char* cachedir_tag_name = "CACHEDIR.TAG";
inline constexpr const char* cache_marker_name = ".envfix-cache";
// The cache lock: every run holds it shared while it uses the cache; `cache clean` takes it exclusive.
inline constexpr const char* cache_lock_name = ".lock";

// Why `dir` may not be trusted ("owned by uid 65534", "writable by group or others"), or nullopt
// when it is the running user's alone. Follows a symlink to judge what it points to.
[[nodiscard]] std::optional<std::string> untrusted_because(const fs::path& dir);

// The directory this run uses as its cache: `dir` (created with its markers when missing and
// `create`), with its lock held shared until the process ends; or, when `dir` or one of its top-level
// entries belongs to another user or is writable by group/others, a private temporary cache
// (mkdtemp, removed at exit), after ONE warning on stderr naming `dir` and why. The same `dir` gives
// the same answer for the whole run. An error only when `dir` cannot be created at all.
[[nodiscard]] Expected<fs::path> open_cache(const fs::path& dir, bool create = true);

// Does `dir` hold envfix's marker (a cache envfix created)?
[[nodiscard]] bool is_envfix_cache(const fs::path& dir);

// The content of a cache entry, when it is a regular file (not a symlink) owned by the running user
// and not writable by group/others; otherwise nullopt, with one warning naming it (a missing file
// is nullopt without a word).
[[nodiscard]] std::optional<std::string> read_trusted(const fs::path& file);

// A secret of this user on this machine, kept outside every cache: what binds a cache record to a run
// of this user here, so that a record planted in the cache, or restored from another machine's cache,
// decides nothing (wheel/kernel_evidence.hpp). ENVFIX_EVIDENCE_KEY when set (a CI secret: a cache
// restored with the same secret stays trusted); else $XDG_STATE_HOME/envfix/evidence-key (default
// ~/.local/state/envfix/evidence-key), 32 random bytes created 0600 on first use, used only when it is
// a regular file of this user that no one else can read or write. "" when there is none.
[[nodiscard]] std::string local_secret();

// One line on stderr about the cache's own housekeeping ("note: …"), as the trust warnings above
// are told: the commands' output (stdout, JSON) stays as it is.
void cache_notice(const std::string& text);

} // namespace envfix::util
