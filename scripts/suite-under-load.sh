#!/usr/bin/env bash
# Runs the README's test command (scripts/test.sh) N times in a row, each from a fresh clone of this
# repository's HEAD, while another CPU-heavy job keeps every core busy: a clean parallel build of
# the project (preset dev, ccache off) in another folder, started again each time it finishes. It
# shows that no test's verdict depends on the machine's speed (docs/development.md, Tests under load).
#
#   scripts/suite-under-load.sh [N]      N runs (default 3), loaded
#   LOAD=none scripts/suite-under-load.sh 1   the same run on an idle machine
#   SUITE_CCACHE=1 ...                   the runs' own builds through ccache (the first run fills it,
#                                        so later runs spend their time in the tests, not the build)
#
# Prints each run's wall time, exit code and ctest summary, and the SIGKILL test's per-phase kill
# counts; logs stay in the work folder it names. Exit 0 only when every run passed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${1:-3}
load=${LOAD:-build}
work=$(mktemp -d /tmp/envfix-under-load-XXXXXX)
# Every run tests the commit that was HEAD when the script started, whatever is committed meanwhile.
rev=$(git -C "$root" rev-parse HEAD)
echo "suite-under-load: $runs run(s) of scripts/test.sh from clones of ${rev:0:7}; load: $load; logs in $work"

load_pid=
if [[ $load == build ]]; then
  git clone -q "$root" "$work/load"
  # Its own session, so that one kill ends the whole build (cmake, ninja, the compilers).
  setsid bash -c 'cd "$1"; export CCACHE_DISABLE=1
    while :; do rm -rf build/dev; cmake --preset dev >/dev/null 2>&1 && cmake --build --preset dev -j "$(nproc)" >/dev/null 2>&1; done' \
    _ "$work/load" &
  load_pid=$!
  trap 'kill -- -$load_pid 2>/dev/null' EXIT
  sleep 20 # let the load reach its steady state before the first run starts
fi

if [[ ${SUITE_CCACHE:-0} == 1 ]] && command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
fi

failed=0
for ((i = 1; i <= runs; i++)); do
  rm -rf "$work/clone"
  git clone -q "$root" "$work/clone" && git -C "$work/clone" checkout -q "$rev"
  start=$(date +%s)
  (cd "$work/clone" && ./scripts/test.sh) >"$work/run-$i.log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  load_now=$(cut -d' ' -f1-3 /proc/loadavg)
  summary=$(grep -E "tests passed|tests failed" "$work/run-$i.log" | tail -1)
  echo "run $i: exit $rc in $((secs / 60)) min $((secs % 60)) s (load average $load_now): $summary"
  grep -E "MESSAGE: (at points|at random moments): " "$work/clone/build/ci/Testing/Temporary/LastTest.log" 2>/dev/null |
    sed 's/.*MESSAGE: /  crash test, /'
  cp "$work/clone/build/ci/Testing/Temporary/LastTest.log" "$work/run-$i.LastTest.log" 2>/dev/null
  ((rc == 0)) || failed=1
done
exit $failed
