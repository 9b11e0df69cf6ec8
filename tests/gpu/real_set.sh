#!/usr/bin/env bash
# Real binaries decide (docs/gpu-validation.md, "Real torch set"): on the GPU machine, real wheels
# rebuilt from its installed torch/torchvision/torchaudio and their whole closure
# (tests/gpu/real_index.py), served as a PyTorch-shaped index: stable /whl/cu130 whose torch has its
# sm_90 entries relabelled as sm_89, nightly /whl/nightly/cu130 with the genuine binaries.
# Usage (repository root, on the GPU machine):
#   tests/gpu/real_set.sh BUNDLE.tar.gz [OUTDIR] [SITE_PACKAGES_PYTHON]
# Every step prints PASS/FAIL; exits non-zero if any expectation fails.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=${1:?usage: tests/gpu/real_set.sh BUNDLE.tar.gz [OUTDIR] [PYTHON]}
out=${2:-$(mktemp -d)}
SRCPY=${3:-/opt/torch/.venv/bin/python}
mkdir -p "$out"
work=$(mktemp -d /tmp/envfix-real-XXXXXX)
summary="$out/real-summary.txt"
: >"$summary"
. "$here/common.sh"
unset PIP_FIND_LINKS
export PIP_DISABLE_PIP_VERSION_CHECK=1

