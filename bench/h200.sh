#!/usr/bin/env bash
# The GPU machine's benchmark runs, in pieces that fit one device call (10 minutes) each. Each piece
# writes its own results JSON under OUT (a cut call keeps the pieces already done); the report is
# rebuilt here with `bench/run.py --report-only --merge …` (or, for `real`, bench/real_set.py).
#
# The real torch set, envfix against uv, in ONE call (about 7 minutes; bench/real_set.md, "One call"):
#   carry: build/release/envfix-0.1.0-linux-x86_64.tar.gz   (cmake --preset release &&
#          cmake --build --preset release --target package)
#   command: bench/h200.sh real "$OUT"
#   then here: python3 bench/real_set.py --report-only OUT/results-real.json \
#     --before bench/results/real/results-real-h200-8.json --notes bench/real_set.md --report docs/performance-real.md
#   It runs cold (3 rounds), warm with uv also under the old harness's environment (uv-legacy), resolve
#   cold/warm (5 rounds), then each printed command alone under /usr/bin/time; log in OUT/log-real.txt.
#
# The verified apply, doctor and verify on the real set (issue 35 item 5), in ONE call (about 6 minutes):
#   carry: the same bundle; command: bench/h200.sh verified "$OUT"
#   It runs the `checked` (warm apply with the kernel gate and the smoke test on the GPU) and `doctor`
#   workloads, 3 rounds each, then `envfix verify` (repro + model) and `envfix doctor --format json`
#   on the machine's own torch environment, each timed with /usr/bin/time (OUT/verified-*.txt).
#
# Usage (repository root on the GPU machine, the bundle and pip 23.2.1 carried along):
#   bench/h200.sh PIECE OUT [ROUNDS]
#   PIECE: real    the real torch set (above): envfix, uv; BUNDLE=path overrides the bundle
#          mem     envfix alone, cold/warm/replace at scales 1, 0.5, 0.25, 0.1 (peak memory by size)
#          s1cold  scale 1, cold install: envfix, uv, pip 23.2.1, floor
#          s1warm  scale 1, warm reinstall: envfix, uv, pip 23.2.1, floor
#          s1repl  scale 1, replace: envfix, uv, pip 23.2.1, floor
set -euo pipefail
piece=${1:?usage: bench/h200.sh PIECE OUT [ROUNDS]} out=${2:?OUT} rounds=${3:-3}
mkdir -p "$out"
if [ "$piece" = real ]; then
  # Earlier calls' work directories of these benchmarks, if the machine kept them: the disk is 64 GiB.
  rm -rf /tmp/real-set /tmp/rs /tmp/rs2 /tmp/rs3 /tmp/rs4 /tmp/bw
  bundle=${BUNDLE:-build/release/envfix-0.1.0-linux-x86_64.tar.gz}
  # The harness stops starting rounds at 480 s and saves after each; timeout is the last guard.
  timeout 540 python3 bench/real_set.py --bundle "$bundle" --plan h200 --work /tmp/real-set \
    --deadline-s 480 --results "$out/results-real.json" 2> >(tee "$out/log-real.txt" >&2)
  exit
fi
if [ "$piece" = verified ]; then
  rm -rf /tmp/real-set /tmp/rs /tmp/rs2 /tmp/rs3 /tmp/rs4 /tmp/bw /tmp/vf
  bundle=${BUNDLE:-build/release/envfix-0.1.0-linux-x86_64.tar.gz}
  mkdir -p /tmp/vf && tar -xzf "$bundle" -C /tmp/vf
  E=$(ls -d /tmp/vf/envfix-*/bin/envfix)
  py=/opt/torch/.venv/bin/python
  for i in 1 2 3; do  # the machine's own environment, as a user runs them
    /usr/bin/time -f "wall %e s" "$E" verify --python "$py" --format json >"$out/verified-verify-$i.json" 2>"$out/verified-verify-$i.txt" || true
    /usr/bin/time -f "wall %e s" "$E" doctor --python "$py" --format json >"$out/verified-doctor-$i.json" 2>"$out/verified-doctor-$i.txt" || true
  done
  timeout 400 python3 bench/real_set.py --bundle "$bundle" --work /tmp/real-set --workloads checked,doctor \
    --rounds 3 --checked-rounds 3 --alone 1 --deadline-s 330 --results "$out/results-verified.json" \
    2> >(tee "$out/log-verified.txt" >&2)
  exit
fi
mkdir -p /tmp/e
[ -x /tmp/e/envfix-0.1.0-linux-x86_64/bin/envfix ] || tar -xzf .device/envfix-bundle.tar.gz -C /tmp/e
E=/tmp/e/envfix-0.1.0-linux-x86_64/bin/envfix
PIP=$PWD/.device/pip-23.2.1/pip
common=(--envfix "$E" --pip-dir "$PIP" --server python --work /tmp/bw)
label="H200 machine (16 cores)"
case $piece in
mem)    for s in 0.1 0.25 0.5 1; do  # one results file per scale: a cut call keeps the smaller ones
          python3 bench/run.py "${common[@]}" --scale $s --rounds 1 --tools envfix --workloads cold,warm,replace \
            --label "$label, memory at scale $s" --report "$out/mem-$s.md" --results "$out/results-mem-$s.json"
        done ;;
s1cold) python3 bench/run.py "${common[@]}" --scale 1 --rounds "$rounds" --tools envfix,uv,pip,floor \
          --workloads cold --label "$label, scale 1 cold" --report "$out/s1cold.md" --results "$out/results-s1cold.json" ;;
s1warm) python3 bench/run.py "${common[@]}" --scale 1 --rounds "$rounds" --tools envfix,uv,pip,floor \
          --workloads warm --label "$label, scale 1 warm" --report "$out/s1warm.md" --results "$out/results-s1warm.json" ;;
s1repl) python3 bench/run.py "${common[@]}" --scale 1 --rounds "$rounds" --tools envfix,uv,pip,floor \
          --workloads replace --label "$label, scale 1 replace" --report "$out/s1repl.md" --results "$out/results-s1repl.json" ;;
*) echo "unknown piece $piece" >&2; exit 2 ;;
esac
