#!/usr/bin/env bash
# Every C++ file of the repository is laid out as .clang-format says, by clang-format-19 (one
# version: another formats some constructs differently). Exit 1 naming each file that differs;
# `--fix` rewrites them instead. Fixtures under tests/fixtures/ are data, not code, and are left out.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cf=${CLANG_FORMAT:-clang-format-19}
command -v "$cf" >/dev/null || { echo "check-format: $cf not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.h' | grep -v '^tests/fixtures/')
if [[ ${1:-} == --fix ]]; then
  "$cf" -i "${files[@]}"
  echo "check-format: ${#files[@]} files formatted"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} file(s) differ from .clang-format ($cf; scripts/check-format.sh --fix rewrites them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files match .clang-format ($cf)"
