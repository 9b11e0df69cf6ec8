#pragma once
// Uninstalling through RECORD (PEP 376/627, the recording installed packages spec:
// https://packaging.python.org/en/latest/specifications/recording-installed-packages/): which files
// and directories a distribution owns. Planning only reads; Transaction moves the planned files into
// its backup, uninstall() deletes.
#include <filesystem>
#include <string>
#include <vector>

#include "installer/install_target.hpp"
#include "util/error.hpp"

namespace envfix::installer {

struct UninstallPlan {
  std::string name; // METADATA Name (or from the folder name)
  std::string version;
  std::filesystem::path dist_info;
  std::vector<std::string> files;            // existing files/symlinks to remove: absolute, normal, sorted
  std::vector<std::filesystem::path> dirs;   // directories left empty, deepest first
  std::vector<std::filesystem::path> shared; // kept: another installed distribution owns them
  std::vector<util::Message> warnings;       // RECORD rows refused (outside the scheme) etc.
};

struct UninstallOptions {
  // Other dist-infos removed in the same operation: their files do not count as "shared".
  std::vector<std::filesystem::path> also_removing;
};

// Dist-infos in purelib/platlib, sorted.
[[nodiscard]] Expected<std::vector<std::filesystem::path>> list_dist_infos(const InstallTarget& target);
// The installed dist-infos whose normalized project name is `name`.
[[nodiscard]] Expected<std::vector<std::filesystem::path>> find_dist_infos(const InstallTarget& target, std::string_view name);

// PEP 376/627: RECORD rows (resolved against the folder holding .dist-info and confined to the
// scheme and prefix), their __pycache__ files, launchers from entry_points.txt, then the
// directories that end up empty (stopping at the scheme roots). A dist-info without RECORD is an
// error with a hint, as in pip.
[[nodiscard]] Expected<UninstallPlan> plan_uninstall(const std::filesystem::path& dist_info, const InstallTarget& target,
                                                     const UninstallOptions& options = {});

// Directories among the ancestors of `removed` (below `roots`) that hold nothing once `removed` is
// gone; deepest first. `keep` names paths that will exist afterwards (new installs). `removed` and
// `keep` are absolute and lexically normal (as plan_uninstall and FileMove::to give them).
[[nodiscard]] std::vector<std::filesystem::path> dirs_left_empty(const std::vector<std::string>& removed,
                                                                 const std::vector<std::filesystem::path>& roots,
                                                                 const std::vector<std::string>& keep = {});

// Deletes what plan_uninstall() lists (no backup; Transaction is the reversible form).
[[nodiscard]] Expected<UninstallPlan> uninstall(const std::filesystem::path& dist_info, const InstallTarget& target);

} // namespace envfix::installer
