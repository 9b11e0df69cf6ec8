#!/usr/bin/env python3
"""The real torch set on the GPU machine: envfix against uv and pip (issues 24 and 35).

The set is rebuilt from the machine's installed torch/torchvision/torchaudio and their whole closure
(tests/gpu/real_index.py, wheels deflated here as PyTorch's are; each wheel's METADATA also published
as a PEP 658 file as download.pytorch.org does), served over HTTPS on loopback (bench/run.py's
server: nginx if the machine has it, else bench/serve.py), and every tool runs on the same inputs,
one round after another, the order of the tools reversed every other round (A B C, C B A, ...).

Conditions (the report states each; bench/real_set.md, "Conditions", says why):
  - every tool runs with an explicit environment (`env -i` and the variables the report prints):
    nothing of the harness's own environment (UV_*, PIP_*, PYTHON*, ENVFIX_*, VIRTUAL_ENV) leaks in;
  - each tool's cache and the venv are on one filesystem (their st_dev is recorded) and every tool
    uses its default link mode; the mode it really used is read back from the installed files;
  - `sync` before each timed run (no tool pays for another's write-back); the page cache is not
    dropped (warm means what a user re-installing has);
  - after a workload's rounds, every tool's exact printed command runs alone from a shell under
    /usr/bin/time (the "alone" column; more than 15 % from the rounds' median is flagged).

Workloads:
  cold      install into a fresh venv, every cache empty (pip: --no-cache-dir)
  warm      install into a fresh venv, caches full
  uv-legacy (with warm) uv warm as the harness ran it before issue 35: the harness's whole environment
            inherited; its rows, link mode and bytecode evidence name what made those runs slow
  replace   the stable set installed (a hard-linked copy of a template venv) -> the nightly set
  resolve-cold / resolve-warm   plan only (envfix plan, uv pip install --dry-run), caches empty / full
  resolve-parts  a warm plan taken apart: process start, the plan --offline, the interpreter's start
  checked   envfix warm with what a user gets by default: the kernel check against the GPU and the
            smoke test on it (uv and pip have neither)
  doctor    envfix doctor on the machine's own torch environment, with and without the repro
  after-uv  envfix warm right after uv's cold install, no sync between (the write-back it waits for)

envfix runs with the kernel check and smoke test off (ENVFIX_NO_NVML=1, --no-verify) except in
`checked` and `doctor`, as uv and pip work. With --base-bundle an earlier envfix runs beside it
(tool "envfix-base"): the before/after of this change in the same run.

  # on the GPU machine, one device call (bench/h200.sh real OUT; bench/real_set.md says what it runs):
  python3 bench/real_set.py --bundle NEW.tar.gz --plan h200 --results OUT/results-real.json
  # here, from what came back:
  python3 bench/real_set.py --report-only OUT/results-real.json --report docs/performance-real.md
  # locally, no GPU, no torch: the whole harness on a tiny synthetic set (uv skipped when absent)
  python3 bench/real_set.py --bundle build/release/envfix-*.tar.gz --synthetic --plan h200 \
      --work /tmp/real-set-local --results /tmp/real-set-local.json --report /tmp/real-set-local.md
"""
import argparse
import base64
import datetime
import glob
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def _deflate_wheels():
    """real_index.py stores members; PyTorch's wheels are deflated. Level 1: the same inflate cost
    for the installers, a quicker build here."""
    orig = zipfile.ZipFile.writestr

    def writestr(self, zinfo_or_arcname, data, compress_type=None, compresslevel=None):
        return orig(self, zinfo_or_arcname, data, zipfile.ZIP_DEFLATED, 1)
    zipfile.ZipFile.writestr = writestr


if os.environ.get("REAL_SET_DEFLATE") == "1":  # set for build-index and inherited by its workers
    _deflate_wheels()


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the index

