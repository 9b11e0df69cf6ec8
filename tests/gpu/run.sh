#!/usr/bin/env bash
# envfix end to end on a real NVIDIA GPU (issue: the seed's failure reproduced and fixed).
# Usage (repository root, on the GPU machine):
#   tests/gpu/run.sh BUNDLE.tar.gz [OUTDIR]
# BUNDLE is the relocatable envfix tarball (cmake --build --preset release --target package).
# Every step prints PASS/FAIL and its output goes to OUTDIR; exits non-zero if any expectation fails.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=${1:?usage: tests/gpu/run.sh BUNDLE.tar.gz [OUTDIR]}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
work=$(mktemp -d /tmp/envfix-gpu-XXXXXX)
summary="$out/summary.txt"
: >"$summary"
. "$here/common.sh"
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }

say "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "gpu: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | head -1)"
say "python3: $(command -v python3) $(python3 -c 'import sys,torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>/dev/null)"

# 1. The relocatable bundle runs here as it is.
tar -xzf "$bundle" -C "$work"
ENVFIX=$(ls -d "$work"/envfix-*/bin/envfix)
if ldd "$ENVFIX" | grep -q "not found"; then failm "bundle: missing libraries: $(ldd "$ENVFIX" | grep 'not found')"; else pass "bundle: every library resolves ($(ls "$(dirname "$ENVFIX")/../lib" | wc -l) bundled)"; fi
"$ENVFIX" --help >/dev/null 2>&1 && pass "bundle: envfix runs" || failm "bundle: envfix --help"

# 2. The fixture framework and its index (real CUDA kernels built here with nvcc).
python3 "$here/tinyfw/build_index.py" "$work/index" >"$out/build_index.log" 2>&1 || failm "tinyfw index build (see build_index.log)"
setsid python3 -m http.server 8765 --bind 127.0.0.1 --directory "$work/index" >"$out/http.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/whl/cu130/')" 2>/dev/null && break; sleep 0.1; done
M="$here/tinyfw/matrices"
COMMON=(--matrices "$M" --framework tinyfw --cache-dir "$work/cache")

mkvenv() { python3 -m venv --without-pip "$1" 2>/dev/null || uv venv -q "$1"; }
# 3. The user's broken install: pip from the stable index, built for sm_80 only.
mkvenv "$work/venv1"
PY1="$work/venv1/bin/python"
env -u PIP_FIND_LINKS python3 -m pip --python "$PY1" install -q --no-cache-dir --index-url http://127.0.0.1:8765/whl/cu130 tinyfw tinyfw-vision >"$out/pip-broken.log" 2>&1 \
  && pass "pip installed the stable (sm_80) build" || failm "pip install (see pip-broken.log)"
"$PY1" -c "import tinyfw; tinyfw.to_device(); tinyfw.axpy_check()" >"$out/repro-broken.log" 2>&1
if grep -q "no kernel image is available for execution on the device" "$out/repro-broken.log"; then
  pass "the real CUDA error: $(grep -o 'RuntimeError: .*' "$out/repro-broken.log" | head -1)"
else failm "expected 'no kernel image' (see repro-broken.log)"; fi

# 4. doctor on the broken venv.
t0=$(now)
"$ENVFIX" doctor --python "$PY1" "${COMMON[@]}" --format json >"$out/doctor-broken.json" 2>"$out/doctor-broken.txt"
rc=$?; t1=$(now)
"$ENVFIX" doctor --python "$PY1" "${COMMON[@]}" --color never 2>"$out/doctor-broken-human.txt" >/dev/null
say "doctor (broken) exit $rc in $(elapsed $t0 $t1) s"
[ "$(jqp "$out/doctor-broken.json" 'd["verdict"]')" = broken ] && pass "doctor verdict: broken" || failm "doctor verdict (see doctor-broken.json)"
jqp "$out/doctor-broken.json" '[f["code"] for f in d["findings"]]' | grep -q arch-not-covered && pass "doctor finding arch-not-covered" || failm "doctor finding arch-not-covered"
jqp "$out/doctor-broken.json" 'd["repro"]["step_b"]' | grep -q failed && pass "doctor repro step B failed: $(jqp "$out/doctor-broken.json" 'd["repro"]["error"]')" || failm "doctor repro step B"

