#pragma once
// apply --locked's files (api/apply.cpp sequences them into fetch::prepare): each package of the
// chosen lock target as an index candidate, served by a --find-links copy where one holds the file,
// or from another mirror than the one the lock was made against. Each file is still checked against
// its locked sha256, so where it comes from cannot change what is installed.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "fetch/fetch.hpp"
#include "index/candidate.hpp"
#include "lockfile/lockfile.hpp"
#include "resolver/resolver.hpp"

namespace envfix::fetch {

// In the target's package order; a package's URL becomes file:// when a --find-links folder holds its file.
[[nodiscard]] std::vector<index::Candidate> locked_candidates(const lockfile::LockTarget& target,
                                                              const std::vector<std::string>& find_links);

// apply --locked --mirror: files under `from` (the mirror the lock's framework index was made from)
// move to `to`; a --find-links copy stays. `kept`: the others, fetched from where the lock names them.
// What apply says of each, never silent: `note` when any moved, `warning` when any were kept.
struct Repointed {
  std::size_t moved = 0, kept = 0;
  util::Message note, warning;
};
[[nodiscard]] Repointed repoint(std::vector<index::Candidate>& cands, std::string_view from, std::string_view to);

// The locked files to fetch (`cands` in the target's package order), each requested when the lock's
// recorded request names it.
[[nodiscard]] std::vector<WantedWheel> locked_wanted(const lockfile::LockFile& lock, const lockfile::LockTarget& target,
                                                     const std::vector<index::Candidate>& cands);
// The same as pins by normalized name (resolver/locked.hpp); a package whose version is not PEP 440 is left out.
[[nodiscard]] std::vector<resolver::Pin> locked_pins(const lockfile::LockTarget& target,
                                                     const std::vector<index::Candidate>& cands);

} // namespace envfix::fetch
