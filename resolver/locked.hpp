#pragma once
// apply --locked's changes to the environment (api/apply.cpp sequences them): what goes, by the normal
// plan's rule (resolver/plan.hpp) over the locked set, and the checks a resolved plan gets.
#include <filesystem>
#include <string>
#include <vector>

#include "resolver/installed.hpp"
#include "resolver/resolver.hpp"
#include "specs/marker.hpp"
#include "util/error.hpp"

namespace envfix::resolver {

struct LockedChanges {
  std::vector<std::filesystem::path> removals; // dist-info directories of what goes besides the locked names
  std::vector<util::Message> warnings;
};

// Every locked package (`locked`: pins by normalized name) replaces its installed namesake inside the
// transaction. What else goes is a plain apply's: framework packages (`family`) the lock lacks, stray
// duplicates and the old variant's unused nvidia-* runtime wheels. The changes get a resolved plan's
// checks: conda's packages are refused unless allow_conda_overwrite, and pip check of the after-state
// (a lock made elsewhere may break a neighbour) unless allow_breaking.
[[nodiscard]] Expected<LockedChanges> locked_changes(const std::vector<InstalledPackage>& installed, std::vector<Pin> locked,
                                                     const std::vector<std::string>& family, const specs::MarkerEnvironment& env,
                                                     bool allow_conda_overwrite, bool allow_breaking);

} // namespace envfix::resolver
