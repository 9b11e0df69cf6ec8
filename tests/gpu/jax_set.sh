#!/usr/bin/env bash
# JAX as a first-class framework, on the real JAX of the GPU machine (docs/gpu-validation.md, "Real
# JAX set"): wheels rebuilt from its installed jax 0.11.2 + jax-cuda13-plugin + jax-cuda13-pjrt and
# their whole closure (tests/gpu/real_index.py --layout pypi), served as one PyPI-shaped index that
# holds the genuine 0.11.2 set and a 0.11.3 set whose plugin and pjrt have their sm_90 entries
# relabelled as sm_89 (a build without the H200's code, newest on the index).
# Usage (repository root, on the GPU machine):
#   tests/gpu/jax_set.sh BUNDLE.tar.gz [OUTDIR] [SITE_PACKAGES_PYTHON]
# Every step prints PASS/FAIL; exits non-zero if any expectation fails.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=${1:?usage: tests/gpu/jax_set.sh BUNDLE.tar.gz [OUTDIR] [PYTHON]}
out=${2:-$(mktemp -d)}
SRCPY=${3:-/opt/torch/.venv/bin/python}
mkdir -p "$out"
work=$(mktemp -d /tmp/envfix-jax-XXXXXX)
summary="$out/jax-summary.txt"
: >"$summary"
. "$here/common.sh"
distv() { "$1" -c "import importlib.metadata as m; print(m.version('$2'))" 2>/dev/null; }
unset PIP_FIND_LINKS
export PIP_DISABLE_PIP_VERSION_CHECK=1

