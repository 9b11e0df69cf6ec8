#pragma once
// Spreading a staged wheel into an install scheme (PEP 427, binary distribution format spec
// "Installing a wheel"; the files written at install time: PEP 376/627 recording installed packages,
// PEP 610 direct_url.json). Planning writes every generated file (rewritten #!python scripts,
// entry-point launchers, INSTALLER, REQUESTED, direct_url.json, RECORD) next to the staging tree, so
// installing is nothing but renames.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "installer/install_target.hpp"
#include "util/error.hpp"
#include "wheel/staging.hpp"

namespace envfix::installer {

// Plain strings, not std::filesystem::path: a plan holds one move per file of the wheel (12,000
// for torch), and a path keeps a list of its components besides the text.
struct FileMove {
  std::string from; // staged file
  std::string to;   // final absolute path, lexically normal
};

struct InstallOptions {
  std::string installer = "envfix";      // INSTALLER content
  bool requested = true;                 // write REQUESTED
  std::optional<std::string> direct_url; // direct_url.json content, only for direct URL installs (PEP 610)
};

struct WheelInstallPlan {
  std::string name; // METADATA Name
  std::string version;
  std::filesystem::path dist_info; // final .dist-info path
  std::vector<FileMove> moves;     // payload, then launchers, then metadata, RECORD last (no RECORD = broken)
  std::vector<util::Message> warnings;
};

// A console/GUI entry point (entry_points.txt, the entry points spec).
struct EntryPoint {
  std::string name, module, attr; // "demo", "demo_pkg.cli", "main"
  bool gui = false;
};
[[nodiscard]] Expected<std::vector<EntryPoint>> parse_entry_points(std::string_view text, std::string_view name_for_errors);
// "#!<python>\n", or the /bin/sh trampoline when the line would pass 127 bytes or has a space (as pip's launchers do).
[[nodiscard]] std::string shebang_for(const std::filesystem::path& python);
// pip's launcher text for an entry point.
[[nodiscard]] std::string launcher_script(const EntryPoint& ep, const std::filesystem::path& python);

// Writes the generated files into `<staged.tree>.gen/` and returns the moves. Touches nothing in
// the target.
[[nodiscard]] Expected<WheelInstallPlan> plan_wheel_install(const wheel::StagedWheel& staged, const InstallTarget& target,
                                                            const InstallOptions& options = {});

// Installs without a transaction: plans, then renames every file into place (creating parent
// directories, replacing existing files). For the journaled, reversible form use Transaction.
[[nodiscard]] Expected<WheelInstallPlan> install_wheel(const wheel::StagedWheel& staged, const InstallTarget& target,
                                                       const InstallOptions& options = {});

} // namespace envfix::installer
