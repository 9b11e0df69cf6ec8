#!/usr/bin/env bash
# The GPU machine's benchmark runs, in pieces that fit one device call (10 minutes) each. Each piece
# writes its own results JSON under OUT (a cut call keeps the pieces already done); the report is
# rebuilt here with `bench/run.py --report-only --merge …`.
# Usage (repository root on the GPU machine, the bundle and pip 23.2.1 carried along):
#   bench/h200.sh PIECE OUT [ROUNDS]
#   PIECE: mem     envfix alone, cold/warm/replace at scales 1, 0.5, 0.25, 0.1 (peak memory by size)
#          s1cold  scale 1, cold install: envfix, uv, pip 23.2.1, floor
#          s1warm  scale 1, warm reinstall: envfix, uv, pip 23.2.1, floor
#          s1repl  scale 1, replace: envfix, uv, pip 23.2.1, floor
set -euo pipefail
piece=${1:?usage: bench/h200.sh PIECE OUT [ROUNDS]} out=${2:?OUT} rounds=${3:-3}
mkdir -p "$out" /tmp/e
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
