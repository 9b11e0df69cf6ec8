#!/usr/bin/env bash
# Fails when a tracked file reaches outside the clone: the team's folder beside the repository, or
# the team's documents by name. A clone alone must build, test and explain itself (tests/fixtures/README.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pattern='(\.\./shared|/work/shared|shared/(fixtures|reference)|team'"'"'s shared|\bdesign\.md|\bpackaging\.md|\bfatbin\.md|matrices-facts|facts-2026-12|existing-tools\.md)'
if hits=$(git grep -n -I -E "$pattern" -- . ':!scripts/check-standalone.sh'); then
  echo "check-standalone: these tracked files reference material outside the repository:" >&2
  echo "$hits" | cut -c1-200 >&2
  exit 1
fi
echo "check-standalone: no tracked file references anything outside the clone"