# 5. plan: the nightly sm_90 set from the same mirror; sm_80 rejected, PTX build ranked below.
"$ENVFIX" plan --python "$PY1" "${COMMON[@]}" --explain --format json >"$out/plan.json" 2>"$out/plan.txt"
"$ENVFIX" plan --python "$PY1" "${COMMON[@]}" --explain --color never 2>"$out/plan-human.txt" >/dev/null
[ "$(jqp "$out/plan.json" 'd["channel"]')" = nightly ] && pass "plan chose the nightly channel ($(jqp "$out/plan.json" 'd["index"]'))" || failm "plan channel (see plan.json)"
jqp "$out/plan.json" '" ".join(p["name"]+"=="+p["version"] for p in d["install"])' | grep -q "tinyfw==1.1.0.dev" && pass "plan installs $(jqp "$out/plan.json" '" ".join(p["name"]+"=="+p["version"] for p in d["install"])')" || failm "plan install set"
jqp "$out/plan.json" '[r["reason"] for r in d["rejected"] if r["version"].startswith("1.0.0+cu130")]' | grep -q arch-not-covered && pass "plan rejected 1.0.0+cu130 as arch-not-covered" || failm "plan rejection of the sm_80 build"

# 6. apply: transaction, GPU smoke test, lockfile.
cd "$work"
t0=$(now)
"$ENVFIX" apply --yes --python "$PY1" "${COMMON[@]}" --lockfile "$work/envfix.lock" --color never >"$out/apply.out" 2>"$out/apply.txt"
rc=$?; t1=$(now)
say "apply exit $rc in $(elapsed $t0 $t1) s"
[ $rc = 0 ] && pass "apply succeeded" || failm "apply (see apply.txt)"
"$PY1" -c "import tinyfw, tinyfw_vision; tinyfw.axpy_check(); assert tinyfw_vision.ops_check(); print(tinyfw.__version__)" >"$out/after-apply.log" 2>&1 \
  && pass "the kernel runs after apply ($(cat "$out/after-apply.log"))" || failm "kernel after apply (see after-apply.log)"
cp "$work/envfix.lock" "$out/envfix.lock" 2>/dev/null && pass "lockfile written" || failm "no lockfile"

# 7. doctor again: healthy.
"$ENVFIX" doctor --python "$PY1" "${COMMON[@]}" --format json >"$out/doctor-fixed.json" 2>"$out/doctor-fixed.txt"
[ "$(jqp "$out/doctor-fixed.json" 'd["verdict"]')" = healthy ] && pass "doctor after apply: healthy" || failm "doctor after apply (see doctor-fixed.json)"

# 8. apply --locked into a second fresh venv.
mkvenv "$work/venv2"
PY2="$work/venv2/bin/python"
"$ENVFIX" apply --locked --yes --python "$PY2" "${COMMON[@]}" --lockfile "$work/envfix.lock" --color never >"$out/apply-locked.out" 2>"$out/apply-locked.txt"
[ $? = 0 ] && pass "apply --locked into a fresh venv" || failm "apply --locked (see apply-locked.txt)"
"$PY2" -c "import tinyfw; tinyfw.axpy_check(); print(tinyfw.__version__)" >"$out/after-locked.log" 2>&1 \
  && pass "the kernel runs in the locked venv ($(cat "$out/after-locked.log"))" || failm "kernel in the locked venv"

# 8b. No GPU as far as envfix knows (ENVFIX_NO_NVML=1): the smoke test runs on the CPU and says so.
mkvenv "$work/venv3"
PY3="$work/venv3/bin/python"
ENVFIX_NO_NVML=1 "$ENVFIX" apply --yes --python "$PY3" "${COMMON[@]}" --lockfile "$work/cpu.lock" --color never >"$out/apply-cpu.out" 2>"$out/apply-cpu.txt"
rc=$?
if [ $rc = 0 ] && grep -q "Smoke test passed on the CPU (no GPU): CPU step, tinyfw-vision (CPU)" "$out/apply-cpu.txt"; then
  pass "apply without a GPU: $(grep 'Smoke test passed' "$out/apply-cpu.txt")"
else failm "apply without a GPU, CPU smoke test (exit $rc, see apply-cpu.txt)"; fi

