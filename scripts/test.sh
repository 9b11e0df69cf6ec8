#!/usr/bin/env bash
# Builds envfix with tests (-Werror) and runs the whole suite through ctest.
# Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/install-deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci
# Four at a time on CI's 2 cores: most tests wait on subprocesses (pip, nginx, python), so two at a
# time left the cores idle half the time (docs/development.md, CI time); the timing-sensitive ones
# are RUN_SERIAL (tests/reliability/CMakeLists.txt).
ctest --preset ci --timeout 600 -j "${ENVFIX_TEST_JOBS:-4}" "$@"
