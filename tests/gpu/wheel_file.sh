#!/usr/bin/env bash
# Issue 56, item 8 on real binaries (the guide's fix B, step 3: a wheel the user downloaded by hand).
# On the GPU machine, the real torch set rebuilt from its install (tests/gpu/real_index.py): the
# stable /whl/cu130 torch has its sm_90 entries relabelled as sm_89 (a real broken build), the
# nightly holds the genuine binaries. The user has the broken stable set and names a wheel file:
#   - the stable torch file: apply's kernel gate reads its real binaries and refuses it, nothing changes;
#   - the nightly torch file: that very file is installed (its companions from its variant's nightly
#     index), the seed script passes on the GPU, and naming it again is nothing to do.
# Usage (repository root, on the GPU machine):
#   tests/gpu/wheel_file.sh BUNDLE.tar.gz [OUTDIR] [SITE_PACKAGES_PYTHON]
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=${1:?usage: tests/gpu/wheel_file.sh BUNDLE.tar.gz [OUTDIR] [PYTHON]}
out=${2:-$(mktemp -d)}
SRCPY=${3:-/opt/torch/.venv/bin/python}
mkdir -p "$out"
work=$(mktemp -d /tmp/envfix-wheelfile-XXXXXX)
summary="$out/wheel-file-summary.txt"
: >"$summary"
. "$here/common.sh"
command -v nvidia-smi >/dev/null || { echo "SKIP: no nvidia-smi: not a GPU machine"; exit 77; }
unset PIP_FIND_LINKS
export PIP_DISABLE_PIP_VERSION_CHECK=1

tar -xzf "$bundle" -C "$work"
export PATH="$(ls -d "$work"/envfix-*/bin):$PATH"
SITE=$("$SRCPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
say "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); gpu: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | head -1)"
t0=$(now)
"$SRCPY" "$here/real_index.py" "$SITE" "$work/index" >"$out/wf-index.json" 2>"$out/wf-index.log" \
  && pass "real wheels rebuilt in $(el $t0 $(now)) s: $(jqp "$out/wf-index.json" '"%d wheels; stable %s, nightly %s" % (d["wheels"], d["stable"]["torch"], d["nightly"]["torch"])')" \
  || { failm "real_index.py (see wf-index.log)"; exit 1; }
setsid python3 -m http.server 8767 --bind 127.0.0.1 --directory "$work/index" >"$out/wf-http.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8767/whl/cu130/torch/')" 2>/dev/null && break; sleep 0.1; done
MIRROR=http://127.0.0.1:8767/whl
COMMON=(--mirror "$MIRROR" --cache-dir "$work/cache")
SEED='import torch; x = torch.randn(64, 64, device="cuda"); print(torch.__version__, float((x @ x).sum()))'
SV=$(jqp "$out/wf-index.json" 'd["stable"]["torch"]')
NV=$(jqp "$out/wf-index.json" 'd["nightly"]["torch"]')
STABLE_WHL=$(ls "$work"/index/whl/cu130/torch/torch-*.whl | head -1)
NIGHTLY_WHL=$(ls "$work"/index/whl/nightly/cu130/torch/torch-*.whl | head -1)
say "files: $(basename "$STABLE_WHL"), $(basename "$NIGHTLY_WHL")"

"$SRCPY" -m venv --without-pip "$work/venv" 2>/dev/null || uv venv -q -p "$SRCPY" "$work/venv"
PY="$work/venv/bin/python"
"$SRCPY" -m pip --python "$PY" install -q --no-cache-dir --no-compile --index-url "$MIRROR/cu130" torch torchvision torchaudio \
  >"$out/wf-pip.log" 2>&1 && pass "pip installed the broken stable set" || failm "pip install (see wf-pip.log)"
distv() { "$PY" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null; }
cd "$work"

# 1. The stable file: its real binaries lack sm_90; refused before anything changes.
# Every file of the venv with its content, envfix's own state (.envfix/: its lock) left out, as the
# CI tests' tree manifest does (tests/support/tree_manifest.hpp).
venv_manifest() { (cd "$work/venv" && find . -path ./.envfix -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
venv_manifest >"$out/wf-before.txt"
envfix apply --yes "$STABLE_WHL" --python "$PY" "${COMMON[@]}" >"$out/wf-stable.out" 2>"$out/wf-stable.txt"
rc=$?
[ $rc != 0 ] && grep -q "sm_90" "$out/wf-stable.txt" && pass "the stable file is refused (exit $rc): $(grep -m1 '^error' "$out/wf-stable.txt" | cut -c1-160)" \
  || failm "the stable file was not refused by its kernels (exit $rc; see wf-stable.txt)"
venv_manifest >"$out/wf-after.txt"
cmp -s "$out/wf-before.txt" "$out/wf-after.txt" && pass "the venv is unchanged (every file's sha256)" \
  || { failm "the venv changed:"; diff "$out/wf-before.txt" "$out/wf-after.txt" | head -5 | tee -a "$summary"; }

# 2. The nightly file: that very file, companions from its variant's nightly index, the seed passes.
t0=$(now)
envfix apply --yes "$NIGHTLY_WHL" --python "$PY" "${COMMON[@]}" >"$out/wf-nightly.out" 2>"$out/wf-nightly.txt"
rc=$?
say "apply $(basename "$NIGHTLY_WHL"): exit $rc in $(el $t0 $(now)) s"
grep -E "chose:|Smoke test|Installed" "$out/wf-nightly.txt" | head -4 | sed 's/^/    /' | tee -a "$summary"
[ $rc = 0 ] && [ "$(distv torch)" = "$NV" ] && pass "torch is the named file's $NV" || failm "torch after apply: $(distv torch) (see wf-nightly.txt)"
grep -q "the file named in the request" "$out/wf-nightly.txt" && pass "the plan names the file as its choice" || failm "the chose line does not name the file"
"$PY" -c "$SEED" >"$out/wf-seed.log" 2>&1 && pass "the seed script passes: $(tail -1 "$out/wf-seed.log")" || failm "seed script (see wf-seed.log)"
envfix plan "$NIGHTLY_WHL" --python "$PY" "${COMMON[@]}" --format json >"$out/wf-again.json" 2>"$out/wf-again.txt"
[ "$(jqp "$out/wf-again.json" 'len(d["install"])')" = 0 ] && pass "naming the file again: nothing to do" || failm "plan again (see wf-again.json)"
say "fails: $fails"
[ "$fails" -eq 0 ]
