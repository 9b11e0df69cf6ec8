#!/usr/bin/env bash
# Packs the libFuzzer targets (built by scripts/fuzz.sh: clang-19, ASan+UBSan) with the shared
# libraries they need and the seed corpora, for a long run on a bigger machine (the GPU machine has
# 16 cores and no clang). Usage: scripts/fuzz-bundle.sh OUT.tar.gz [BUILD_DIR]   (default build/fuzz;
# build/fuzz-fast = the `fuzz-fast` preset: the same targets without sanitizers, for throughput)
# On the other machine: tar -xzf OUT.tar.gz && fuzz-bundle/run.sh SECONDS WORKERS RESULT_DIR
# WORKERS is a number for every target, or per-target counts: "lockfile=8,matrices=6,*=1".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(realpath -m "${1:?usage: scripts/fuzz-bundle.sh OUT.tar.gz}")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b="$stage/fuzz-bundle"
mkdir -p "$b/bin" "$b/lib" "$b/corpus"
build=$(realpath -m "${2:-$root/build/fuzz}")
for t in "$build"/fuzz/fuzz_*; do
  [ -x "$t" ] || continue
  cp "$t" "$b/bin/"
  strip --strip-debug "$b/bin/$(basename "$t")"
  # Everything but the C runtime and libstdc++/libgcc (the other machine's newer ones serve).
  ldd "$t" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libstdc++.so*|libgcc_s.so*|ld-linux*) ;;
      *) cp -nL "$lib" "$b/lib/" ;;
    esac
  done
done
cp -r "$root/fuzz/corpus/." "$b/corpus/"
cat > "$b/run.sh" <<'RUN'
#!/usr/bin/env bash
# run.sh SECONDS WORKERS RESULT_DIR: every target at once, WORKERS processes each (libFuzzer -fork;
# "name=N,…,*=M" gives per-target counts), then one line per target with the executions summed over
# its workers.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=$1 workers=$2 res=$3
mkdir -p "$res"
export LD_LIBRARY_PATH="$here/lib"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
pids=()
 workers_for() { # target short name -> worker count
  local w=$workers default=1 kv
  [[ $w =~ ^[0-9]+$ ]] && { echo "$w"; return; }
  IFS=, read -ra kvs <<< "$w"
  for kv in "${kvs[@]}"; do
    [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return; }
    [ "${kv%%=*}" = "*" ] && default=${kv#*=}
  done
  echo "$default"
}
for t in "$here"/bin/fuzz_*; do
  n=$(basename "$t"); c="$here/corpus/${n#fuzz_}"; w=$(workers_for "${n#fuzz_}")
  [ "$w" = 0 ] && continue   # "name=0" leaves a target out
  mkdir -p "$c" "$res/$n"
  ( cd "$res/$n" && "$t" -fork="$w" -ignore_crashes=0 -max_total_time="$secs" -rss_limit_mb=2048 \
      -timeout=10 -print_final_stats=1 -artifact_prefix="$res/$n/" "$c" > "$res/$n/log.txt" 2>&1
    echo "exit=$?" >> "$res/$n/log.txt" ) &
  pids+=($!)
done
wait "${pids[@]}"
for t in "$here"/bin/fuzz_*; do
  n=$(basename "$t"); log="$res/$n/log.txt"
  [ -f "$log" ] || continue
  # -fork prints per-job "stat::number_of_executed_units" and a running "#N" total.
  execs=$(grep -Eo '^#[0-9]+' "$log" | tr -d '#' | sort -n | tail -1)
  crashes=$(ls "$res/$n" | grep -Ec '^(crash|leak|timeout|oom)-' || true)
  echo "$n executions=${execs:-?} crashes=$crashes $(tail -1 "$log")"
  # The inputs themselves, so that a crash found on a machine that is given back is not lost.
  for a in $(ls "$res/$n" | grep -E '^(crash|leak|timeout|oom)-' | head -3); do
    echo "  $a base64: $(base64 -w0 "$res/$n/$a" | head -c 20000)"
  done
done
RUN
chmod +x "$b/run.sh"
tar -czf "$out" -C "$stage" fuzz-bundle
echo "wrote $out ($(du -h "$out" | cut -f1))"
