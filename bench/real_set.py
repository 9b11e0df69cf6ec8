#!/usr/bin/env python3
"""The real torch set on the GPU machine: envfix against uv and pip (issue 24).

The set is rebuilt from the machine's installed torch/torchvision/torchaudio and their whole closure
(tests/gpu/real_index.py, wheels deflated here as PyTorch's are; each wheel's METADATA also published
as a PEP 658 file as download.pytorch.org does), served over HTTPS on loopback (bench/run.py's
server: nginx if the machine has it, else bench/serve.py), and every tool runs on the same inputs in
alternation (A B C A B C ...), one round after another, with `sync` before each timed run (no tool
pays for another's write-back). Workloads:

  cold      install into a fresh venv, every cache empty (pip: --no-cache-dir)
  warm      install into a fresh venv, caches full
  replace   the stable set installed (a hard-linked copy of a template venv) -> the nightly set
  resolve-cold / resolve-warm   plan only (envfix plan, uv pip install --dry-run), caches empty / full
  resolve-parts  a warm plan taken apart: process start, the plan --offline, the interpreter's start
  checked   envfix warm with what a user gets by default: the kernel check against the GPU and the
            smoke test on it (uv and pip have neither)
  doctor    envfix doctor on the machine's own torch environment, with and without the repro

envfix runs with the kernel check and smoke test off (ENVFIX_NO_NVML=1, --no-verify) except in
`checked` and `doctor`, as uv and pip work. With --base-bundle an earlier envfix runs beside it
(tool "envfix-base"): the before/after of this change in the same run.

  # on the GPU machine (repository root; bundles built with `cmake --build --preset release --target package`):
  python3 bench/real_set.py --bundle NEW.tar.gz --base-bundle OLD.tar.gz --out OUTDIR [--rounds 5]
  # here, from what came back:
  python3 bench/real_set.py --report-only OUTDIR/results-real.json --report docs/performance-real.md
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


# ---------------------------------------------------------------- one machine's run

class RealSet:
    def __init__(self, a):
        import run  # bench/run.py: timed(), the HTTPS server, envfix_phases()
        self.run = run
        self.a = a
        self.work = os.path.abspath(a.work)
        run.WORK = self.work
        os.makedirs(self.work, exist_ok=True)
        self.t_start = time.time()
        self.results = {"machine": machine_info(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"), "command": " ".join(sys.argv), "runs": {}, "notes": [], "probe": {}}
        self.tools = {}
        for label, bundle in (("envfix", a.bundle), ("envfix-base", a.base_bundle)):
            if not bundle:
                continue
            d = os.path.join(self.work, label)
            run.rmtree(d)
            os.makedirs(d)
            subprocess.run(["tar", "-xzf", bundle, "-C", d], check=True)
            self.tools[label] = glob.glob(os.path.join(d, "envfix-*", "bin", "envfix"))[0]
        self.uv = a.uv or shutil.which("uv") or next(iter(glob.glob(os.path.join(os.path.dirname(a.src_python), "uv"))), "")
        self.src_python = a.src_python
        self.site = a.site or subprocess.run([a.src_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                             capture_output=True, text=True, check=True).stdout.strip()
        self.results["versions"] = self.versions()
        t0 = time.time()
        self.index_dir = os.path.join(self.work, "index")
        run.rmtree(self.index_dir)
        log("rebuilding the real set from", self.site)
        self.summary = build_index(a.src_python, self.site, self.index_dir)
        self.results["index"] = dict(self.summary, build_s=round(time.time() - t0, 1))
        log(f"index ready in {time.time() - t0:.0f}s: {self.summary['wheels']} wheels, {self.summary['bytes'] / 1e9:.2f} GB")
        self.server = run.Nginx(self.index_dir, os.path.join(self.work, "server"), "auto")
        self.results["server"] = self.server.kind
        self.mirror = self.server.url + "/whl"
        self.idx = {"stable": f"{self.mirror}/cu130", "nightly": f"{self.mirror}/nightly/cu130"}
        env = dict(os.environ)
        for k in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL",
                  "UV_FIND_LINKS", "VIRTUAL_ENV", "CONDA_PREFIX", "ENVFIX_INDEX_URL", "ENVFIX_CACHE_DIR", "ENVFIX_MIRROR",
                  "PYTHONPATH"):
            env.pop(k, None)
        ca = self.server.ca
        env.update({"SSL_CERT_FILE": ca, "REQUESTS_CA_BUNDLE": ca, "PIP_CERT": ca, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                    "PIP_NO_INPUT": "1", "NO_COLOR": "1", "UV_NO_PROGRESS": "1", "PYTHONDONTWRITEBYTECODE": "1"})
        self.env = env
        self.env_nonvml = dict(env, ENVFIX_NO_NVML="1")
        self.pins = {ch: [f"{n}=={v}" for n, v in sorted(self.summary[ch].items())] for ch in ("stable", "nightly")}
        self.caches = os.path.join(self.work, "caches")
        self.failed = set()
        self.venv = os.path.join(self.work, "venv")

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
        argv = [self.tools[tool], "apply", "torch", "torchvision", "torchaudio", "--channel", channel, "--mirror",
                self.mirror, "--python", os.path.join(python or self.venv, "bin", "python"), "--yes", "--cache-dir",
                cache, "--lockfile", os.path.join(self.work, f"{tool}.lock"), "--format", "json"]
        return (argv if checked else argv + ["--no-verify"]), (self.env if checked else self.env_nonvml)

    def uv_install(self, channel, cache, *extra):
        return [self.uv, "pip", "install", "--python", os.path.join(self.venv, "bin", "python"), "--cache-dir", cache,
                "--index-url", self.idx[channel], *extra, *self.pins[channel]], self.env

    def pip_install(self, channel, *extra):
        return [self.src_python, "-m", "pip", "--python", os.path.join(self.venv, "bin", "python"), "install",
                "--no-compile", "--index-url", self.idx[channel], "--cert", self.server.ca, *extra,
                *self.pins[channel]], self.env

    def cache(self, tool):
        return os.path.join(self.caches, tool)

    def timed(self, argv, env, phases=False, sync=True):
        if sync:
            subprocess.run(["sync"])
        dirty = meminfo("Dirty")
        out = os.path.join(self.work, "last-stdout.json")
        r = self.run.timed(argv, env=env, stdout_path=out)
        r["dirty_before_kib"] = dirty
        if r["rc"] != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({r['rc']}):\n{r['tail']}")
        if phases:
            r["phases"] = self.run.envfix_phases(out, r["tail"])
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
        log(f"{wl} {tool}: {r['wall']:.2f}s" + (f" {r.get('phases')}" if r.get("phases") else ""))

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
    def round_cold(self, r):
        tools = [t for t in ("envfix", "envfix-base") if t in self.tools] + (["uv"] if self.uv else [])
        if r < self.a.pip_rounds:
            tools.append("pip")
        for tool in tools:
            def one(tool=tool):
                self.fresh_venv()
                fresh = self.cache(tool)  # emptied here; the last round's is the warm workloads' cache
                self.run.rmtree(fresh)
                if tool.startswith("envfix"):
                    argv, env = self.envfix_apply(tool, "nightly", fresh)
                elif tool == "uv":
                    argv, env = self.uv_install("nightly", fresh)
                else:
                    argv, env = self.pip_install("nightly", "--no-cache-dir")
                res = self.timed(argv, env, phases=tool.startswith("envfix"))
                self.expect("nightly")
                self.record("cold", tool, res)
            self.attempt("cold", tool, one)
            if tool == "uv" and r == 0 and "envfix" in self.tools:
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
        for tool in [t for t in self.tools] + (["uv"] if self.uv else []):
            if os.path.isdir(self.cache(tool)):
                continue
            self.fresh_venv()
            self.install_nightly("cold", tool)  # no cold round ran: the priming install is one
        template = os.path.join(self.work, "template-stable")
        self.fresh_venv(template)
        argv, env = self.envfix_apply("envfix", "stable", os.path.join(self.work, "template-cache"), python=template)
        argv += ["--link-mode", "copy"]
        self.run.run_ok(argv, env=env)
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
        self.record(wl, tool, res)

    def round_warm(self, r, checked=False):
        # checked: envfix alone (its smoke test takes ~20 s a run; the base build's is the same test).
        tools = [t for t in (("envfix",) if checked else ("envfix", "envfix-base")) if t in self.tools]
        if not checked and self.uv:
            tools.append("uv")
        wl = "checked" if checked else "warm"
        for tool in tools:
            def one(tool=tool):
                self.fresh_venv()
                self.install_nightly(wl, tool, checked)
            self.attempt(wl, tool, one)

    def round_replace(self, r):
        tools = [t for t in ("envfix", "envfix-base") if t in self.tools] + (["uv"] if self.uv else [])
        if not getattr(self, "template", None):
            return
        for tool in tools:
            def one(tool=tool):
                self.run.rmtree(self.venv)
                self.run.run_ok(["cp", "-al", self.template, self.venv])
                self.install_nightly("replace", tool)
            self.attempt("replace", tool, one)

    def round_resolve(self, r, warm):
        tools = [t for t in ("envfix", "envfix-base") if t in self.tools] + (["uv"] if self.uv else [])
        py = os.path.join(self.work, "venv-empty")
        if not os.path.exists(py):
            self.fresh_venv(py)
        for tool in tools:
            c = self.cache(tool) if warm else os.path.join(self.work, "fresh-cache")
            if not warm:
                self.run.rmtree(c)
            if tool.startswith("envfix"):
                argv = [self.tools[tool], "plan", "torch", "torchvision", "torchaudio", "--channel", "nightly",
                        "--mirror", self.mirror, "--python", os.path.join(py, "bin", "python"), "--cache-dir", c,
                        "--format", "json"]
                env = self.env_nonvml
            else:
                argv = [self.uv, "pip", "install", "--dry-run", "--python", os.path.join(py, "bin", "python"),
                        "--cache-dir", c, "--index-url", self.idx["nightly"], *self.pins["nightly"]]
                env = self.env
            wl = "resolve-warm" if warm else "resolve-cold"
            self.attempt(wl, tool, lambda argv=argv, env=env, tool=tool, wl=wl: self.record(wl, tool, self.timed(argv, env)))
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

    def main(self):
        a = self.a
        self.probe()
        self.save()
        plan = [w for w in a.workloads.split(",") if w]
        if "cold" in plan:
            last_round = 0.0
            for r in range(a.cold_rounds):
                # Room for one more round like the last one (its tools one after another), with a margin.
                if r and self.left() < 1.3 * last_round + 20:
                    self.results["notes"].append(f"cold: {r} round(s), the time ran out.")
                    break
                t_round = time.time()
                self.round_cold(r)
                last_round = time.time() - t_round
                self.save()
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
            if r and self.left() < 1.2 * expect + 15:
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
        self.server.stop()
        self.save()


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


def write_report(results, path, before=None):
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
    tools = ["envfix", "envfix-base", "uv", "pip"]
    L += ["## Wall time", "",
          "| job | " + " | ".join(t for t in tools) + " | envfix/uv | target |", "|---|" + "---|" * (len(tools) + 2)]
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
        L.append(f"| {wl} | " + " | ".join(cell(row.get(t)) for t in tools) + f" | {ratio} | {verdict} |")
    L += ["", "envfix-base is the envfix before this change (same run, same machine); `checked` is envfix warm with the "
          "kernel check of every shared object against the GPU and the smoke test on the GPU (uv and pip have neither); "
          "`doctor` runs on the machine's own torch environment.", ""]
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
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cold-rounds", type=int, default=3)
    ap.add_argument("--pip-rounds", type=int, default=1, help="cold rounds that include pip (38 s each)")
    ap.add_argument("--checked-rounds", type=int, default=3)
    ap.add_argument("--deadline-s", type=float, default=480, help="start no new round after this many seconds")
    ap.add_argument("--workloads", default="cold,warm,replace,resolve-cold,resolve-warm,checked,doctor")
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
        write_report(res, a.report or "performance-real.md", open(a.notes).read() if a.notes else None)
        return
    if not a.bundle:
        ap.error("--bundle is required")
    a.results = os.path.abspath(a.results)
    rs = RealSet(a)
    try:
        rs.main()
    except Exception as e:  # keep what was measured
        rs.results["notes"].append(f"stopped early: {str(e)[:2000]}")
        rs.save()
        raise
    if a.report:
        write_report(rs.results, a.report)


if __name__ == "__main__":
    main()
