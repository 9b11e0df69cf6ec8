#pragma once
// The interpreter probe (sysconfig install scheme and paths, marker variables of PEP 508, tag inputs
// of PEP 425, the PEP 668 marker): one run of the target Python with an embedded script that prints
// one JSON document; parse_python_probe turns that into PythonInfo.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/host_facts.hpp"

namespace envfix::probe {

// The script run as `python -c <script>`; works on CPython/PyPy 3.6+.
[[nodiscard]] std::string_view python_probe_script();

// Parses the script's JSON output (also the captured tests/fixtures/gpu-h200/python-probe.json).
// Fields beyond the sysconfig paths, markers and tag inputs (externally_managed, site_paths, conda)
// are optional.
[[nodiscard]] Expected<PythonInfo> parse_python_probe(std::string_view json_text);

// Why a probe result (a cached entry, read back) does not describe the interpreter `python`: its
// sys.executable resolves elsewhere, its prefix is not the venv `python` belongs to, or an install
// path (purelib, platlib, scripts, data) lies outside its prefix. nullopt when consistent.
[[nodiscard]] std::optional<std::string> inconsistent_probe(const PythonInfo& info, const std::filesystem::path& python);

// "glibc 2.39" → {2, 39}; nullopt for anything else (musl, empty).
[[nodiscard]] std::optional<std::pair<int, int>> parse_glibc(std::string_view text);

// Directories that may hold *.dist-info for this interpreter: purelib, platlib and the site
// directories on its sys.path, deduplicated, existing ones only, in that order.
[[nodiscard]] std::vector<std::filesystem::path> site_directories(const PythonInfo& python);

// The interpreter named by a script's shebang: "#!/v/bin/python3" or pip's long-path form
// "#!/bin/sh\n'''exec' "/v/bin/python" "$0" "$@"". nullopt when there is none.
[[nodiscard]] std::optional<std::filesystem::path> parse_shebang_interpreter(std::string_view script_head);

} // namespace envfix::probe
