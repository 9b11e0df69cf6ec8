#!/usr/bin/env bash
# The module include direction (docs/architecture.md, Modules): a file in module M may include
# headers of M and of the modules M links (its DEPS in M/CMakeLists.txt, transitively; for cli/, the
# libraries the envfix executable links). Every module's headers are reachable through the one
# include root, so CMake alone does not stop an upward #include; this does. Exit 1 naming each
# offending file:line.
#
# cli/ is held to more (docs/architecture.md, Decisions): it parses, calls api/ and renders, so it
# includes api/, cli/, util/ and i18n/, the value vocabulary of specs/ (names, versions, archs), and
# the value headers listed in CLI_VALUES, never a domain module's workings. CLI_DEBT names the
# includes that still break that rule, each with the move that ends it; a new one fails here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python3 - "$@" <<'PY'
import pathlib, re, sys

root = pathlib.Path(".")
modules = [p.parent.name for p in sorted(root.glob("*/CMakeLists.txt")) if p.parent.name not in ("tests", "fuzz")]
deps = {}
for m in modules:
    text = (root / m / "CMakeLists.txt").read_text()
    if m == "cli":
        match = re.search(r"target_link_libraries\(envfix\s+PRIVATE(.*?)\)", text, re.S)
    else:
        match = re.search(r"DEPS(.*?)(?:LIBS|\))", text, re.S)
    deps[m] = set(re.findall(r"envfix_(\w+)", match.group(1))) if match else set()

def closure(m, seen=None):
    seen = set() if seen is None else seen
    for d in deps.get(m, ()):
        if d not in seen:
            seen.add(d)
            closure(d, seen)
    return seen

include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')
bad = []
for m in modules:
    allowed = closure(m) | {m}
    for f in sorted((root / m).rglob("*")):
        if f.suffix not in (".hpp", ".cpp", ".h") or not f.is_file():
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            hit = include.match(line)
            if hit and hit.group(1) in modules and hit.group(1) not in allowed:
                bad.append(f"{f}:{n}: {m}/ includes {hit.group(1)}/ (allowed: {', '.join(sorted(allowed))})")
CLI_ALLOWED = {"api", "cli", "util", "i18n", "specs"}
CLI_VALUES = {
    "resolver/plan.hpp",      # the Plan and its removals (pure data)
    "resolver/rejection.hpp", # typed rejection reasons
    "index/candidate.hpp",    # one index file (pure data)
    "diagnosis/finding.hpp",  # finding codes, severities, verdicts (enums)
    "diagnosis/report.hpp",   # doctor's report (pure data)
    "diagnosis/cuda_error.hpp", # what a CUDA error line means (an enum)
    "installer/txn_result.hpp", # what a committed transaction did (pure data)
}
CLI_DEBT = {  # (file, header): the api/ call that will replace it
}
debt_seen = set()
full = re.compile(r'^\s*#\s*include\s+"(([a-z_]+)/[^"]+)"')
for f in sorted((root / "cli").rglob("*")):
    if f.suffix not in (".hpp", ".cpp", ".h") or not f.is_file():
        continue
    rel = f.as_posix()
    for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
        hit = full.match(line)
        if not hit or hit.group(2) not in modules or hit.group(2) in CLI_ALLOWED or hit.group(1) in CLI_VALUES:
            continue
        if (rel, hit.group(1)) in CLI_DEBT:
            debt_seen.add((rel, hit.group(1)))
            continue
        bad.append(f"{f}:{n}: cli/ includes {hit.group(1)}, a domain module's workings: call api/ instead "
                   f"(cli includes api, cli, util, i18n, specs and the value headers {', '.join(sorted(CLI_VALUES))})")
for f, h in sorted(set(CLI_DEBT) - debt_seen):
    bad.append(f"{f}: no longer includes {h}: remove it from CLI_DEBT in scripts/check-includes.sh")
if bad:
    print("check-includes: upward or sideways includes (docs/architecture.md, Modules):", file=sys.stderr)
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print(f"check-includes: {len(modules)} modules, every include points down the module graph; "
      f"cli/ includes only api, cli, util, i18n, specs and value headers ({len(CLI_DEBT)} known exceptions left)")
PY
