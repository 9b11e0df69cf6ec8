#!/usr/bin/env bash
# The module include direction (docs/architecture.md, Modules): a file in module M may include
# headers of M and of the modules M links (its DEPS in M/CMakeLists.txt, transitively; for cli/, the
# libraries the envfix executable links). Every module's headers are reachable through the one
# include root, so CMake alone does not stop an upward #include; this does. Exit 1 naming each
# offending file:line.
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
if bad:
    print("check-includes: upward or sideways includes (docs/architecture.md, Modules):", file=sys.stderr)
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print(f"check-includes: {len(modules)} modules, every include points down the module graph")
PY
