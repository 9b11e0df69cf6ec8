#pragma once
// Which interpreter the user means, found as uv finds it (docs/environment.md, The target
// interpreter): a --python that is a path, a command or a version request; an active venv or conda
// env; a project's .venv in the working directory or a parent; python3 on PATH. A shim (pyenv, asdf,
// mise: a script standing where an interpreter is expected) is resolved in the user's working
// directory, where its .python-version/.tool-versions and PYENV_VERSION decide, not in a temporary one.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::probe {

// A --python value that asks for a version: "3.12", "3.12.1", "cpython@3.12", "cpython3.12",
// "python3.12" (uv's spellings). One to three numbers, the first 3.
struct VersionRequest {
  std::vector<int> release;
  [[nodiscard]] bool matches(const std::vector<int>& version) const; // a prefix of it
  [[nodiscard]] std::string to_string() const;
};
[[nodiscard]] std::optional<VersionRequest> parse_version_request(std::string_view text);

// "3.12.1" from pyenv's "3.12.1" or uv's "cpython-3.12.1-linux-x86_64-gnu"; nullopt for anything else
// (pypy3.10-7.3.17, miniconda3-latest, 3.13.0t).
[[nodiscard]] std::optional<std::vector<int>> cpython_dir_version(std::string_view dir_name);

struct FoundInterpreter {
  std::filesystem::path path;
  std::string how; // how it was found, for the output ("pyenv 3.12.1", ".venv in /w/proj", …)
};

// The interpreters that satisfy a version request, in this order: python3.X on PATH (a shim resolved
// in `cwd`), pyenv's versions ($PYENV_ROOT, default ~/.pyenv), uv's managed ones
// ($UV_PYTHON_INSTALL_DIR, default $XDG_DATA_HOME/uv/python); the newest release first within each.
// not_found naming where it looked.
[[nodiscard]] Expected<FoundInterpreter> find_python_version(const VersionRequest& request, const std::filesystem::path& cwd);

// Whether `path` is a version manager's shim: a script ("#!…") in a folder named `shims` (pyenv's
// $PYENV_ROOT/shims, asdf's ~/.asdf/shims, mise's …/mise/shims). Another wrapper script given as the
// interpreter is run as it is.
[[nodiscard]] bool is_shim(const std::filesystem::path& path);

// The interpreter a shim runs in `cwd`: the shim run there in isolated mode (-I -S: neither the
// directory nor site-packages are on sys.path, so nothing of the directory runs), asked for
// sys.executable. An error when it names none (pyenv: "version `3.10` is not installed").
[[nodiscard]] Expected<std::filesystem::path> resolve_shim(const std::filesystem::path& shim, const std::filesystem::path& cwd);

// The project's environment as uv finds it: `.venv` (holding pyvenv.cfg) in `cwd` or the nearest
// parent that has one.
[[nodiscard]] std::optional<std::filesystem::path> project_venv(const std::filesystem::path& cwd);

} // namespace envfix::probe
