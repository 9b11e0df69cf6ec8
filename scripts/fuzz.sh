#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-19, ASan+UBSan) and runs each for a bounded time.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 15 s, all targets)
# New inputs go to a scratch copy of fuzz/corpus/<name>; crashes are saved under build/fuzz/crashes/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
secs=${1:-15}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  for src in fuzz/fuzz_*.cpp; do targets+=("$(basename "${src%.cpp}")"); done
fi
cmake --preset fuzz >/dev/null
# Only the fuzz targets (and the modules they link), not the CLI or the installer.
cmake --build --preset fuzz --target "${targets[@]}"
mkdir -p build/fuzz/crashes
# One target per core (ENVFIX_FUZZ_JOBS): each run is bounded by time, not by work.
run_one() {
  local t=$1 name=${1#fuzz_} scratch log
  scratch=$(mktemp -d)
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$scratch/"
  log=build/fuzz/$t.log
  if ASAN_OPTIONS=detect_leaks=1 "build/fuzz/fuzz/$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix=build/fuzz/crashes/"$t"- "$scratch" >"$log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || echo '?')
    echo "fuzz: $t ok ($runs executions in ${secs}s)"
    rm -rf "$scratch"
  else
    echo "fuzz: $t FAILED, see $log"; tail -30 "$log"
    rm -rf "$scratch"
    return 1
  fi
}
export -f run_one
export secs
jobs=${ENVFIX_FUZZ_JOBS:-$(nproc)}
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {}
