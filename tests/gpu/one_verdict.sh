#!/usr/bin/env bash
# Issue 56 on the GPU machine's own environment (torch 2.11 cu130 with its NVIDIA libraries, jax
# 0.11.2 with its CUDA 13 plugin, in one venv): one coverage verdict whichever framework doctor is
# asked about. `doctor --framework jax` must not judge torch's arch-specialised NVIDIA libraries
# (nvidia-cusparselt-cu13, …) as third-party extensions, and says the same verdict as
# `doctor --framework torch`. The fix, when there is one, says what the planner made of it.
# Usage (repository root, on the GPU machine):
#   tests/gpu/one_verdict.sh ENVFIX_BIN [PYTHON] [OUTDIR]
set -u
BIN=${1:?usage: tests/gpu/one_verdict.sh ENVFIX_BIN [PYTHON] [OUTDIR]}
PY=${2:-/opt/torch/.venv/bin/python}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
fails=0
pass() { echo "PASS $*"; }
failm() { echo "FAIL $*"; fails=$((fails + 1)); }
jqp() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

command -v nvidia-smi >/dev/null || { echo "SKIP: no nvidia-smi: not a GPU machine"; exit 77; }
for fw in torch jax; do
  "$BIN" doctor --framework "$fw" --no-repro --format json --python "$PY" >"$out/doctor-$fw.json" 2>"$out/doctor-$fw.err"
  echo "doctor --framework $fw: $(jqp "$out/doctor-$fw.json" 'd["verdict"]') $(jqp "$out/doctor-$fw.json" '[f["code"] for f in d["findings"]]')"
done
# The extensions (GPU code outside every installed framework's set: cupy here) are the same whichever
# framework is asked about; none of torch's or jax's packages is one.
et=$(jqp "$out/doctor-torch.json" '" ".join(sorted(e["name"] for e in d["extensions"]))')
ej=$(jqp "$out/doctor-jax.json" '" ".join(sorted(e["name"] for e in d["extensions"]))')
[ "$et" = "$ej" ] && pass "the same extensions under --framework torch and jax: ${ej:-none}" \
  || failm "extensions differ: torch [$et], jax [$ej]"
vt=$(jqp "$out/doctor-torch.json" 'd["verdict"]')
vj=$(jqp "$out/doctor-jax.json" 'd["verdict"]')
[ "$vt" = "$vj" ] && pass "one verdict: torch $vt, jax $vj" || failm "two verdicts: torch $vt, jax $vj"
jqp "$out/doctor-jax.json" '[f for f in d["findings"] if f["code"].startswith("extension-")]' | grep -q '^\[\]$' \
  && pass "no extension finding under --framework jax" || failm "extension findings under --framework jax (see doctor-jax.json)"
# Each framework's fix (none when healthy) carries the planner's word on it.
for fw in torch jax; do
  echo "fix_proof $fw: $(jqp "$out/doctor-$fw.json" '[(f["name"], f["fix_proof"]["state"]) for f in d["frameworks"]]')"
done
echo "fails: $fails"
[ "$fails" -eq 0 ]