tar -xzf "$bundle" -C "$work"
BIN=$(ls -d "$work"/envfix-*/bin)
export PATH="$BIN:$PATH"
SITE=$("$SRCPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
say "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); gpu: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | head -1)"
say "source env: $SITE ($("$SRCPY" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null))"

# 1. The index, rebuilt from the installed binaries.
t0=$(now)
"$SRCPY" "$here/real_index.py" "$SITE" "$work/index" >"$out/real-index.json" 2>"$out/real-index.log" \
  && pass "real wheels rebuilt in $(el $t0 $(now)) s: $(jqp "$out/real-index.json" '"%d wheels, %.2f GB, %d sm_90 entries of torch relabelled; stable %s, nightly %s" % (d["wheels"], d["bytes"]/1e9, d["relabelled_entries"], d["stable"]["torch"], d["nightly"]["torch"])')" \
  || { failm "real_index.py (see real-index.log)"; exit 1; }
setsid python3 -m http.server 8766 --bind 127.0.0.1 --directory "$work/index" >"$out/real-http.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8766/whl/cu130/torch/')" 2>/dev/null && break; sleep 0.1; done
MIRROR=http://127.0.0.1:8766/whl
COMMON=(--mirror "$MIRROR" --cache-dir "$work/cache")
mkvenv() { "$SRCPY" -m venv --without-pip "$1" 2>/dev/null || uv venv -q -p "$SRCPY" "$1"; }
SEED='import torch; print(torch.__version__, torch.cuda.get_arch_list()); x = torch.randn(64, 64, device="cuda"); print(float((x @ x).sum()))'

# 2. The user's broken install: pip from the stable index.
mkvenv "$work/venvA"
PYA="$work/venvA/bin/python"
t0=$(now)
"$SRCPY" -m pip --python "$PYA" install -q --no-cache-dir --no-compile --index-url "$MIRROR/cu130" torch torchvision torchaudio \
  >"$out/real-pip.log" 2>&1 && pass "pip installed the stable set in $(el $t0 $(now)) s" || failm "pip install (see real-pip.log)"
"$PYA" -c "$SEED" >"$out/real-seed-broken.log" 2>&1
if grep -q "no kernel image is available for execution on the device" "$out/real-seed-broken.log"; then
  pass "the seed script fails with the real error: $(grep -o '[A-Za-z.]*Error: CUDA error: no kernel image[^.]*' "$out/real-seed-broken.log" | head -1)"
else failm "expected 'no kernel image' from the seed script (see real-seed-broken.log)"; fi

# 3. doctor: broken, arch-not-covered from the binaries and from the repro.
t0=$(now)
envfix doctor --python "$PYA" "${COMMON[@]}" --format json >"$out/real-doctor-broken.json" 2>"$out/real-doctor-broken.txt"
say "doctor (broken) exit $? in $(el $t0 $(now)) s"
[ "$(jqp "$out/real-doctor-broken.json" 'd["verdict"]')" = broken ] && pass "doctor verdict: broken" || failm "doctor verdict (see real-doctor-broken.json)"
jqp "$out/real-doctor-broken.json" '[f["code"]+": "+f["message"] for f in d["findings"]]' >"$out/real-doctor-findings.txt"
grep -q "arch-not-covered: torch" "$out/real-doctor-findings.txt" && pass "doctor: $(grep -o 'arch-not-covered: torch[^,]*' "$out/real-doctor-findings.txt" | head -1)" || failm "doctor finding arch-not-covered for torch"
jqp "$out/real-doctor-broken.json" 'd["repro"]["step_a"] + " " + d["repro"]["step_b"]' | grep -q "passed failed" \
  && pass "doctor repro: step A (host-to-device copy) passed, step B failed: $(jqp "$out/real-doctor-broken.json" 'd["repro"]["error"]')" \
  || failm "doctor repro steps: $(jqp "$out/real-doctor-broken.json" 'd["repro"]')"
FIX=$(jqp "$out/real-doctor-broken.json" 'd["fix"]')
say "doctor fix: $FIX"

# 4. The printed fix, run as printed (in $work: it writes envfix.lock there).
cd "$work"
t0=$(now)
eval "$FIX" >"$out/real-fix.out" 2>"$out/real-fix.txt"
rc=$?
say "fix exit $rc in $(el $t0 $(now)) s"
[ $rc = 0 ] && pass "the printed fix succeeded" || failm "the printed fix (see real-fix.txt)"
grep -E "chose:|refused|Smoke test|Installed|Uninstalled" "$out/real-fix.txt" | head -8 | sed 's/^/    /' | tee -a "$summary"
NV=$(jqp "$out/real-index.json" 'd["nightly"]["torch"]')
distv() { "$1" -c "import importlib.metadata as m; print(m.version('$2'))" 2>/dev/null; }
[ "$(distv "$PYA" torch)" = "$NV" ] && pass "torch is now the nightly $NV" || failm "torch version after the fix: $(distv "$PYA" torch)"
"$PYA" -c "$SEED" >"$out/real-seed-fixed.log" 2>&1 && pass "the seed script passes: $(tail -1 "$out/real-seed-fixed.log")" || failm "seed script after the fix (see real-seed-fixed.log)"
envfix doctor --python "$PYA" "${COMMON[@]}" --format json >"$out/real-doctor-fixed.json" 2>/dev/null
[ "$(jqp "$out/real-doctor-fixed.json" 'd["verdict"]')" = healthy ] && pass "doctor after the fix: healthy" || failm "doctor after the fix: $(jqp "$out/real-doctor-fixed.json" 'd["verdict"], [f["code"] for f in d["findings"]]')"

# 5. apply --locked into a fresh venv.
mkvenv "$work/venvB"
t0=$(now)
envfix apply --locked --yes --python "$work/venvB/bin/python" "${COMMON[@]}" --lockfile "$work/envfix.lock" >"$out/real-locked.out" 2>"$out/real-locked.txt"
rc=$?
[ $rc = 0 ] && pass "apply --locked into a fresh venv in $(el $t0 $(now)) s" || failm "apply --locked (see real-locked.txt)"
"$work/venvB/bin/python" -c "$SEED" >/dev/null 2>&1 && pass "the seed script passes in the locked venv" || failm "seed script in the locked venv"

# 6. rollback restores the broken set.
envfix rollback --yes --python "$PYA" >"$out/real-rollback.out" 2>"$out/real-rollback.txt" && pass "rollback" || failm "rollback (see real-rollback.txt)"
SV=$(jqp "$out/real-index.json" 'd["stable"]["torch"]')
[ "$(distv "$PYA" torch)" = "$SV" ] && pass "rollback restored torch $SV" || failm "torch version after rollback: $(distv "$PYA" torch)"
"$PYA" -c "$SEED" >"$out/real-seed-rolledback.log" 2>&1
grep -q "no kernel image" "$out/real-seed-rolledback.log" && pass "the restored set fails as before (no kernel image)" || failm "restored set (see real-seed-rolledback.log)"

# 7. The genuine set (NVIDIA's own cuBLAS, cuDNN, cuFFT, NCCL, …) into a fresh venv: not refused.
mkvenv "$work/venvC"
t0=$(now)
envfix apply --yes --python "$work/venvC/bin/python" "${COMMON[@]}" --channel nightly --format json >"$out/real-genuine.json" 2>"$out/real-genuine.txt"
rc=$?
[ $rc = 0 ] && pass "apply of the genuine set into a fresh venv in $(el $t0 $(now)) s ($(jqp "$out/real-genuine.json" 'len(d["install"])') packages)" || failm "apply of the genuine set (see real-genuine.txt)"

# 8. inspect over the whole installed site-packages of the machine: no package holds nothing runnable.
find "$SITE" -name '*.so*' -type f >"$work/sos.txt"
t0=$(now)
xargs -a "$work/sos.txt" -d '\n' envfix inspect --gpu 9.0 --format json >"$out/real-inspect.json" 2>"$out/real-inspect.txt"
rc=$?
say "inspect of $(wc -l <"$work/sos.txt") shared objects in $SITE: exit $rc in $(el $t0 $(now)) s"
python3 - "$out/real-inspect.json" "$SITE" <<'EOF' | tee -a "$summary"
# Group the per-file verdicts by the distribution whose RECORD lists the file (as the kernel gate
# judges packages): a package "refused" would be one where no file has anything runnable.
import csv, glob, json, os, sys, collections
d = json.load(open(sys.argv[1])); site = sys.argv[2]
owner = {}
for rec in glob.glob(os.path.join(site, "*.dist-info", "RECORD")):
    dist = os.path.basename(os.path.dirname(rec))[: -len(".dist-info")]
    for row in csv.reader(open(rec, encoding="utf-8")):
        if row:
            owner[os.path.normpath(os.path.join(site, row[0]))] = dist
by = collections.defaultdict(collections.Counter)
none_files = []
for f in d["files"]:
    v = f.get("coverage", {}).get("sm_90", {}).get("verdict")
    if v is None:
        continue
    by[owner.get(os.path.normpath(f["path"]), "(no RECORD)")][v] += 1
    if v == "none":
        none_files.append(os.path.basename(f["path"]))
bad = [t for t, c in by.items() if c["full"] + c["partial"] == 0]
for t, c in sorted(by.items()):
    print(f"    {t}: {dict(c)}")
print(f"    files with verdict none on sm_90 (each inside a package that runs): {none_files}")
print(("PASS" if not bad else "FAIL") + f" inspect: {len(by)} distributions with GPU code; none holds nothing runnable on sm_90" + (f" (but: {bad})" if bad else ""))
EOF
grep -q "^FAIL inspect" "$summary" && fails=$((fails + 1))

# 9. envfix verify: every layer on the genuine set (venvC) and on the machine's real JAX; --app on
#    the broken set (venvA after the rollback) fails with the real error, classified with the fix.
printf '%s\n' "$SEED" >"$work/seed.py"
t0=$(now)
envfix verify --python "$work/venvC/bin/python" "${COMMON[@]}" --app "python $work/seed.py" --format json >"$out/real-verify-torch.json" 2>"$out/real-verify-torch.txt"
rc=$?
say "verify (genuine torch set) exit $rc in $(el $t0 $(now)) s"
sed 's/^/    /' "$out/real-verify-torch.txt" | tee -a "$summary"
[ $rc = 0 ] && pass "verify passed every layer on the genuine torch set" || failm "verify on the genuine set (see real-verify-torch.txt)"
t0=$(now)
envfix verify --framework jax --python "$SRCPY" "${COMMON[@]}" --format json >"$out/real-verify-jax.json" 2>"$out/real-verify-jax.txt"
rc=$?
say "verify (the machine's jax) exit $rc in $(el $t0 $(now)) s"
sed 's/^/    /' "$out/real-verify-jax.txt" | tee -a "$summary"
[ $rc = 0 ] && pass "verify passed on the machine's real JAX" || failm "verify on jax (see real-verify-jax.txt)"
envfix verify --python "$PYA" "${COMMON[@]}" --layers app --app "python $work/seed.py" --format json >"$out/real-verify-broken.json" 2>"$out/real-verify-broken.txt"
rc=$?
sed 's/^/    /' "$out/real-verify-broken.txt" | tee -a "$summary"
[ $rc = 1 ] && [ "$(jqp "$out/real-verify-broken.json" 'd["layers"]["app"]["class"]')" = missing-arch ] \
  && pass "verify --app on the broken set: missing-arch, fix: $(jqp "$out/real-verify-broken.json" 'd["layers"]["app"]["fix"]')" \
  || failm "verify --app on the broken set (see real-verify-broken.txt)"

# 10. Back to stable, the base environment and the verified-on record: doctor on the genuine nightly
#     set (venvC) names the stable release that covers sm_90; a second index whose stable torch is
#     genuine (no relabelling) takes venvC back with `apply --channel stable`, smoke-tested with
#     verify's repro and model layers, and the lockfile records the machine it passed on.
nvidia-smi -L >"$out/nvidia-smi-L.txt" 2>&1
envfix doctor --python "$work/venvC/bin/python" "${COMMON[@]}" --no-repro --format json >"$out/real-doctor-nightly.json" 2>"$out/real-doctor-nightly.txt"
jqp "$out/real-doctor-nightly.json" '"\n".join("    %s: %s | %s" % (f["code"], f["message"], f["hint"]) for f in d["findings"])' | tee -a "$summary"
jqp "$out/real-doctor-nightly.json" '"    base: " + json.dumps(d["base"])' 2>/dev/null | tee -a "$summary" || true
[ "$(jqp "$out/real-doctor-nightly.json" 'any(f["code"] == "stable-covers-gpu" for f in d["findings"])')" = True ] \
  && pass "doctor on the nightly set: stable-covers-gpu" || failm "no stable-covers-gpu on the nightly set (see real-doctor-nightly.json)"
[ "$(jqp "$out/real-doctor-nightly.json" 'd["base"]["cuda_runtime"]["version"]')" = 13.0 ] \
  && pass "doctor base: CUDA runtime $(jqp "$out/real-doctor-nightly.json" 'd["base"]["cuda_runtime"]["from"]'), toolkit $(jqp "$out/real-doctor-nightly.json" 'd["base"]["toolkit"]')" \
  || failm "doctor base environment (see real-doctor-nightly.json)"
"$SRCPY" "$here/real_index.py" "$SITE" "$work/index2" --relabel '' >"$out/real-index2.json" 2>"$out/real-index2.log" || failm "real_index.py --relabel '' (see real-index2.log)"
setsid python3 -m http.server 8767 --bind 127.0.0.1 --directory "$work/index2" >"$out/real-http2.log" 2>&1 &
server2=$!
trap 'kill $server $server2 2>/dev/null' EXIT
for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8767/whl/cu130/torch/')" 2>/dev/null && break; sleep 0.1; done
t0=$(now)
envfix apply --yes --framework torch --channel stable --python "$work/venvC/bin/python" --mirror http://127.0.0.1:8767/whl \
  --cache-dir "$work/cache2" --lockfile "$work/stable.lock" --format json >"$out/real-back-to-stable.json" 2>"$out/real-back-to-stable.txt"
rc=$?
say "apply --channel stable exit $rc in $(el $t0 $(now)) s"
sed 's/^/    /' "$out/real-back-to-stable.txt" | tee -a "$summary"
SV=$(jqp "$out/real-index2.json" 'd["stable"]["torch"]')
[ $rc = 0 ] && [ "$(distv "$work/venvC/bin/python" torch)" = "$SV" ] && pass "back to stable: torch $SV, smoke $(jqp "$out/real-back-to-stable.json" 'd["applied"]["smoke"]["passed"]')" \
  || failm "apply --channel stable (see real-back-to-stable.txt)"
cp "$work/stable.lock" "$out/stable.lock" 2>/dev/null
grep -q "NVIDIA H200 (sm_90)" "$work/stable.lock" && pass "the lockfile's verified-on: $(grep -A7 'verified-on:' "$work/stable.lock" | tr -s ' ' | tr '\n' ' ')" \
  || failm "no verified-on record in the lockfile"
envfix doctor --python "$work/venvC/bin/python" --cache-dir "$work/cache2" --no-repro --format json >"$out/real-doctor-stable.json" 2>/dev/null
[ "$(jqp "$out/real-doctor-stable.json" 'any(f["code"] == "stable-covers-gpu" for f in d["findings"])')" = False ] \
  && pass "doctor on the stable set: no back-to-stable note, verdict $(jqp "$out/real-doctor-stable.json" 'd["verdict"]')" \
  || failm "a back-to-stable note on a stable install"

say "fails: $fails"
exit $((fails > 0))
