#pragma once
// Where a wheel's files go (PEP 427, binary distribution format spec "Installing a wheel": purelib
// or platlib, `.data/` subdirectories to their scheme paths): the interpreter's install scheme, plus
// what the installer needs around it (the interpreter for shebangs, the prefix that holds .envfix/,
// PEP 668).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::probe {
struct PythonInfo;
}

namespace envfix::installer {

struct InstallTarget {
  std::filesystem::path prefix; // sys.prefix: .envfix/ (lock, journal, backups) lives here
  std::filesystem::path purelib;
  std::filesystem::path platlib;
  std::filesystem::path scripts;
  std::filesystem::path data;
  // Base directory for headers; a wheel's headers go to headers/<Name> (in a venv pip uses
  // {prefix}/include/site/pythonX.Y, because sysconfig's include points at the base interpreter).
  std::filesystem::path headers;
  std::filesystem::path python; // written into shebangs (not resolved: venv/bin/python)
  bool is_venv = false;
  bool externally_managed = false; // PEP 668 marker found (only meaningful outside a venv)
  std::string externally_managed_message;

  // Runs the interpreter once and reads sysconfig (default scheme) and the PEP 668 marker.
  [[nodiscard]] static Expected<InstallTarget> from_interpreter(const std::filesystem::path& python);
  // From what probe/ already knows (no process started).
  [[nodiscard]] static InstallTarget from_python_info(const probe::PythonInfo& info);
  // For a venv layout without asking Python: prefix/lib/pythonX.Y/site-packages, prefix/bin, ….
  [[nodiscard]] static InstallTarget for_venv_layout(const std::filesystem::path& prefix, int major, int minor);

  // headers/<dist name>, where pip puts a wheel's .data/headers.
  [[nodiscard]] std::filesystem::path headers_for(std::string_view dist_name) const;
  // The scheme directories (purelib, platlib, scripts, data, headers), absolute, deduplicated.
  [[nodiscard]] std::vector<std::filesystem::path> roots() const;
  // Where pruning empty directories stops: the scheme directories, except that in a venv the
  // headers base (include/site/pythonX.Y) may go again, up to prefix/include.
  [[nodiscard]] std::vector<std::filesystem::path> prune_stops() const;
  // prefix/.envfix
  [[nodiscard]] std::filesystem::path state_dir() const { return prefix / ".envfix"; }
  // True for an absolute, lexically normal path inside envfix's own state: <prefix>/.envfix/…
  // (lock, journals, backups) or any .envfix-txn-*/ directory (backups on another filesystem).
  // Both the path as written and with its parent resolved are checked. No wheel member and no
  // RECORD row may install or remove such a path (docs/reliability.md, security model).
  // `resolved` is util::resolve_parent(path) (callers with many paths use a util::ParentResolver).
  [[nodiscard]] bool is_envfix_state(std::string_view path, std::string_view resolved) const;
  // The interpreter itself, anything that resolves to the same file (venv/bin/python3 → /usr/bin/python3.11),
  // and <prefix>/pyvenv.cfg: never removed, whatever a RECORD says.
  [[nodiscard]] bool is_interpreter(std::string_view path) const;
  // Scheme directories that are one directory under two names (lib64 → lib on Fedora, RHEL,
  // openSUSE, where sys.platlibdir is "lib64") get the first one's name, so every file has one
  // spelling. Compares device and inode; run once when the target is built.
  void unify_aliases();
  // realpath of state_dir(), set by unify_aliases() (computed on use when empty).
  std::string resolved_state;
};

// PEP 668 (the marker counts outside a venv only): refuses an externally managed interpreter unless
// break_system_packages.
[[nodiscard]] Expected<void> check_externally_managed(const InstallTarget& target, bool break_system_packages);

// `--venv PATH`: creates a venv with `<base_python> -m venv PATH` (no pip unless with_pip) and
// returns the path of its interpreter. An existing venv at PATH is reused.
[[nodiscard]] Expected<std::filesystem::path> create_venv(const std::filesystem::path& dir,
                                                          const std::filesystem::path& base_python, bool with_pip = false);

} // namespace envfix::installer