# 8c. The torch CPU smoke steps of the embedded matrices, on this machine's real torch, GPU hidden.
"$ENVFIX" matrix --framework torch --format json >"$out/matrix-torch.json" 2>/dev/null
python3 - "$out/matrix-torch.json" >"$out/torch-cpu-smoke.txt" 2>&1 <<'PY'
import importlib.util, json, os, subprocess, sys
s = json.load(open(sys.argv[1]))["frameworks"][0]["smoke"]
steps = [("CPU step", "torch", s["cpu"])] + [(c + " (CPU)", c, code) for c, code in sorted(s["cpu_companions"].items())]
env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
bad = 0
for name, module, code in steps:
    if importlib.util.find_spec(module) is None:
        print(f"SKIP {name}: {module} is not installed here")
        continue
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    out = (r.stdout.strip().splitlines() or [""])[-1] if r.returncode == 0 else (r.stderr.strip().splitlines() or ["?"])[-1]
    print(("PASS" if r.returncode == 0 else "FAIL"), name, "->", out)
    bad += r.returncode != 0
sys.exit(1 if bad else 0)
PY
if [ $? = 0 ]; then pass "torch CPU smoke steps on the real torch: $(tr '\n' ';' <"$out/torch-cpu-smoke.txt")"; else failm "torch CPU smoke steps: $(tr '\n' ';' <"$out/torch-cpu-smoke.txt")"; fi

# 9. The machine's own torch environment.
TPY=$(command -v python3)
t0=$(now)
"$ENVFIX" doctor --python "$TPY" --format json >"$out/doctor-torch.json" 2>"$out/doctor-torch.txt"
rc=$?; t1=$(now)
"$ENVFIX" doctor --python "$TPY" --color never 2>"$out/doctor-torch-human.txt" >/dev/null
say "doctor (torch) exit $rc in $(elapsed $t0 $t1) s"
[ "$(jqp "$out/doctor-torch.json" 'd["verdict"]')" = healthy ] && pass "doctor on torch: healthy" || failm "doctor on torch: $(jqp "$out/doctor-torch.json" 'd["verdict"], [f["code"] for f in d["findings"]]')"
say "doctor saw: $(jqp "$out/doctor-torch.json" 'd["gpus"], d["driver"]')"
LIB=$("$TPY" -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libtorch_cuda.so'))")
say "libtorch_cuda.so: $(stat -c %s "$LIB") bytes"
t0=$(now); "$ENVFIX" inspect "$LIB" --gpu 9.0 --format json >"$out/inspect-torch.json" 2>"$out/inspect-torch.txt"; t1=$(now)
say "envfix inspect libtorch_cuda.so: $(elapsed $t0 $t1) s (cold)"
t0=$(now); "$ENVFIX" inspect "$LIB" --gpu 9.0 --format json >/dev/null 2>&1; t1=$(now)
say "envfix inspect libtorch_cuda.so: $(elapsed $t0 $t1) s (warm)"
t0=$(now); cuobjdump --list-elf "$LIB" >"$out/cuobjdump-list-elf.txt" 2>&1; t1=$(now)
say "cuobjdump --list-elf: $(elapsed $t0 $t1) s"
cuobjdump --list-ptx "$LIB" >"$out/cuobjdump-list-ptx.txt" 2>&1
python3 - "$out/inspect-torch.json" "$out/cuobjdump-list-elf.txt" "$out/cuobjdump-list-ptx.txt" >"$out/compare.txt" 2>&1 <<'PY'
import collections, json, re, sys
d = json.load(open(sys.argv[1]))["files"][0]
mine = collections.Counter()
for arch, n in d["sections"].get(".nv_fatbin", {}).get("archs", {}).items():
    if arch.startswith("lto_"): continue
    if arch.startswith("sm_") and arch.endswith("f"): arch = arch[:-1]  # cuobjdump prints family cubins plainly
    mine[arch] += n
theirs = collections.Counter()
for path, kind in ((sys.argv[2], "sm"), (sys.argv[3], "compute")):
    for line in open(path):
        m = re.match(r"(ELF|PTX) file\s+\d+: .*\.(sm_\w+)\.(cubin|ptx)$", line.strip())
        if m:
            a = m.group(2)
            theirs[a if kind == "sm" else "compute_" + a[3:]] += 1
print("cuobjdump entries:", sum(theirs.values()), "envfix entries:", sum(mine.values()))
diff = {k: (theirs[k], mine[k]) for k in set(theirs) | set(mine) if theirs[k] != mine[k]}
print("per arch:", dict(sorted(theirs.items())))
print("differences:", diff if diff else "none")
sys.exit(1 if diff else 0)
PY
if [ $? = 0 ]; then pass "inspect = cuobjdump: $(head -1 "$out/compare.txt")"; else failm "inspect vs cuobjdump: $(cat "$out/compare.txt")"; fi
say "coverage on 9.0: $(jqp "$out/inspect-torch.json" 'd["files"][0]["coverage"]')"

say "failures: $fails"
[ "$fails" = 0 ]