def build_index(src_python, site, out):
    """real_index.py with deflated wheels, then PEP 658 metadata files and attributes."""
    path = [HERE, os.path.join(SRC, "tests", "gpu")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = dict(os.environ, REAL_SET_DEFLATE="1", PYTHONPATH=os.pathsep.join(path))
    code = ("import sys, real_set, real_index; sys.argv = ['real_index.py'] + sys.argv[1:]; real_index.main()")
    r = subprocess.run([src_python, "-c", code, site, out], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"real_index.py failed:\n{r.stderr[-3000:]}")
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    # The channels' aggregate pages, as download.pytorch.org has them (/whl/torch/, /whl/nightly/torch/):
    # what envfix's variant discovery reads (resolver/discovery.hpp).
    for channel_dir, agg in ((os.path.join(out, "whl", "cu130"), os.path.join(out, "whl", "torch")),
                             (os.path.join(out, "whl", "nightly", "cu130"), os.path.join(out, "whl", "nightly", "torch"))):
        os.makedirs(agg, exist_ok=True)
        names = sorted(n for n in os.listdir(os.path.join(channel_dir, "torch")) if n.endswith(".whl"))
        with open(os.path.join(agg, "index.html"), "w") as f:
            f.write("<!DOCTYPE html>\n<html><body>\n" + "\n".join(
                f'<a href="../cu130/torch/{n.replace("+", "%2B")}">{n}</a><br/>' for n in names) + "\n</body></html>\n")
    for page in glob.glob(os.path.join(out, "whl", "**", "index.html"), recursive=True):
        d = os.path.dirname(page)
        text = open(page).read()

        def add_meta(m):
            href, name = m.group(1), m.group(2)
            wheel = os.path.join(d, name)
            if not name.endswith(".whl") or not os.path.exists(wheel):
                return m.group(0)
            with zipfile.ZipFile(wheel) as z:
                meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
                data = z.read(meta)
            with open(wheel + ".metadata", "wb") as f:
                f.write(data)
            h = hashlib.sha256(data).hexdigest()
            return (f'<a href="{href}" data-dist-info-metadata="sha256={h}" data-core-metadata="sha256={h}">'
                    f'{name}</a>')
        new = re.sub(r'<a href="([^"]+)">([^<]+)</a>', add_meta, text)
        if new != text and os.path.basename(d) != "whl":
            with open(page, "w") as f:
                f.write(new)
    return summary


def synthetic_site(root, python):
    """A tiny stand-in for the GPU machine's torch environment (for a run of the whole harness without
    a GPU or torch): a venv whose site-packages holds torch, torchvision and torchaudio dist-infos with
    a few files each and two small dependencies, which tests/gpu/real_index.py rebuilds as it does the
    real ones. Returns the venv's interpreter."""
    run_ok = lambda argv: subprocess.run(argv, check=True, capture_output=True)  # noqa: E731
    venv = os.path.join(root, "fake-torch")
    run_ok([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv])
    py = os.path.join(venv, "bin", "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ver = subprocess.run([py, "-c", "import sys; print(f'{sys.version_info[0]}{sys.version_info[1]}')"],
                         capture_output=True, text=True, check=True).stdout.strip()
    plat = f"cp{ver}-cp{ver}-manylinux_2_17_x86_64"
    # Shared objects must be ELF (envfix reads their kernels): an extension module of the interpreter.
    import sysconfig
    elf = open(sorted(glob.glob(os.path.join(sysconfig.get_config_var("DESTSHARED"), "*.so")))[0], "rb").read()
    dists = {  # name: (version, tag, requires, {path: bytes})
        "torch": ("2.11.0+cu130", plat, ["synthdep-alpha", "synthdep-beta>=1.0"],
                  {f"torch/__init__.py": b"__version__ = '2.11.0'\n",
                   "torch/lib/libpart.so": elf, **{f"torch/lib/data{i}.bin": os.urandom(1 << 20) for i in range(4)},
                   **{f"torch/mod{i}.py": b"x = %d\n" % i for i in range(200)}}),
        "torchvision": ("0.26.0+cu130", plat, ["torch==2.11.0"], {"torchvision/__init__.py": b"",
                        "torchvision/_C.so": elf}),
        "torchaudio": ("2.11.0+cu130", plat, ["torch==2.11.0"], {"torchaudio/__init__.py": b"",
                       "torchaudio/lib/_audio.so": elf}),
        "synthdep-alpha": ("3.1.0", "py3-none-any", [], {f"synthdep_alpha/m{i}.py": b"y = 1\n" for i in range(50)}),
        "synthdep-beta": ("1.2.0", "py3-none-any", [], {"synthdep_beta/__init__.py": b""}),
    }
    for name, (version, tag, requires, files) in dists.items():
        dist = name.replace("-", "_")
        di = f"{dist}-{version}.dist-info"
        files = dict(files)
        files[f"{di}/METADATA"] = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s\n" % (
            name, version, "".join(f"Requires-Dist: {r}\n" for r in requires))).encode()
        files[f"{di}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: bench/real_set.py\nRoot-Is-Purelib: %s\nTag: %s\n"
                                % ("true" if tag.startswith("py3") else "false", tag)).encode()
        rows = []
        for rel, data in files.items():
            path = os.path.join(site, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{rel},sha256={digest},{len(data)}")
        rows.append(f"{di}/RECORD,,")
        with open(os.path.join(site, di, "RECORD"), "w") as f:
            f.write("\n".join(rows) + "\n")
    return py


# ---------------------------------------------------------------- environments

# What each tool's environment holds besides its own variables: the variables a login shell has,
# the dynamic loader's path and the GPU settings of the machine. Nothing else of the harness's own
# environment reaches a tool (an inherited UV_LINK_MODE, UV_COMPILE_BYTECODE, PIP_*, PYTHON*, ...
# would measure a configuration the report does not name).
PASS_ENV = ("PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
            "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NCCL_NVLS_ENABLE",
            "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
# Variables whose values are recorded when the harness's environment has them: the ones that change
# what an installer does (link mode, bytecode, cache, index, TLS, concurrency).
TOOL_VAR = re.compile(r"^(UV_|PIP_|PYTHON|ENVFIX_|VIRTUAL_ENV$|CONDA_|SSL_CERT|REQUESTS_CA|CURL_CA|RAYON_|TOKIO_)")


def legacy_env(ca):
    """The environment the harness gave uv before issue 35 (git show 27eb9dd:bench/real_set.py, RealSet.__init__):
    its own, inherited whole, less a few index variables, plus these. The `uv-legacy` rows run under it."""
    env = dict(os.environ)
    for k in LEGACY_POP:
        env.pop(k, None)
    env.update(legacy_additions(ca))
    return env


LEGACY_POP = ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL",
              "UV_FIND_LINKS", "VIRTUAL_ENV", "CONDA_PREFIX", "ENVFIX_INDEX_URL", "ENVFIX_CACHE_DIR", "ENVFIX_MIRROR",
              "PYTHONPATH")


def legacy_additions(ca):
    return {"SSL_CERT_FILE": ca, "REQUESTS_CA_BUNDLE": ca, "PIP_CERT": ca, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1", "NO_COLOR": "1", "UV_NO_PROGRESS": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def shell_command(argv, env, legacy_ca=None, out=None):
    """The command line a reader pastes: `env -i VAR=... argv` (the exact environment), or for a
    legacy run `env -u ... VAR=... argv` on top of the shell's own environment, as the harness had it."""
    if legacy_ca is None:
        head = ["env", "-i"] + [f"{k}={v}" for k, v in sorted(env.items())]
    else:
        head = ["env"] + [x for k in LEGACY_POP for x in ("-u", k)] + [f"{k}={v}" for k, v in sorted(
            legacy_additions(legacy_ca).items())]
    cmd = " ".join(shlex.quote(x) for x in head + list(argv))
    return cmd + (f" >{shlex.quote(out)}.out 2>{shlex.quote(out)}.err" if out else "")


# ---------------------------------------------------------------- one machine's run

class RealSet:
    def __init__(self, a):
        import run  # bench/run.py: timed(), the HTTPS server, envfix_phases()
        self.run = run
        self.a = a
        self.work = os.path.abspath(a.work)
        run.WORK = self.work
        # A bare start: whatever an earlier call left here is gone (an earlier run filled the disk).
        for keep in (a.results, a.bundle, a.base_bundle or a.bundle, os.getcwd()):
            if os.path.abspath(keep).startswith(self.work + os.sep) or self.work in ("/", os.path.expanduser("~")):
                raise SystemExit(f"--work {self.work} would delete {keep}: pick a directory of its own")
        run.rmtree(self.work)
        os.makedirs(self.work, exist_ok=True)
        self.t_start = time.time()
        self.results = {"machine": machine_info(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"), "command": " ".join(sys.argv), "runs": {}, "notes": [], "probe": {}, "alone": {},
            "commands": {}, "placement": {}, "harness": 35}
        self.tools = {}
        for label, bundle in (("envfix", a.bundle), ("envfix-base", a.base_bundle)):
            if not bundle:
                continue
            d = os.path.join(self.work, label)
            os.makedirs(d)
            subprocess.run(["tar", "-xzf", bundle, "-C", d], check=True)
            self.tools[label] = glob.glob(os.path.join(d, "envfix-*", "bin", "envfix"))[0]
        if a.synthetic:
            a.src_python = synthetic_site(self.work, sys.executable)
        self.uv = a.uv or shutil.which("uv") or next(iter(glob.glob(os.path.join(os.path.dirname(a.src_python), "uv"))), "")
        if not self.uv:
            self.results["notes"].append("uv: not found on this machine (PATH, --uv, beside --src-python): its rows are "
                                         "left out.")
        self.src_python = a.src_python
        self.site = a.site or subprocess.run([a.src_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                             capture_output=True, text=True, check=True).stdout.strip()
        self.results["versions"] = self.versions()
        t0 = time.time()
        self.index_dir = os.path.join(self.work, "index")
        log("rebuilding the real set from", self.site)
        self.summary = build_index(a.src_python, self.site, self.index_dir)
        self.results["index"] = dict(self.summary, build_s=round(time.time() - t0, 1), synthetic=bool(a.synthetic))
        log(f"index ready in {time.time() - t0:.0f}s: {self.summary['wheels']} wheels, {self.summary['bytes'] / 1e9:.2f} GB")
        self.server = run.Nginx(self.index_dir, os.path.join(self.work, "server"), a.server)
        self.results["server"] = self.server.kind
        self.mirror = self.server.url + "/whl"
        self.idx = {"stable": f"{self.mirror}/cu130", "nightly": f"{self.mirror}/nightly/cu130"}
        ca = self.server.ca
        base = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
        base.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        self.base_env = base
        # Each tool's own additions: the CA of the loopback server (what a user of a private index sets).
        self.env = dict(base, SSL_CERT_FILE=ca)
        self.env_nonvml = dict(self.env, ENVFIX_NO_NVML="1")
        self.env_pip = dict(base, PIP_DISABLE_PIP_VERSION_CHECK="1")  # no network here: pip's self-check would wait
        self.env_legacy = legacy_env(ca)
        self.results["environment"] = {
            "passed": base, "tool_vars_inherited": {k: v for k, v in sorted(os.environ.items()) if TOOL_VAR.match(k)},
            "dropped_names": sorted(k for k in os.environ if k not in base),
            "legacy_additions": legacy_additions(ca), "legacy_removed": list(LEGACY_POP)}
        self.pins = {ch: [f"{n}=={v}" for n, v in sorted(self.summary[ch].items())] for ch in ("stable", "nightly")}
        self.caches = os.path.join(self.work, "caches")
        self.failed = set()
        self.venv = os.path.join(self.work, "venv")
        self.plan = [w for w in a.workloads.split(",") if w]
        self.results["plan"] = self.plan

    def versions(self):
        v = {}
        for label, e in self.tools.items():
            v[label] = subprocess.run([e, "--version"], capture_output=True, text=True).stdout.strip() or e
        if self.uv:
            v["uv"] = subprocess.run([self.uv, "--version"], capture_output=True, text=True).stdout.strip()
        v["pip"] = subprocess.run([self.src_python, "-m", "pip", "--version"], capture_output=True,
                                  text=True).stdout.split(" from")[0]
        v["python"] = subprocess.run([self.src_python, "--version"], capture_output=True, text=True).stdout.strip()
        return v

    def left(self):
        return self.a.deadline_s - (time.time() - self.t_start)

    # -- helpers
    def fresh_venv(self, path=None):
        path = path or self.venv
        self.run.rmtree(path)
        self.run.run_ok([self.src_python, "-m", "venv", "--without-pip", path])
        return path

    def installed(self, venv):
        site = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]
        return {os.path.basename(d)[:-len(".dist-info")].rsplit("-", 1)[0].lower().replace("_", "-"):
                os.path.basename(d)[:-len(".dist-info")].rsplit("-", 1)[1]
                for d in glob.glob(os.path.join(site, "*.dist-info"))}

    def expect(self, channel, venv=None):
        got = self.installed(venv or self.venv)
        want = {n: v for n, v in self.summary[channel].items()}
        bad = {n: (got.get(n), v) for n, v in want.items() if got.get(n) != v}
        if bad or len(got) < self.summary["wheels"] - len(want):
            raise RuntimeError(f"installed set is not the {channel} set: {bad}, {len(got)} distributions")

    def envfix_apply(self, tool, channel, cache, checked=False, python=None):
        argv = [self.tools[tool], *self.a.envfix_args, "apply", "torch", "torchvision", "torchaudio", "--channel",
                channel, "--mirror", self.mirror, "--python", os.path.join(python or self.venv, "bin", "python"), "--yes",
                "--cache-dir", cache, "--lockfile", os.path.join(self.work, f"{tool}.lock"), "--format", "json"]
        return (argv if checked else argv + ["--no-verify"]), (self.env if checked else self.env_nonvml)

    def uv_install(self, channel, cache, *extra):
        return [self.uv, "pip", "install", "--python", os.path.join(self.venv, "bin", "python"), "--cache-dir", cache,
                "--index-url", self.idx[channel], *extra, *self.pins[channel]], self.env

    def pip_install(self, channel, *extra):
        return [self.src_python, "-m", "pip", "--python", os.path.join(self.venv, "bin", "python"), "install",
                "--no-compile", "--index-url", self.idx[channel], "--cert", self.server.ca, *extra,
                *self.pins[channel]], self.env_pip

    def cache(self, tool):
        return os.path.join(self.caches, "uv" if tool == "uv-legacy" else tool)

    def job(self, wl, tool):
        """One timed run of a workload: the shell lines that set it up (ending in `sync`), the command
        and its environment. The rounds and the cross-check both run exactly this; the report prints it."""
        q = shlex.quote
        venv_cmd = f"{q(self.src_python)} -m venv --without-pip"
        j = {"legacy": tool == "uv-legacy", "expect": None, "cache": None, "phases": False}
        if wl in ("cold", "warm", "checked"):
            cache = self.cache(tool)
            j["setup"] = (f"rm -rf {q(cache)} && " if wl == "cold" else "") + \
                f"rm -rf {q(self.venv)} && {venv_cmd} {q(self.venv)}"
            if tool.startswith("envfix"):
                j["argv"], j["env"] = self.envfix_apply(tool, "nightly", cache, checked=wl == "checked")
                j["phases"] = True
            elif tool.startswith("uv"):
                j["argv"], j["env"] = self.uv_install("nightly", cache)
            else:
                j["argv"], j["env"] = self.pip_install("nightly", "--no-cache-dir")
                cache = None
            j["expect"], j["cache"] = "nightly", cache
        elif wl in ("resolve-cold", "resolve-warm"):
            py = os.path.join(self.work, "venv-empty")
            cache = self.cache(tool) if wl == "resolve-warm" else os.path.join(self.work, "fresh-cache")
            j["setup"] = (f"rm -rf {q(cache)} && " if wl == "resolve-cold" else "") + \
                f"{{ [ -x {q(py)}/bin/python ] || {venv_cmd} {q(py)}; }}"
            if tool.startswith("envfix"):
                j["argv"] = [self.tools[tool], *self.a.envfix_args, "plan", "torch", "torchvision", "torchaudio",
                             "--channel", "nightly", "--mirror", self.mirror, "--python", os.path.join(py, "bin", "python"),
                             "--cache-dir", cache, "--format", "json"]
                j["env"] = self.env_nonvml
            else:
                j["argv"] = [self.uv, "pip", "install", "--dry-run", "--python", os.path.join(py, "bin", "python"),
                             "--cache-dir", cache, "--index-url", self.idx["nightly"], *self.pins["nightly"]]
                j["env"] = self.env
        else:
            raise ValueError(wl)
        if j["legacy"]:
            j["env"] = self.env_legacy
        j["setup"] += " && sync"
        j["command"] = shell_command(j["argv"], j["env"], legacy_ca=self.server.ca if j["legacy"] else None,
                                     out=os.path.join(self.work, "last"))
        self.results["commands"].setdefault(wl, {})[tool] = {"setup": j["setup"], "command": j["command"]}
        return j

    def one(self, wl, tool):
        """One timed run: the job's setup, then its command, checked (the nightly set installed) and recorded."""
        j = self.job(wl, tool)
        subprocess.run(["bash", "-c", j["setup"]], check=True, capture_output=True)
        res = self.timed(j["argv"], j["env"], phases=j["phases"], sync=False)
        if j["expect"]:
            self.expect(j["expect"])
            res["evidence"] = self.evidence(self.venv, j["cache"])
        self.record(wl, tool, res)

    def alone(self, wl, tool, n):
        """The cross-check: the printed command run alone from a shell under /usr/bin/time, after the
        printed setup, n times. Also the wall time around it (millisecond resolution; it includes
        starting /usr/bin/time and bash)."""
        if (wl, tool) in self.failed or not self.results["runs"].get(wl, {}).get(tool):
            return
        j = self.job(wl, tool)
        have_time = os.access("/usr/bin/time", os.X_OK)
        rec = {"command": j["command"], "setup": j["setup"], "time": [], "outer": [],
               "via": "/usr/bin/time -f %e bash -c CMD" if have_time else "bash -c CMD (no /usr/bin/time here)"}
        # The harness's own environment: the command's `env -i` (or, legacy, `env -u ...`) makes the rest.
        for _ in range(n):
            subprocess.run(["bash", "-c", j["setup"]], check=True, capture_output=True)
            argv = (["/usr/bin/time", "-f", "%e"] if have_time else []) + ["bash", "-c", j["command"]]
            t0 = time.perf_counter()
            r = subprocess.run(argv, capture_output=True, text=True)
            outer = time.perf_counter() - t0
            if r.returncode != 0:
                self.results["notes"].append(f"alone {wl} {tool} failed ({r.returncode}): {r.stderr[-600:]}")
                break
            if j["expect"]:
                self.expect(j["expect"])
            rec["outer"].append(round(outer, 4))
            rec["time"].append(float(r.stderr.strip().splitlines()[-1]) if have_time else round(outer, 4))
        self.results["alone"].setdefault(wl, {})[tool] = rec
        log(f"alone {wl} {tool}: {rec['time']} (outer {rec['outer']})")

    def evidence(self, venv, cache):
        """How the files came into the venv: hard links of a cache file (st_nlink > 1; a file a tool
        copies or clones into a fresh venv has one link) or not, and whether byte-code was written."""
        site = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]
        files = linked = pyc = 0
        size = 0
        for root, _, names in os.walk(site):
            for name in names:
                st = os.lstat(os.path.join(root, name))
                if name.endswith(".pyc"):
                    pyc += 1
                    continue
                files += 1
                size += st.st_size
                linked += st.st_nlink > 1
        link = "hardlink" if linked > files * 0.9 else "copy/clone" if linked < files * 0.1 else "mixed"
        ev = {"files": files, "linked": linked, "pyc": pyc, "bytes": size, "link": link}
        if cache and os.path.exists(cache):
            ev["same_fs"] = os.stat(cache).st_dev == os.stat(site).st_dev
        return ev

    def timed(self, argv, env, phases=False, sync=True):
        if sync:
            subprocess.run(["sync"])
        state = {"dirty_before_kib": meminfo("Dirty"), "mem_available_kib": meminfo("MemAvailable"),
                 "cached_kib": meminfo("Cached"), "disk_free_gib": round(disk_free(self.work), 2)}
        out = os.path.join(self.work, "last-stdout.json")
        r = self.run.timed(argv, env=env, stdout_path=out)
        r.update(state)
        if r["rc"] != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({r['rc']}):\n{r['tail']}")
        if phases:
            r["phases"] = self.run.envfix_phases(out, r["tail"])
            try:
                r["link_mode"] = ((json.load(open(out)).get("applied") or {}).get("link_mode"))
            except (OSError, ValueError, AttributeError):
                pass
        warnings = [ln.strip() for ln in r["tail"].splitlines() if ln.lower().lstrip().startswith("warning")]
        if warnings:
            r["warnings"] = warnings[:5]
        r.pop("tail", None)
        return r

    def attempt(self, wl, tool, fn):
        """Runs one timed job; a failure is noted and that tool is left out of the workload from then on."""
        key = (wl, tool)
        if key in self.failed:
            return
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one tool's failure must not end the machine's run
            self.failed.add(key)
            msg = f"{wl} {tool} failed: {str(e)[-1500:]}"
            self.results["notes"].append(msg)
            log(msg)

    def record(self, wl, tool, r):
        self.results["runs"].setdefault(wl, {}).setdefault(tool, []).append(r)
        ev = r.get("evidence") or {}
        log(f"{wl} {tool}: {r['wall']:.2f}s (cpu {r.get('cpu_user', 0):.1f} user + {r.get('cpu_sys', 0):.1f} sys)"
            + (f" {ev.get('link')}, {ev.get('pyc')} pyc" if ev else "")
            + (f" {r.get('phases')}" if r.get("phases") else ""))

    def save(self):
        with open(self.a.results, "w") as f:
            json.dump(self.results, f, indent=1)

    # -- syscall probe: what one file operation costs on this machine's filesystem
    def probe(self):
        d = os.path.join(self.work, "probe")
        self.run.rmtree(d)
        os.makedirs(os.path.join(d, "a"))
        os.makedirs(os.path.join(d, "b"))
        os.makedirs(os.path.join(d, "c"))
        n = 2000
        t = {}
        t0 = time.perf_counter()
        for i in range(n):
            with open(os.path.join(d, "a", str(i)), "wb") as f:
                f.write(b"x" * 100)
        t["create_write_us"] = (time.perf_counter() - t0) / n * 1e6
        for name, fn in (("stat_us", lambda i: os.lstat(os.path.join(d, "a", str(i)))),
                         ("link_us", lambda i: os.link(os.path.join(d, "a", str(i)), os.path.join(d, "b", str(i)))),
                         ("rename_linked_us", lambda i: os.rename(os.path.join(d, "b", str(i)), os.path.join(d, "c", str(i)))),
                         ("unlink_us", lambda i: os.unlink(os.path.join(d, "c", str(i))))):
            t0 = time.perf_counter()
            for i in range(n):
                fn(i)
            t[name] = (time.perf_counter() - t0) / n * 1e6
        st0 = os.lstat(os.path.join(d, "a", "0"))
        os.link(os.path.join(d, "a", "0"), os.path.join(d, "b", "0"))
        st1 = os.lstat(os.path.join(d, "a", "0"))
        time.sleep(0.02)
        os.rename(os.path.join(d, "b", "0"), os.path.join(d, "c", "0"))
        st2 = os.lstat(os.path.join(d, "a", "0"))
        t["link_moves_ctime"] = st1.st_ctime_ns != st0.st_ctime_ns
        t["rename_moves_ctime"] = st2.st_ctime_ns != st1.st_ctime_ns
        t0 = time.perf_counter()
        subprocess.run(["sync"])
        t["sync_idle_s"] = time.perf_counter() - t0
        with open(os.path.join(d, "big"), "wb") as f:
            for _ in range(512):
                f.write(os.urandom(1) * (1 << 20))
        t["dirty_after_512mib_kib"] = meminfo("Dirty")
        t0 = time.perf_counter()
        subprocess.run(["sync"])
        t["sync_512mib_s"] = time.perf_counter() - t0
        df = subprocess.run(["df", "-T", self.work], capture_output=True, text=True).stdout.strip().splitlines()[-1]
        t["filesystem"] = " ".join(df.split()[:2])
        t["kernel"] = platform.release()
        self.run.rmtree(d)
        self.results["probe"] = t
        log("probe", t)

    # -- workloads
    def order(self, tools, r):
        """The tools of round r: as listed in even rounds, reversed in odd ones."""
        return list(reversed(tools)) if r % 2 else list(tools)

    def envfixes(self):
        return [t for t in ("envfix", "envfix-base") if t in self.tools]

    def round_cold(self, r):
        tools = self.envfixes() + (["uv"] if self.uv else []) + (["pip"] if r < self.a.pip_rounds else [])
        for tool in self.order(tools, r):
            self.attempt("cold", tool, lambda tool=tool: self.one("cold", tool))
            if tool == "uv" and r == 0 and "envfix" in self.tools and "after-uv" in self.plan:
                def after_uv():
                    # The case: envfix warm right after uv's cold install, whose write-back is pending.
                    self.fresh_venv()
                    argv, env = self.envfix_apply("envfix", "nightly", self.cache("envfix"))
                    res = self.timed(argv, env, phases=True, sync=False)
                    self.expect("nightly")
                    self.record("warm-after-uv-unsynced", "envfix", res)
                self.attempt("warm-after-uv-unsynced", "envfix", after_uv)

    def prime(self):
        """Fills each tool's cache when no cold round did (untimed), and makes the stable template for replace."""
        for tool in self.envfixes() + (["uv"] if self.uv else []):
            if os.path.isdir(self.cache(tool)):
                continue
            self.one("cold", tool)  # no cold round ran: the priming install is one
        if "replace" not in self.plan:
            return
        template = os.path.join(self.work, "template-stable")
        self.fresh_venv(template)
        argv, env = self.envfix_apply("envfix", "stable", os.path.join(self.work, "template-cache"), python=template)
        argv += ["--link-mode", "copy"]
        try:
            self.run.run_ok(argv, env=env)
        finally:
            self.run.rmtree(os.path.join(self.work, "template-cache"))
        self.expect("stable", template)
        # Only a template that holds the stable set makes `replace` a replace (a failed one left an
        # empty venv, and its rounds would be warm installs under the wrong name).
        self.template = template

    def install_nightly(self, wl, tool, checked=False):
        """One timed install of the nightly set into self.venv from the tool's own cache, checked and recorded."""
        if tool.startswith("envfix"):
            argv, env = self.envfix_apply(tool, "nightly", self.cache(tool), checked=checked)
        else:
            argv, env = self.uv_install("nightly", self.cache(tool))
        res = self.timed(argv, env, phases=tool.startswith("envfix"))
        self.expect("nightly")
        res["evidence"] = self.evidence(self.venv, self.cache(tool))
        self.record(wl, tool, res)

    def round_warm(self, r, checked=False):
        # checked: envfix alone (its smoke test takes ~20 s a run; the base build's is the same test).
        if checked:
            if "envfix" in self.tools:
                self.attempt("checked", "envfix", lambda: self.one("checked", "envfix"))
            return
        tools = self.envfixes() + (["uv"] if self.uv else []) + (["uv-legacy"] if self.uv and "uv-legacy" in self.plan else [])
        for tool in self.order(tools, r):
            self.attempt("warm", tool, lambda tool=tool: self.one("warm", tool))

    def round_replace(self, r):
        tools = self.envfixes() + (["uv"] if self.uv else [])
        if not getattr(self, "template", None):
            return
        for tool in self.order(tools, r):
            def one(tool=tool):
                self.run.rmtree(self.venv)
                self.run.run_ok(["cp", "-al", self.template, self.venv])
                self.install_nightly("replace", tool)
            self.attempt("replace", tool, one)

    def round_resolve(self, r, warm):
        wl = "resolve-warm" if warm else "resolve-cold"
        for tool in self.order(self.envfixes() + (["uv"] if self.uv else []), r):
            self.attempt(wl, tool, lambda tool=tool: self.one(wl, tool))
        self.run.rmtree(os.path.join(self.work, "fresh-cache"))

    def round_resolve_parts(self, r):
        """What a warm `envfix plan` is made of, each part timed alone: the process's start, the same
        plan with --offline (no round trip at all), the target interpreter's start (envfix probes it),
        against uv's own start. One tool column each: the part's name is the workload."""
        py = os.path.join(self.work, "venv-empty")
        if not os.path.exists(py):
            self.fresh_venv(py)
        cache = os.path.join(self.work, "parts-cache")
        plan = [self.tools["envfix"], "plan", "torch", "torchvision", "torchaudio", "--channel", "nightly",
                "--mirror", self.mirror, "--python", os.path.join(py, "bin", "python"), "--cache-dir", cache,
                "--format", "json"]
        if r == 0:
            self.run.rmtree(cache)
            self.attempt("parts: prime", "envfix", lambda: self.timed(plan, self.env_nonvml))
            if self.a.callgrind:
                def callgrind():
                    # Where a warm plan's instructions go (the GPU machine has no perf): valgrind's
                    # callgrind from a directory holding valgrind.bin and its tool (VALGRIND_LIB).
                    vg = os.path.abspath(self.a.callgrind)
                    env = dict(self.env_nonvml, VALGRIND_LIB=vg)
                    res = subprocess.run([os.path.join(vg, "valgrind.bin"), "--tool=callgrind",
                                          f"--callgrind-out-file={os.path.abspath(self.a.callgrind_out)}", *plan],
                                         env=env, capture_output=True, text=True, timeout=120)
                    log(f"callgrind of a warm plan: rc={res.returncode}", (res.stderr or "").strip().splitlines()[-2:])
                self.attempt("parts: callgrind", "envfix", callgrind)
        jobs = [("parts: envfix --version", "envfix", [self.tools["envfix"], "--version"], self.env),
                ("parts: envfix plan (warm)", "envfix", plan, self.env_nonvml),
                ("parts: envfix plan --offline (warm)", "envfix", plan + ["--offline"], self.env_nonvml),
                ("parts: target python -c pass", "envfix", [os.path.join(py, "bin", "python"), "-c", "pass"], self.env)]
        if "envfix-base" in self.tools:  # the same offline plan (same cache) by the build before
            jobs.append(("parts: envfix plan --offline (warm)", "envfix-base",
                         [self.tools["envfix-base"], *plan[1:], "--offline"], self.env_nonvml))
        if self.uv:
            jobs.append(("parts: uv --version", "uv", [self.uv, "--version"], self.env))
        for wl, tool, argv, env in jobs:
            self.attempt(wl, tool, lambda wl=wl, tool=tool, argv=argv, env=env:
                         self.record(wl, tool, self.timed(argv, env, sync=False)))

    def round_doctor(self, r):
        for tool in [t for t in ("envfix", "envfix-base") if t in self.tools]:
            for repro in (False, True):
                def one(tool=tool, repro=repro):
                    argv = [self.tools[tool], "doctor", "--python", self.src_python, "--mirror", self.mirror,
                            "--cache-dir", self.cache(tool), "--format", "json"] + ([] if repro else ["--no-repro"])
                    subprocess.run(["sync"])
                    res = self.run.timed(argv, env=self.env, stdout_path=os.path.join(self.work, "doctor.json"))
                    try:
                        res["verdict"] = json.load(open(os.path.join(self.work, "doctor.json"))).get("verdict")
                    except (OSError, ValueError):
                        res["verdict"] = None
                    if res["verdict"] is None:
                        res["error"] = res["tail"][-800:]
                    res.pop("tail", None)
                    self.record("doctor" if repro else "doctor-no-repro", tool, res)
                self.attempt("doctor" if repro else "doctor-no-repro", tool, one)

    def alone_all(self, workloads):
        """The cross-check of every (workload, tool) that has rounds: cheap ones 3 times, cold once."""
        if not self.a.alone:
            return
        for wl in workloads:
            for tool in list(self.results["runs"].get(wl, {})):
                n = 1 if wl == "cold" or tool == "uv-legacy" else self.a.alone
                med = stats(self.results["runs"][wl][tool])[0]
                if self.left() < n * (med + 1.0) + 5:
                    self.results["notes"].append(f"alone {wl} {tool}: not run, the time ran out.")
                    continue
                self.attempt(f"alone {wl}", tool, lambda wl=wl, tool=tool, n=n: self.alone(wl, tool, n))
                self.save()

    def reserve(self, workloads):
        """Seconds the cross-check of these workloads will take, from the first round's times."""
        if not self.a.alone:
            return 0.0
        t = 0.0
        for wl in workloads:
            for tool, rs in self.results["runs"].get(wl, {}).items():
                n = 1 if wl == "cold" or tool == "uv-legacy" else self.a.alone
                t += n * (rs[0]["wall"] + 1.0)
        return t

    def main(self):
        a = self.a
        self.probe()
        self.save()
        plan = self.plan
        if "cold" in plan:
            last_round = 0.0
            for r in range(a.cold_rounds):
                # Room for one more round like the last one (its tools one after another), with a margin,
                # and for the cross-check of the cold installs.
                if r and self.left() < 1.3 * last_round + 20 + self.reserve(["cold"]):
                    self.results["notes"].append(f"cold: {r} round(s), the time ran out.")
                    break
                t_round = time.time()
                self.round_cold(r)
                last_round = time.time() - t_round
                self.save()
            self.alone_all(["cold"])  # leaves each tool's cache full: the warm workloads' caches
        later = [w for w in ("warm", "replace", "resolve-cold", "resolve-warm") if w in plan]
        if any(w in plan for w in ("warm", "replace", "resolve-warm", "checked")):
            t0 = time.time()
            self.attempt("prime", "all", self.prime)
            log(f"caches primed in {time.time() - t0:.0f}s")
        # One round of every workload after another: a cut run keeps whole rounds.
        rounds_done = 0
        last = {}  # the length of the last round with and without the checked/doctor workloads
        for r in range(a.rounds):
            heavy = r < a.checked_rounds and any(w in plan for w in ("checked", "doctor"))
            expect = last.get(heavy, last.get(True, 0.0) * 0.5 if last else 0.0)
            if r and self.left() < 1.2 * expect + 15 + self.reserve(later):
                self.results["notes"].append(f"{rounds_done} round(s) of the warm workloads: the time ran out.")
                break
            t_round = time.time()
            if "warm" in plan:
                self.round_warm(r)
            if "replace" in plan:
                self.round_replace(r)
            if "resolve-cold" in plan:
                self.round_resolve(r, warm=False)
            if "resolve-warm" in plan:
                self.round_resolve(r, warm=True)
            if "resolve-parts" in plan:
                self.round_resolve_parts(r)
            if "checked" in plan and r < a.checked_rounds:
                self.round_warm(r, checked=True)
            if "doctor" in plan and r < a.checked_rounds:
                self.round_doctor(r)
            rounds_done += 1
            last[heavy] = time.time() - t_round
            self.results["rounds"] = rounds_done
            self.save()
        self.alone_all([w for w in later if w != "replace"])
        self.results["placement"] = {"work": self.work, "filesystem": self.results["probe"].get("filesystem"),
                                     "same_fs_cache_venv": sorted({str(r.get("evidence", {}).get("same_fs"))
                                                                   for row in self.results["runs"].values()
                                                                   for rs in row.values() for r in rs if r.get("evidence")})}
        self.results["wall_s"] = round(time.time() - self.t_start, 1)
        self.server.stop()
        self.save()

    def cleanup(self):
        """Frees the disk for the next call: everything under the work directory."""
        if not self.a.keep_work:
            self.run.rmtree(self.work)


def disk_free(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize / 2**30


def meminfo(key):
    try:
        for line in open("/proc/meminfo"):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def machine_info():
    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines() if shutil.which("nvidia-smi") else []
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, kernel {platform.release()}"
            + (f", GPU {gpu[0]}" if gpu else ""))


# ---------------------------------------------------------------- report

def stats(rs, key="wall"):
    v = [r[key] for r in rs if r.get(key) is not None]
    return (statistics.median(v), min(v), max(v), len(v)) if v else None


def fs(x):
    return "–" if x is None else (f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s")


def cell(rs):
    s = stats(rs) if rs else None
    if not s:
        return "–"
    med, lo, hi, n = s
    return f"{fs(med)} ({fs(lo)}–{fs(hi)}, n={n})"


def phase_line(rs):
    keys = ["resolve_s", "download_s", "unpack_s", "kernel_check_s", "prepare_s", "uninstall_s", "install_s"]
    out = []
    for k in keys:
        v = [r["phases"][k] for r in rs if r.get("phases") and r["phases"].get(k) is not None]
        if v:
            out.append(f"{k[:-2]} {fs(statistics.median(v))}")
    return ", ".join(out) or "–"


def step_values(rs, k):
    """Step k of the transaction (applied.timings.steps) in each run that reports it."""
    v = [((r.get("phases") or {}).get("steps") or {}).get(k) for r in rs]
    return [x for x in v if x is not None]


def steps_line(rs):
    """The transaction's own steps (applied.timings.steps), medians; absent in builds before it."""
    keys = []
    for r in rs:
        for k in ((r.get("phases") or {}).get("steps") or {}):
            if k not in keys:
                keys.append(k)
    return ", ".join(f"{k} {fs(statistics.median(step_values(rs, k)))}" for k in keys) or "–"


TARGETS = {"warm": 0.5, "cold": 0.6, "cold-primed": 0.6, "resolve-warm": 1.0}


ALONE_TOLERANCE = 0.15
TIME_RESOLUTION_S = 0.01  # /usr/bin/time's %e


def alone_figures(R, A, wl, tool):
    """(harness median, alone median, relative difference, flagged) or None."""
    rec = (A.get(wl) or {}).get(tool)
    rs = (R.get(wl) or {}).get(tool)
    if not rec or not rec.get("time") or not rs:
        return None
    med, alone = stats(rs)[0], statistics.median(rec["time"])
    diff = (alone - med) / med if med else 0.0
    # A difference under the timer's resolution is not one.
    flagged = abs(diff) > ALONE_TOLERANCE and abs(alone - med) > TIME_RESOLUTION_S
    return med, alone, diff, flagged


def alone_verdict(R, A, wl):
    out = []
    for tool in (R.get(wl) or {}):
        f = alone_figures(R, A, wl, tool)
        if f:
            out.append(f"{tool} {fs(f[1])}" + (f" **{f[2]:+.0%}, differs**" if f[3] else " ok"))
    return "; ".join(out) or "–"


def alone_section(R, A):
    L = ["## Cross-check: each printed command alone", "",
         "After a workload's rounds, each tool's command (as printed under \"Commands\" below) ran alone from a "
         "shell, after its printed setup: `/usr/bin/time -f %e bash -c '<command>'`, 3 times (cold installs and "
         f"uv-legacy once). A tool whose alone figure is more than {ALONE_TOLERANCE:.0%} from its rounds' median "
         f"(and more than /usr/bin/time's {TIME_RESOLUTION_S * 1000:.0f} ms resolution) is flagged: then the rounds "
         "measured something the command alone does not.", "",
         "| job | tool | rounds (median) | alone (median; runs) | difference | |", "|---|---|---|---|---|---|"]
    flagged = []
    for wl, row in A.items():
        for tool, rec in row.items():
            f = alone_figures(R, A, wl, tool)
            if not f:
                continue
            med, alone, diff, bad = f
            runs = ", ".join(fs(x) for x in rec["time"])
            L.append(f"| {wl} | {tool} | {fs(med)} | {fs(alone)} ({runs}) | {diff:+.0%} | {'**differs**' if bad else 'ok'} |")
            if bad:
                flagged.append(f"{tool} ({wl})")
    L += ["", ("**Flagged**: " + ", ".join(flagged) + "." if flagged else "No tool's figures differ by more than "
               f"{ALONE_TOLERANCE:.0%}."), ""]
    return L


def conditions_section(results):
    """What a reader needs to know about the conditions, from what the run recorded."""
    env = results.get("environment") or {}
    R = results["runs"]
    links = {}
    for wl, row in R.items():
        for tool, rs in row.items():
            for r in rs:
                ev = r.get("evidence")
                if ev:
                    links.setdefault(tool, {}).setdefault(ev["link"], 0)
                    links[tool][ev["link"]] += 1
    same = sorted({str(r["evidence"].get("same_fs")) for row in R.values() for rs in row.values() for r in rs
                   if r.get("evidence") and "same_fs" in r["evidence"]})
    frees = [r["disk_free_gib"] for row in R.values() for rs in row.values() for r in rs if r.get("disk_free_gib") is not None]
    mems = [r["mem_available_kib"] for row in R.values() for rs in row.values() for r in rs if r.get("mem_available_kib")]
    inh = env.get("tool_vars_inherited") or {}
    L = ["## Conditions", "",
         "- **Environment**: every tool runs under `env -i` with only the variables printed with its command "
         "(below): " + ", ".join(f"`{k}`" for k in sorted(env.get("passed", {}))) + " passed from the harness's "
         "environment, plus the tool's own (`SSL_CERT_FILE` for the loopback server's CA; envfix `ENVFIX_NO_NVML=1`, pip "
         "`PIP_DISABLE_PIP_VERSION_CHECK=1`). Not passed (the harness's environment had them): "
         + (", ".join(f"`{k}={v}`" for k, v in inh.items()) if inh else "no UV_/PIP_/PYTHON/ENVFIX_ variable")
         + f"; {len(env.get('dropped_names', []))} variables in all.",
         "- **Cache and venv**: each tool's cache (`--cache-dir` under the work directory) and the venv on one filesystem "
         f"({results.get('probe', {}).get('filesystem', '?')}; same st_dev: {', '.join(same) or '?'}).",
         "- **Link mode**: each tool's default (envfix `auto`, uv `clone`: both try a copy-on-write clone, then hard "
         "links, then copies); the mode used, read back from the installed files (st_nlink > 1: hard links): "
         + "; ".join(f"{t}: " + ", ".join(f"{m} ×{n}" for m, n in sorted(d.items())) for t, d in sorted(links.items())) + ".",
         "- **Page cache**: not dropped between runs (warm is what a user re-installing has); `sync` before every timed "
         "run, so that no tool waits for another's write-back. Dirty memory, available memory and free disk before each "
         f"run are recorded: free disk {min(frees):.1f}–{max(frees):.1f} GiB, available memory "
         f"{min(mems) / 2**20:.0f}–{max(mems) / 2**20:.0f} GiB." if frees and mems else
         "- **Page cache**: not dropped between runs; `sync` before every timed run.",
         "- **Order**: the tools' order is reversed every other round (A B C, C B A, …); the work directory starts "
         "empty and is removed at the end (an earlier call's files filled the 64 GiB disk once).", ""]
    return L


def majority(rs, key):
    v = [((r.get("evidence") or {}).get(key)) for r in rs]
    v = [x for x in v if x is not None]
    return max(set(v), key=v.count) if v else None


def uv_section(results, before_results):
    """uv warm in the harness before and after issue 35, and what the difference was."""
    R = results["runs"]
    fixed, legacy = (R.get("warm") or {}).get("uv"), (R.get("warm") or {}).get("uv-legacy")
    if not fixed:
        return []
    inh = (results.get("environment") or {}).get("tool_vars_inherited") or {}
    L = ["## uv warm in the harness: before and after issue 35", "",
         "| harness | uv warm | cpu (user + sys) | link mode | .pyc written | from |", "|---|---|---|---|---|---|"]
    if before_results:
        old = (before_results["runs"].get("warm") or {}).get("uv") or []
        if old:
            L.append(f"| before (published) | {cell(old)} | {fs(statistics.median(r['cpu'] for r in old))} | not recorded | "
                     f"not recorded | `{os.path.basename(before_results.get('_path', ''))}` |")

    def row(name, rs, src):
        u = statistics.median(r.get("cpu_user", 0) for r in rs)
        sy = statistics.median(r.get("cpu_sys", 0) for r in rs)
        pyc = statistics.median((r.get("evidence") or {}).get("pyc", 0) for r in rs)
        return f"| {name} | {cell(rs)} | {fs(u)} + {fs(sy)} | {majority(rs, 'link') or '?'} | {pyc:.0f} | {src} |"
    if legacy:
        L.append(row("before, in this run (`uv-legacy`: the old environment)", legacy, "this run"))
    L.append(row("after (`uv`: `env -i`, default link mode)", fixed, "this run"))
    L += ["", "**What it was**: " + uv_cause(results, fixed, legacy, inh, before_results), ""]
    return L


def uv_cause(results, fixed, legacy, inh, before_results):
    mf = stats(fixed)[0]
    if not legacy:
        return "this run has no `uv-legacy` rows (run it with the warm workload and `uv-legacy` in --workloads)."
    ml = stats(legacy)[0]
    lf, ll = majority(fixed, "link"), majority(legacy, "link")
    pf = statistics.median((r.get("evidence") or {}).get("pyc", 0) for r in fixed)
    pl = statistics.median((r.get("evidence") or {}).get("pyc", 0) for r in legacy)
    uvvars = {k: v for k, v in inh.items() if k.startswith("UV_")}
    found = []
    if ll != lf:
        found.append(f"the link mode: under the old environment uv installed by **{ll}** from its cache, under "
                     f"`env -i` by **{lf}**" + (f" (the machine's environment sets `UV_LINK_MODE={inh['UV_LINK_MODE']}`, "
                                                 "which the old harness passed on)" if "UV_LINK_MODE" in inh else ""))
    if pl > 0 and pf == 0:
        found.append(f"byte-code: under the old environment uv compiled {pl:.0f} `.pyc` files after installing"
                     + (f" (`UV_COMPILE_BYTECODE={inh['UV_COMPILE_BYTECODE']}` in the machine's environment)"
                        if "UV_COMPILE_BYTECODE" in inh else ""))
    slower = ml > mf * (1 + ALONE_TOLERANCE)
    text = f"uv warm {fs(ml)} under the old harness's environment against {fs(mf)} under `env -i`, in the same rounds"
    if slower and found:
        return text + ": " + "; and ".join(found) + ". envfix had neither (it runs with its default link mode and " \
            "writes no byte-code)."
    if slower:
        return text + ". Neither the link mode nor byte-code differs; the old environment's uv variables were: " + \
            (", ".join(f"`{k}={v}`" for k, v in uvvars.items()) or "none") + " — bench/real_set.md, \"uv warm\", takes it further."
    old = ""
    if before_results and (before_results["runs"].get("warm") or {}).get("uv"):
        old = (f" The published figure ({fs(stats(before_results['runs']['warm']['uv'])[0])}) is not reproduced by the "
               "old environment here, so the environment was not the cause: what changed is the state the old runs "
               "started from (the harness now starts from an empty work directory and records free disk and memory "
               "before each run; bench/real_set.md, \"uv warm\").")
    seen = f" (what differed, at no cost here: {'; '.join(found)})" if found else ""
    return text + ": the same within " + f"{ALONE_TOLERANCE:.0%}{seen}." + old


def evidence_section(R):
    L = ["## What each install did (medians per workload)", "",
         "cpu from wait4 of the whole process tree; link mode and byte-code read back from the venv after the run; "
         "free disk and available memory just before it.", "",
         "| job | tool | wall | cpu user + sys | link mode | files (linked) | .pyc | free disk | available memory |",
         "|---|---|---|---|---|---|---|---|---|"]
    for wl in ("cold", "warm", "replace", "checked"):
        for tool, rs in (R.get(wl) or {}).items():
            if not any(r.get("evidence") or r.get("cpu_user") is not None for r in rs):
                continue
            ev = [r.get("evidence") or {} for r in rs]
            med = lambda k, src: statistics.median(x.get(k, 0) or 0 for x in src)  # noqa: E731
            mem = [r["mem_available_kib"] for r in rs if r.get("mem_available_kib")]
            free = [r["disk_free_gib"] for r in rs if r.get("disk_free_gib") is not None]
            L.append(f"| {wl} | {tool} | {fs(stats(rs)[0])} | {fs(med('cpu_user', rs))} + {fs(med('cpu_sys', rs))} | "
                     f"{majority(rs, 'link') or '–'} | {med('files', ev):.0f} ({med('linked', ev):.0f}) | {med('pyc', ev):.0f} | "
                     + (f"{min(free):.1f} GiB" if free else "–") + " | "
                     + (f"{min(mem) / 2**20:.0f} GiB" if mem else "–") + " |")
    return L + [""]


def commands_section(results):
    C = results.get("commands") or {}
    if not C:
        return []
    L = ["## Commands: paste to repeat", "",
         "Each timed run is the setup line, then the command (both through `bash -c`). The command carries its whole "
         "environment (`env -i ...`; uv-legacy: `env -u ... VAR=...` on top of the shell's own, as the old harness "
         "had it). Paths are the GPU machine's; stdout and stderr go to files as in the rounds.", ""]
    for wl, row in C.items():
        for tool, c in row.items():
            L += [f"**{wl}, {tool}**", "", "```sh", c["setup"], c["command"], "```", ""]
    return L


def write_report(results, path, before=None, before_results=None):
    R = results["runs"]
    L = ["# envfix on the real torch set (GPU machine)", "",
         f"Generated by `bench/real_set.py` from `{os.path.relpath(path_of(results), SRC) if path_of(results) else 'results'}`; "
         "do not edit by hand (edit `bench/real_set.py` and run it again).", "",
         f"- **Command** (on the GPU machine, repository root): `{results['command']}`; the report: "
         "`python3 bench/real_set.py --report-only RESULTS.json --report docs/performance-real.md`",
         f"- **Machine**: {results['machine']}; run {results['date']}",
         f"- **Filesystem of the work directory**: {results['probe'].get('filesystem', '?')}",
         f"- **Server**: {results.get('server')}",
         "- **Tools**: " + "; ".join(f"{k}: {v}" for k, v in results.get("versions", {}).items()),
         f"- **The set**: {results['index']['wheels']} wheels, {results['index']['bytes'] / 1e9:.2f} GB deflated, rebuilt "
         f"from the machine's installed torch in {results['index']['build_s']} s; stable "
         f"torch {results['index']['stable'].get('torch')}, nightly torch {results['index']['nightly'].get('torch')}; "
         f"{len(results['index']['closure'])} distributions in the closure",
         "- **Rounds**: n in each cell; tools alternate within each round; median (min–max, n). "
         "`sync` before every timed run." + (" " + " ".join(" ".join(n.split()) for n in results["notes"]) if results["notes"] else ""), ""]
    tools = ["envfix", "envfix-base", "uv", "pip"] + (["uv-legacy"] if any("uv-legacy" in row for row in R.values()) else [])
    A = results.get("alone") or {}
    if results.get("harness"):
        L += conditions_section(results)
    L += ["## Wall time", "",
          "| job | " + " | ".join(t for t in tools) + " | envfix/uv | target |" + (" cross-check (alone) |" if A else ""),
          "|---|" + "---|" * (len(tools) + 2 + bool(A))]
    for wl in ("cold", "cold-primed", "warm", "warm-after-uv-unsynced", "replace", "resolve-cold", "resolve-warm",
               "checked", "doctor-no-repro", "doctor"):
        if wl not in R:
            continue
        row = R[wl]
        ratio = "–"
        if row.get("envfix") and row.get("uv"):
            ratio = f"{stats(row['envfix'])[0] / stats(row['uv'])[0]:.2f}"
        tgt = TARGETS.get(wl)
        verdict = "–"
        if tgt and ratio != "–":
            verdict = f"≤ {tgt}: " + ("met" if float(ratio) <= tgt else "**missed**")
        L.append(f"| {wl} | " + " | ".join(cell(row.get(t)) for t in tools) + f" | {ratio} | {verdict} |"
                 + (f" {alone_verdict(R, A, wl)} |" if A else ""))
    L += ["", "envfix-base is the envfix before this change (same run, same machine); `checked` is envfix warm with the "
          "kernel check of every shared object against the GPU and the smoke test on the GPU (uv and pip have neither); "
          "`doctor` runs on the machine's own torch environment."
          + (" `uv-legacy` is uv warm as the harness ran it before issue 35 (below)." if "uv-legacy" in tools else ""), ""]
    if A:
        L += alone_section(R, A)
    if results.get("harness"):
        L += uv_section(results, before_results)
        L += evidence_section(R)
        L += commands_section(results)
    L += ["## envfix phases (median)", "", "resolve and prepare from its stderr, the rest from `apply --format json` "
          "(`applied.timings`; the steps of the transaction where the build reports them).", "",
          "| job | tool | phases | transaction steps |", "|---|---|---|---|"]
    for wl in ("cold", "cold-primed", "warm", "warm-after-uv-unsynced", "replace", "checked"):
        for t in ("envfix", "envfix-base"):
            if R.get(wl, {}).get(t):
                L.append(f"| {wl} | {t} | {phase_line(R[wl][t])} | {steps_line(R[wl][t])} |")
    parts = [wl for wl in R if wl.startswith("parts: ") and wl != "parts: prime"]
    if parts:
        L += ["", "## What a warm plan is made of (resolve-parts)", "",
              "Each part alone, in the same rounds: the process's start, the plan without the network, the target "
              "interpreter's start.", "", "| part | tool | time |", "|---|---|---|"]
        for wl in parts:
            for t, rs in R[wl].items():
                L.append(f"| {wl[len('parts: '):]} | {t} | {cell(rs)} |")
    if R.get("checked", {}).get("envfix") and R.get("warm", {}).get("envfix"):
        d = stats(R["checked"]["envfix"])[0] - stats(R["warm"]["envfix"])[0]
        kc, vf = step_values(R["checked"]["envfix"], "kernel-check"), step_values(R["checked"]["envfix"], "verify")
        kc_cold = step_values(R.get("cold", {}).get("envfix", []), "kernel-check")
        L += ["", f"The kernel check and smoke test together add {fs(d)} to a warm apply. The kernel check itself "
              f"(the transaction's `kernel-check` step; the JSON phase `kernel_check_s` also counts the `plan` step): "
              f"{fs(statistics.median(kc)) if kc else '–'} with the GPU verdict on (checked), "
              f"{fs(statistics.median(kc_cold)) if kc_cold else '–'} in the cold installs (target ≤ 0.5 s); the smoke test "
              f"(`verify`) {fs(statistics.median(vf)) if vf else '–'}."]
    L += ["", "## Peak RSS (median; whole process tree)", "", "| job | " + " | ".join(tools) + " |", "|---|" + "---|" * len(tools)]
    for wl, row in R.items():
        if wl.startswith("parts: "):
            continue
        cells = []
        for t in tools:
            s = stats(row.get(t, []), "rss_kib") if row.get(t) else None
            a = stats(row.get(t, []), "anon_kib") if row.get(t) else None
            cells.append(f"{s[0] / 1024:.0f} MiB (anon {a[0] / 1024:.0f})" if s and a else "–")
        L.append(f"| {wl} | " + " | ".join(cells) + " |")
    p = results.get("probe", {})
    if p:
        L += ["", "## The machine's filesystem (bench/real_set.py probe)", "",
              f"Per call, over 2,000 files: create+write {p.get('create_write_us', 0):.0f} µs, lstat {p.get('stat_us', 0):.1f} µs, "
              f"link {p.get('link_us', 0):.0f} µs, rename of a linked file {p.get('rename_linked_us', 0):.0f} µs, unlink "
              f"{p.get('unlink_us', 0):.0f} µs. link(2) moves the change time: {p.get('link_moves_ctime')}; rename(2) moves it: "
              f"{p.get('rename_moves_ctime')}. First `sync` (after the index build) {fs(p.get('sync_idle_s'))}, after 512 MiB written "
              f"({(p.get('dirty_after_512mib_kib') or 0) / 1024:.0f} MiB dirty) {fs(p.get('sync_512mib_s'))}."]
    if before:
        L += ["", before]
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def path_of(results):
    return results.get("_path")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", help="envfix release bundle (.tar.gz) to measure")
    ap.add_argument("--base-bundle", help="an earlier bundle, run beside it as envfix-base")
    ap.add_argument("--src-python", default="/opt/torch/.venv/bin/python", help="the interpreter whose torch is rebuilt")
    ap.add_argument("--site", default="", help="its site-packages (default: the interpreter's purelib)")
    ap.add_argument("--uv", default="")
    ap.add_argument("--work", default="/tmp/real-set")
    ap.add_argument("--results", default="results-real.json")
    ap.add_argument("--report", default="")
    ap.add_argument("--plan", choices=["custom", "h200"], default="custom",
                    help="h200: what one device call measures (bench/real_set.md, \"One call\"): cold (3 rounds), warm with "
                    "uv-legacy, resolve cold/warm (5 rounds), every printed command alone; --workloads/--*-rounds ignored")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cold-rounds", type=int, default=3)
    ap.add_argument("--pip-rounds", type=int, default=1, help="cold rounds that include pip (38 s each)")
    ap.add_argument("--checked-rounds", type=int, default=3)
    ap.add_argument("--deadline-s", type=float, default=480, help="start no new round after this many seconds")
    ap.add_argument("--workloads", default="cold,warm,replace,resolve-cold,resolve-warm,checked,doctor")
    ap.add_argument("--alone", type=int, default=3, help="cross-check: runs of each printed command alone "
                    "(cold and uv-legacy: once); 0: none")
    ap.add_argument("--server", default="auto", choices=["auto", "python", "nginx"])
    ap.add_argument("--synthetic", action="store_true", help="a tiny synthetic set instead of the machine's torch "
                    "(the whole harness without a GPU; bench/real_set.md, \"Locally\")")
    ap.add_argument("--envfix-args", default="", help="global options put before envfix's command (locally: "
                    "'--driver 580.159.04' for a machine without the driver)")
    ap.add_argument("--keep-work", action="store_true", help="leave the work directory (index, caches) in place")
    ap.add_argument("--before", default="", metavar="RESULTS", help="with --report-only: an earlier run whose uv rows "
                    "are the report's \"before\" (the harness before issue 35)")
    ap.add_argument("--report-only", metavar="RESULTS")
    ap.add_argument("--merge", nargs="*", default=[], help="with --report-only: later results whose workloads replace the first's")
    ap.add_argument("--exclude", nargs="*", default=[], metavar="FILE:WORKLOAD",
                    help="with --report-only: leave out that workload of that results file (the notes say why)")
    ap.add_argument("--same-build", action="store_true", help="with --merge: every run measured the same two builds, so "
                    "envfix's rounds add up too instead of the later run's replacing them")
    ap.add_argument("--callgrind", default="", help="resolve-parts: also run one warm plan under callgrind from this "
                    "directory (valgrind.bin, callgrind-amd64-linux, vgpreload_core-amd64-linux.so)")
    ap.add_argument("--callgrind-out", default="callgrind.plan.out")
    ap.add_argument("--notes", default="", help="a Markdown file appended to the report (before/after, analysis)")
    a = ap.parse_args()
    if a.report_only:
        res = json.load(open(a.report_only))
        res["_path"] = os.path.abspath(a.report_only)

        def drop(path, results):
            for x in a.exclude:
                f, _, wl = x.rpartition(":")
                if os.path.basename(f) == os.path.basename(path) and results["runs"].pop(wl, None) is not None:
                    res["notes"].append(f"{wl} of {os.path.basename(path)} left out (bench/real_set.md says why).")
        drop(a.report_only, res)
        for extra in a.merge:  # a later run: its envfix replaces the first's, the other tools' rounds add up
            later = json.load(open(extra))
            drop(extra, later)
            asked = re.search(r"--workloads (\S+)", later.get("command", ""))
            if "cold" in later["runs"] and asked and "cold" not in asked.group(1).split(","):
                # Its cold row is the untimed-cache priming install of each tool (one round), not
                # cold rounds: kept as its own row rather than replacing the first run's.
                later["runs"]["cold-primed"] = later["runs"].pop("cold")
            for wl, row in later["runs"].items():
                for tool, rs in row.items():
                    mine = res["runs"].setdefault(wl, {})
                    mine[tool] = rs if tool == "envfix" and not a.same_build else mine.get(tool, []) + rs
            what = "more rounds of every tool" if a.same_build else f"envfix in {', '.join(later['runs'])}, and more rounds of the others"
            res["notes"].append(f"{what}: from the later run {later['date']} "
                                f"({os.path.basename(extra)}, {later.get('rounds', '?')} round(s); "
                                f"command `{later['command']}`)" + (" " + " ".join(later["notes"]) if later["notes"] else ""))
        before = None
        if a.before:
            before = json.load(open(a.before))
            before["_path"] = os.path.abspath(a.before)
        write_report(res, a.report or "performance-real.md", open(a.notes).read() if a.notes else None, before)
        return
    if not a.bundle:
        ap.error("--bundle is required")
    a.envfix_args = shlex.split(a.envfix_args)
    if a.plan == "h200":
        a.workloads, a.rounds, a.cold_rounds, a.pip_rounds = "cold,warm,uv-legacy,resolve-cold,resolve-warm", 5, 3, 0
    a.results = os.path.abspath(a.results)
    a.bundle = os.path.abspath(a.bundle)
    rs = RealSet(a)
    try:
        rs.main()
    except Exception as e:  # keep what was measured
        rs.results["notes"].append(f"stopped early: {str(e)[:2000]}")
        rs.save()
        raise
    finally:
        rs.cleanup()
    rs.results["_path"] = a.results
    if a.report:
        write_report(rs.results, a.report)


if __name__ == "__main__":
    main()