tar -xzf "$bundle" -C "$work"
BIN=$(ls -d "$work"/envfix-*/bin)
export PATH="$BIN:$PATH"
SITE=$("$SRCPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
say "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); gpu: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | head -1)"
say "source env: $SITE (jax $(distv "$SRCPY" jax), jax-cuda13-plugin $(distv "$SRCPY" jax-cuda13-plugin), jax-cuda13-pjrt $(distv "$SRCPY" jax-cuda13-pjrt))"

# 1. doctor on the machine's real JAX: the plugin's and the pjrt's kernels listed per file, healthy.
t0=$(now)
envfix doctor --framework jax --python "$SRCPY" --format json >"$out/jax-doctor-real.json" 2>"$out/jax-doctor-real.txt"
rc=$?
say "doctor --framework jax (the machine's jax) exit $rc in $(el $t0 $(now)) s"
sed 's/^/    /' "$out/jax-doctor-real.txt" | head -60 | tee -a "$summary"
[ "$(jqp "$out/jax-doctor-real.json" 'd["verdict"]')" = healthy ] && pass "doctor on the real jax: healthy" \
  || failm "doctor on the real jax: $(jqp "$out/jax-doctor-real.json" 'd["verdict"], [f["code"] + ": " + f["message"] for f in d["findings"]]')"
grep -q "xla_cuda_plugin.so" "$out/jax-doctor-real.json" && grep -q "_linalg.so" "$out/jax-doctor-real.json" \
  && pass "doctor lists the plugin's and the pjrt's kernel files (xla_cuda_plugin.so, _linalg.so, …)" \
  || failm "doctor does not list the jax plugin's kernel files (see jax-doctor-real.json)"
# Auto-detection: the machine's venv holds torch and jax; without --framework both are reported.
envfix doctor --python "$SRCPY" --no-repro --format json >"$out/jax-doctor-auto.json" 2>"$out/jax-doctor-auto.txt"
say "doctor without --framework: frameworks $(jqp "$out/jax-doctor-auto.json" 'd.get("frameworks")')"
grep -q '"jax"' "$out/jax-doctor-auto.json" && grep -q '"torch"' "$out/jax-doctor-auto.json" \
  && pass "doctor without --framework reports torch and jax" || failm "auto-detection (see jax-doctor-auto.json)"

# 2. The index, rebuilt from the installed binaries: genuine 0.11.2 and relabelled 0.11.3.
t0=$(now)
"$SRCPY" "$here/real_index.py" "$SITE" "$work/index" --layout pypi --roots 'jax[cuda13]' \
  --set jax,jaxlib,jax-cuda13-plugin,jax-cuda13-pjrt --relabel jax-cuda13-plugin:90:89,jax-cuda13-pjrt:90:89 \
  >"$out/jax-index.json" 2>"$out/jax-index.log" \
  && pass "real wheels rebuilt in $(el $t0 $(now)) s: $(jqp "$out/jax-index.json" '"%d wheels, %.2f GB; relabelled %s; dropped (not installed here) %s" % (d["wheels"], d["bytes"]/1e9, d["relabelled_entries"], d["dropped"])')" \
  || { failm "real_index.py (see jax-index.log)"; exit 1; }
setsid python3 -m http.server 8768 --bind 127.0.0.1 --directory "$work/index" >"$out/jax-http.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8768/simple/jax/')" 2>/dev/null && break; sleep 0.1; done
MIRROR=http://127.0.0.1:8768/simple
mkvenv() { "$SRCPY" -m venv --without-pip "$1" 2>/dev/null || uv venv -q -p "$SRCPY" "$1"; }
SEED='import jax, jax.numpy as jnp; print(jax.devices()); k = jax.random.PRNGKey(0); a = jax.random.normal(k, (512, 512)); print(float(jnp.linalg.qr(a)[0].sum()), float(jnp.sort(a.ravel())[0]))'

# 3. The user's broken install: pip picks the newest, relabelled set.
mkvenv "$work/venvJ"
PYJ="$work/venvJ/bin/python"
BV=$(jqp "$out/jax-index.json" 'd["relabelled"]["jax"]')
GV=$(jqp "$out/jax-index.json" 'd["genuine"]["jax"]')
t0=$(now)
"$SRCPY" -m pip --python "$PYJ" install -q --no-cache-dir --no-compile --index-url "$MIRROR" 'jax[cuda13]' \
  >"$out/jax-pip.log" 2>&1 && pass "pip installed jax[cuda13] $(distv "$PYJ" jax) in $(el $t0 $(now)) s" || failm "pip install (see jax-pip.log)"
"$PYJ" -c "$SEED" >"$out/jax-seed-broken.log" 2>&1
say "the seed script on the relabelled set: exit $? ($(grep -m1 -o -E '[A-Za-z_.]*(Error|error)[^|]{0,160}' "$out/jax-seed-broken.log" | head -1))"

# 4. doctor: broken, arch-not-covered read from the plugin's binaries.
t0=$(now)
envfix doctor --framework jax --python "$PYJ" --cache-dir "$work/cache" --mirror "$MIRROR" --format json >"$out/jax-doctor-broken.json" 2>"$out/jax-doctor-broken.txt"
say "doctor (relabelled set) exit $? in $(el $t0 $(now)) s"
sed 's/^/    /' "$out/jax-doctor-broken.txt" | head -40 | tee -a "$summary"
[ "$(jqp "$out/jax-doctor-broken.json" 'd["verdict"]')" = broken ] && pass "doctor verdict: broken" || failm "doctor verdict on the relabelled set: $(jqp "$out/jax-doctor-broken.json" 'd["verdict"]')"
jqp "$out/jax-doctor-broken.json" '[f["code"]+": "+f["message"] for f in d["findings"]]' >"$out/jax-doctor-findings.txt"
grep -q "arch-not-covered: jax-cuda13-p" "$out/jax-doctor-findings.txt" && pass "doctor: $(grep -o 'arch-not-covered: jax-cuda13-p[^,]*' "$out/jax-doctor-findings.txt" | head -1)" \
  || failm "doctor finding arch-not-covered for the jax plugin/pjrt: $(cat "$out/jax-doctor-findings.txt")"
FIX=$(jqp "$out/jax-doctor-broken.json" 'd["fix"]')
say "doctor fix: $FIX"

# 5. apply --framework jax from the index holding both builds: the kernel check refuses 0.11.3, the
#    genuine 0.11.2 is installed in its place and passes the JAX smoke test on the GPU.
cd "$work"
t0=$(now)
envfix apply --yes --framework jax --python "$PYJ" --mirror "$MIRROR" --cache-dir "$work/cache" --lockfile "$work/jax.lock" \
  --format json >"$out/jax-apply.json" 2>"$out/jax-apply.txt"
rc=$?
say "apply --framework jax exit $rc in $(el $t0 $(now)) s"
grep -E "chose|refused|trying|Smoke|smoke|Installed|Uninstalled|jax" "$out/jax-apply.txt" | head -30 | sed 's/^/    /' | tee -a "$summary"
[ $rc = 0 ] && [ "$(distv "$PYJ" jax)" = "$GV" ] && [ "$(distv "$PYJ" jax-cuda13-pjrt)" = "$GV" ] \
  && pass "apply installed the genuine set: jax $(distv "$PYJ" jax), jax-cuda13-plugin $(distv "$PYJ" jax-cuda13-plugin), jax-cuda13-pjrt $(distv "$PYJ" jax-cuda13-pjrt)" \
  || failm "apply --framework jax (see jax-apply.txt): jax $(distv "$PYJ" jax)"
# The installed binaries were read before planning (evidence first), so 0.11.3 is never downloaded.
[ "$(jqp "$out/jax-apply.json" 'any(r["version"] == "'"$BV"'" and r["reason"] == "arch-not-covered" and "read from the binaries" in r["detail"] for r in d["rejected"])')" = True ] \
  && pass "the installed $BV was vetoed from its binaries before planning: $(jqp "$out/jax-apply.json" '[r["name"] + " " + r["version"] + ": " + r["detail"] for r in d["rejected"] if r["version"] == "'"$BV"'" and r["reason"] == "arch-not-covered"][0]')" \
  || failm "no arch-not-covered rejection of the relabelled $BV (see jax-apply.json)"
[ "$(jqp "$out/jax-apply.json" 'd["applied"]["smoke"]["device"] == "gpu" and len(d["applied"]["smoke"]["passed"]) >= 3')" = True ] \
  && pass "the JAX smoke test passed on the GPU: $(jqp "$out/jax-apply.json" 'd["applied"]["smoke"]["passed"]')" \
  || failm "smoke test (see jax-apply.json)"
"$PYJ" -c "$SEED" >"$out/jax-seed-fixed.log" 2>&1 && pass "the seed script passes: $(tail -1 "$out/jax-seed-fixed.log")" || failm "seed script after apply (see jax-seed-fixed.log)"
envfix doctor --framework jax --python "$PYJ" --cache-dir "$work/cache" --format json >"$out/jax-doctor-fixed.json" 2>/dev/null
[ "$(jqp "$out/jax-doctor-fixed.json" 'd["verdict"]')" = healthy ] && pass "doctor after apply: healthy" \
  || failm "doctor after apply: $(jqp "$out/jax-doctor-fixed.json" 'd["verdict"], [f["code"] for f in d["findings"]]')"
cp "$work/jax.lock" "$out/jax.lock" 2>/dev/null

# 5b. A fresh venv and an empty cache (nothing read yet): the plan takes 0.11.3, the kernel check
#     after download refuses its plugin/pjrt, and apply falls through to the genuine 0.11.2.
mkvenv "$work/venvF"
t0=$(now)
envfix apply --yes --framework jax --python "$work/venvF/bin/python" --mirror "$MIRROR" --cache-dir "$work/cacheF" --lockfile "$work/jaxF.lock" \
  --format json >"$out/jax-apply-fresh.json" 2>"$out/jax-apply-fresh.txt"
rc=$?
say "apply --framework jax into a fresh venv, empty cache: exit $rc in $(el $t0 $(now)) s"
grep -E "chose|refused|trying|Smoke" "$out/jax-apply-fresh.txt" | head -8 | cut -c1-400 | sed 's/^/    /' | tee -a "$summary"
[ $rc = 0 ] && [ "$(distv "$work/venvF/bin/python" jax-cuda13-pjrt)" = "$GV" ] \
  && [ "$(jqp "$out/jax-apply-fresh.json" 'len(d["applied"]["kernel_refusals"])')" -ge 1 ] \
  && pass "the kernel check refused $BV after download, then installed $GV: $(jqp "$out/jax-apply-fresh.json" 'd["applied"]["kernel_refusals"][0][:300]')" \
  || failm "fresh apply (see jax-apply-fresh.txt): pjrt $(distv "$work/venvF/bin/python" jax-cuda13-pjrt)"

# 6. plan from the same index: the planned set is what `pip download 'jax[cuda13]'` resolves.
mkvenv "$work/venvP"
envfix plan --framework jax --gpu sm_90 --driver 580.65.06 --python "$work/venvP/bin/python" --mirror "$MIRROR" --cache-dir "$work/cache" \
  --format json >"$out/jax-plan.json" 2>"$out/jax-plan.txt"
"$SRCPY" -m pip download -q --no-cache-dir --index-url "$MIRROR" "jax[cuda13]==$GV" -d "$work/dl" >"$out/jax-pipdl.log" 2>&1
python3 - "$out/jax-plan.json" "$work/dl" <<'EOF' | tee -a "$summary"
import json, os, re, sys
d = json.load(open(sys.argv[1]))
planned = {(re.sub(r"[-_.]+", "-", x["name"]).lower(), x["version"]) for x in d.get("install", [])}
pip = set()
for f in os.listdir(sys.argv[2]):
    n, v = f.split("-")[:2]
    pip.add((re.sub(r"[-_.]+", "-", n).lower(), v))
ok = planned == pip
print(("PASS" if ok else "FAIL") + f" plan --framework jax == pip download jax[cuda13]=={sorted(pip)[0][1] if pip else '?'}: {len(planned)} vs {len(pip)} packages"
      + ("" if ok else f"; only envfix: {sorted(planned - pip)}; only pip: {sorted(pip - planned)}"))
EOF
grep -q "^FAIL plan" "$summary" && fails=$((fails + 1))

say "fails: $fails"
exit $((fails > 0))
