#pragma once
// Every Python interpreter envfix starts (the probe, the install-scheme query, `-m venv`, the smoke
// test, doctor's repro) runs through run_python: with -I (no PYTHON* variables, no user site, no
// script or current directory on sys.path) and from a fresh empty directory, so that a json.py or
// venv.py in the caller's directory never runs (docs/reliability.md, "Python files in the cwd"); and
// with -B: a probe writes no byte-code into the user's environment (a .pth hook such as setuptools'
// distutils-precedence.pth imports a module at every start; -I ignores PYTHONDONTWRITEBYTECODE).
#include <filesystem>
#include <string>
#include <vector>

#include "util/error.hpp"
#include "util/subprocess.hpp"

namespace envfix::util {

// Runs `python -I -B args...` with `options` (its cwd is replaced by an empty temporary directory,
// removed afterwards). A relative `python` with a '/' is made absolute first, since the child's
// working directory is not the caller's. Arguments that are paths must be absolute for the same reason.
[[nodiscard]] Expected<SubprocessResult> run_python(const std::filesystem::path& python, const std::vector<std::string>& args,
                                                    SubprocessOptions options = {});

} // namespace envfix::util
