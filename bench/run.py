#!/usr/bin/env python3
"""envfix performance report: the one entry point (issue 11).

Generates the torch-like workload deterministically (bench/workload.py), serves it over HTTPS from nginx
on loopback (a CA made here), runs every tool on the same inputs in alternation (A B C A B C ..., after one
untimed warm-up each), takes medians/min/max of wall time and peak RSS (wait4 rusage of the whole process
tree), and writes docs/performance.md plus docs/performance.png (gnuplot) of the ratios.

  bench/run.py                                  # full report: --scale 1,0.05, 5 rounds
  bench/run.py --scale 0.05 --rounds 3          # quick check
  bench/run.py --tools envfix,pip,uv,floor --envfix /path/envfix --uv /usr/local/bin/uv \\
               --workloads resolve,resolve-findlinks,cold,warm,replace --label h200 \\
               --report /tmp/perf-h200.md            # another machine (then --merge its results JSON)
  bench/run.py --report-only --merge build/bench/results-h200.json   # rebuild the report from saved results

Workloads: resolve (index), resolve-findlinks, cold (install, empty caches), warm (reinstall into a fresh
venv, caches populated), replace (set A installed -> the other variant, warm caches), inspect
(envfix inspect of the CUDA libraries). Tools: envfix, pip (23.x, via --python), uv, floor (what the disk
and CPU allow: parallel unzip / cp -r / parallel read / parallel curl of the pages).
"""
import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import workload  # noqa: E402

ALL_WORKLOADS = ["resolve", "resolve-findlinks", "cold", "warm", "replace", "inspect"]
def pip_invocation(a):
    """`-m pip`, or the path of a pip package directory (python runs its __main__.py, which puts
    the directory's parent first on sys.path), to compare against a given pip release."""
    return [a.pip_dir] if getattr(a, "pip_dir", "") else ["-m", "pip"]


ALL_TOOLS = ["envfix", "pip", "uv", "floor"]
TARGETS = {  # workload -> {"pip": max ratio, "uv": ..., "floor": ...} from the issue
    "resolve": {"pip": 0.1},
    "resolve-findlinks": {"pip": 0.1},
    "cold": {"pip": 0.25, "uv": 1.0, "floor": 1.5},
    "warm": {"pip": 0.05, "uv": 1.0, "floor": 1.5},
    "replace": {"uv": 1.0, "floor": 1.5},
    "inspect": {"floor": 1.5},
}


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes

def timed(argv, env=None, cwd=None, stdout_path=None):
    """Runs argv; returns wall seconds, peak RSS (KiB, max over the process tree), cpu seconds, rc, tail."""
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    errf = open(os.path.join(WORK, "last-stderr.txt"), "wb")
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=errf, stdin=subprocess.DEVNULL)
    peak_anon = [0]
    done = threading.Event()
    sampler = threading.Thread(target=sample_anon, args=(p.pid, done, peak_anon), daemon=True)
    sampler.start()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    errf.close()
    if stdout_path:
        out.close()
    with open(os.path.join(WORK, "last-stderr.txt"), "rb") as f:
        tail = f.read()[-3000:].decode(errors="replace")
    return {"wall": wall, "rss_kib": ru.ru_maxrss, "anon_kib": peak_anon[0], "cpu": ru.ru_utime + ru.ru_stime,
            "cpu_user": ru.ru_utime, "cpu_sys": ru.ru_stime, "rc": p.returncode, "tail": tail}


def _tree(pid):
    pids, todo = [], [pid]
    while todo:
        q = todo.pop()
        pids.append(q)
        try:
            for t in os.listdir(f"/proc/{q}/task"):
                with open(f"/proc/{q}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return pids


def sample_anon(pid, done, peak):
    """Peak anonymous RSS (heap, stacks: not file-backed mappings) of the process tree, sampled every 20 ms.
    ru_maxrss also counts mmap'd file pages (wheels, libraries), which are reclaimable."""
    while not done.is_set():
        total = 0
        for q in _tree(pid):
            try:
                with open(f"/proc/{q}/status") as f:
                    for line in f:
                        if line.startswith("RssAnon:"):
                            total += int(line.split()[1])
                            break
            except OSError:
                pass
        peak[0] = max(peak[0], total)
        done.wait(0.02)


def run_ok(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout


def rmtree(path):
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=False)


# ---------------------------------------------------------------- nginx over HTTPS

class Nginx:
    """nginx over HTTPS on loopback (or bench/serve.py when nginx is absent or kind == "python")."""

    def __init__(self, root, prefix, kind="auto"):
        self.prefix = prefix
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        os.makedirs(os.path.join(prefix, "tmp"), exist_ok=True)
        p = lambda n: os.path.join(prefix, n)  # noqa: E731
        if not os.path.exists(p("server.pem")):
            with open(p("san.ext"), "w") as f:
                f.write("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                        "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
            for argv in (["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("ca.key"),
                          "-out", p("ca.pem"), "-days", "7", "-subj", "/CN=envfix bench CA", "-addext",
                          "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                         ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", p("server.key"),
                          "-out", p("server.csr"), "-subj", "/CN=127.0.0.1"],
                         ["openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey",
                          p("ca.key"), "-CAcreateserial", "-out", p("server.pem"), "-days", "7", "-extfile",
                          p("san.ext")]):
                run_ok(argv)
        self.ca = p("ca.pem")
        if kind == "python" or (kind == "auto" and not os.path.exists("/usr/sbin/nginx")):
            self.kind = "python (bench/serve.py, HTTP/1.1 + TLS)"
            self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "serve.py"), root, p("server.pem"),
                                          p("server.key")], stdout=subprocess.PIPE, text=True,
                                         stderr=open(p("logs/stderr.log"), "wb"))
            line = self.proc.stdout.readline()
            if not line.startswith("PORT "):
                raise RuntimeError("bench/serve.py did not start: " + open(p("logs/stderr.log")).read())
            self.port = int(line.split()[1])
            self.url = f"https://127.0.0.1:{self.port}"
            return
        self.kind = "nginx " + subprocess.run(["/usr/sbin/nginx", "-v"], capture_output=True,
                                               text=True).stderr.strip().split("/")[-1] + " (HTTP/2 + TLS)"
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        conf = f"""
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
  types {{ text/html html; application/octet-stream whl metadata; }}
  default_type application/octet-stream;
  access_log off;
  client_body_temp_path {prefix}/tmp/body;
  proxy_temp_path {prefix}/tmp/proxy;
  fastcgi_temp_path {prefix}/tmp/fastcgi;
  uwsgi_temp_path {prefix}/tmp/uwsgi;
  scgi_temp_path {prefix}/tmp/scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  map $http_accept $simple_index {{
    default index.html;
    "~application/vnd\\.pypi\\.simple\\.v1\\+json" index.json;
  }}
  server {{
    listen 127.0.0.1:{self.port} ssl http2;
    ssl_certificate {prefix}/server.pem;
    ssl_certificate_key {prefix}/server.key;
    root {root};
    etag on;
    location ~ ^/[^/]+/simple/ {{
      types {{ text/html html; application/vnd.pypi.simple.v1+json json; }}
      default_type text/html;
      try_files $uri$simple_index $uri/index.html $uri =404;
    }}
  }}
}}
"""
        with open(p("nginx.conf"), "w") as f:
            f.write(conf)
        self.proc = subprocess.Popen(["/usr/sbin/nginx", "-p", prefix, "-c", p("nginx.conf"), "-e",
                                      p("logs/error.log")], stdout=subprocess.DEVNULL,
                                     stderr=open(p("logs/stderr.log"), "wb"))
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("nginx did not start: " + open(p("logs/error.log")).read())
        self.url = f"https://127.0.0.1:{self.port}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# ---------------------------------------------------------------- the bench

class Bench:
    def __init__(self, args, scale):
        self.a = args
        self.scale = scale
        self.dir = os.path.join(WORK, f"scale-{scale:g}")
        self.data = os.path.join(self.dir, "data")
        self.python = args.python
        mm = run_ok([self.python, "-c", "import sys;print(f'{sys.version_info[0]}{sys.version_info[1]}')"]).strip()
        t0 = time.time()
        log(f"generating workload at scale {scale:g} in {self.data}")
        self.manifest = workload.generate(self.data, scale, f"cp{mm}", jobs=min(16, os.cpu_count() or 1))
        log(f"workload ready ({time.time() - t0:.0f}s)")
        self.server = Nginx(self.data, os.path.join(WORK, "nginx"), args.server)
        self.ca = self.server.ca
        self.index = {s: f"{self.server.url}/{s}/simple" for s in workload.SETS}
        self.env = dict(os.environ)
        for k in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL",
                  "UV_FIND_LINKS", "VIRTUAL_ENV", "CONDA_PREFIX", "ENVFIX_INDEX_URL", "ENVFIX_CACHE_DIR"):
            self.env.pop(k, None)
        self.env.update({"SSL_CERT_FILE": self.ca, "REQUESTS_CA_BUNDLE": self.ca, "PIP_CERT": self.ca,
                         "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_NO_COLOR": "1",
                         "NO_COLOR": "1", "UV_NO_PROGRESS": "1", "PYTHONDONTWRITEBYTECODE": "1"})
        self.venv = os.path.join(self.dir, "venv")
        self.caches = os.path.join(self.dir, "caches")
        self.unpacked = {}
        self.results = {}
        self.notes = []

    # -- helpers
    def fresh_venv(self, path=None):
        path = path or self.venv
        rmtree(path)
        run_ok([self.python, "-m", "venv", "--without-pip", path])
        return path

    def site(self, venv=None):
        return glob.glob(os.path.join(venv or self.venv, "lib", "python3*", "site-packages"))[0]

    def installed(self, venv=None):
        return sorted(os.path.basename(d)[:-len(".dist-info")] for d in
                      glob.glob(os.path.join(self.site(venv), "*.dist-info")))

    def expect_set(self, set_name, venv=None):
        want = sorted(f"{workload.escape(fn.split('-')[0])}-{fn.split('-')[1]}" for fn in self.manifest["sets"][set_name])
        got = self.installed(venv)
        if got != want:
            missing = sorted(set(want) - set(got))
            extra = sorted(set(got) - set(want))
            raise RuntimeError(f"installed set differs from {set_name}: missing {missing[:5]}, extra {extra[:5]}")

    def wheel_paths(self, set_name):
        return [os.path.join(self.data, "files", fn) for fn in self.manifest["sets"][set_name]]

    def unpack_tree(self, set_name):
        """A site-packages-like tree of the set (for the cp -r floor)."""
        if set_name not in self.unpacked:
            d = os.path.join(self.dir, f"unpacked-{set_name}")
            if not os.path.exists(os.path.join(d, ".done")):
                rmtree(d)
                floor_unzip(self.wheel_paths(set_name), d, os.cpu_count() or 1)
                open(os.path.join(d, ".done"), "w").close()
            self.unpacked[set_name] = d
        return self.unpacked[set_name]

    # -- commands per tool and workload
    def envfix(self, *args):
        return [self.a.envfix, *args]

    def pip(self, *args):
        return [self.python, *pip_invocation(self.a), "--python", os.path.join(self.venv, "bin", "python"), *args,
                "--cert", self.ca]

    def uv(self, *args):
        return [self.a.uv, "pip", *args, "--python", os.path.join(self.venv, "bin", "python")]

    def command(self, wl, tool, r):
        """(setup callable, argv or callable, check callable) for one timed run."""
        py = os.path.join(self.venv, "bin", "python")
        A, B = "cu128", "cu126"
        torch_b = f"torch=={self.manifest['torch_version'][B]}"
        cache = lambda name: os.path.join(self.caches, name)  # noqa: E731
        fresh_cache = os.path.join(self.dir, "fresh-cache")

        def fresh(*dirs):
            def f():
                for d in dirs:
                    rmtree(d)
            return f

        def with_venv(extra=None):
            def f():
                self.fresh_venv()
                if extra:
                    extra()
            return f

        def replace_setup():
            rmtree(self.venv)
            run_ok(["cp", "-a", self.template_a(), self.venv])

        if wl in ("resolve", "resolve-findlinks"):
            fl = os.path.join(self.data, "findlinks")
            src_e = ["--index-url", self.index[A]] if wl == "resolve" else ["--find-links", fl]
            src_p = ["--index-url", self.index[A]] if wl == "resolve" else ["--no-index", "--find-links", fl]
            setup = fresh(fresh_cache)
            if not os.path.exists(py):
                self.fresh_venv()
            if tool == "envfix":
                return setup, self.envfix("plan", "torch", *src_e, "--python", py, "--format", "json",
                                          "--cache-dir", fresh_cache), None
            if tool == "pip":
                return setup, self.pip("install", "--dry-run", "--ignore-installed", "--no-cache-dir",
                                       "--report", os.path.join(self.dir, "pip-report.json"), *src_p, "torch"), None
            if tool == "uv":
                return setup, self.uv("install", "--dry-run", "--cache-dir", fresh_cache, *src_p, "torch"), None
            if tool == "floor" and wl == "resolve":
                urls = [f"{self.index[A]}/{p}/" for p in sorted({w["project"] for fn, w in self.manifest["wheels"].items()
                                                                 if fn in self.manifest["sets"][A]})]
                urls += [f"{self.server.url}/files/{fn}.metadata" for fn in self.manifest["sets"][A]]
                argv = ["curl", "-s", "--fail", "--parallel", "--parallel-max", "16", "--http2", "--cacert", self.ca,
                        "-H", "Accept: application/vnd.pypi.simple.v1+json"]
                for u in urls:
                    argv += [u, "-o", "/dev/null"]
                return setup, argv, None
            return None
        if wl in ("cold", "warm"):
            if tool == "floor":
                if wl == "cold":
                    dst = os.path.join(self.dir, "floor-out")
                    return fresh(dst), ("unzip", self.wheel_paths(A), dst), None
                dst = os.path.join(self.dir, "floor-out")
                src = self.unpack_tree(A)
                return fresh(dst), ["cp", "-r", src, dst], None
            c = fresh_cache if wl == "cold" else cache(tool)
            setup = with_venv(fresh(fresh_cache)) if wl == "cold" else with_venv()
            check = lambda: self.expect_set(A)  # noqa: E731
            if tool == "envfix":
                return setup, self.envfix("apply", "torch", "--index-url", self.index[A], "--python", py, "--yes",
                                          "--no-verify", "--cache-dir", c, "--lockfile",
                                          os.path.join(self.dir, "envfix.lock"), "--format", "json"), check
            if tool == "pip":
                cache_args = ["--no-cache-dir"] if wl == "cold" else ["--cache-dir", c]
                return setup, self.pip("install", "--no-compile", *cache_args, "--index-url", self.index[A],
                                       "torch"), check
            if tool == "uv":
                return setup, self.uv("install", "--cache-dir", c, "--index-url", self.index[A], "torch"), check
            return None
        if wl == "replace":
            check = lambda: self.expect_set(B)  # noqa: E731
            if tool == "envfix":
                return replace_setup, self.envfix("apply", torch_b, "--index-url", self.index[B], "--python", py,
                                                  "--yes", "--no-verify", "--cache-dir", cache(tool), "--lockfile",
                                                  os.path.join(self.dir, "envfix.lock"), "--format", "json"), check
            if tool == "pip":
                return replace_setup, self.pip("install", "--no-compile", "--cache-dir", cache(tool),
                                               "--index-url", self.index[B], torch_b), check
            if tool == "uv":
                return replace_setup, self.uv("install", "--cache-dir", cache(tool), "--index-url", self.index[B],
                                              torch_b), check
            if tool == "floor":
                self.unpack_tree(B)
                return replace_setup, ("replace-floor",), None
            return None
        if wl == "inspect":
            files = inspect_files(self.a.inspect_dir)
            if tool == "envfix":
                return None, self.envfix("inspect", "--format", "json", *files), None
            if tool == "floor":
                return None, ("read", files), None
            return None
        raise ValueError(wl)

    def template_a(self):
        """A venv with set A installed by pip (the usual starting point), copied before each replace run."""
        t = os.path.join(self.dir, "venv-template-a")
        if not os.path.exists(os.path.join(t, ".done")):
            self.fresh_venv(self.venv)
            r = timed(self.pip("install", "--no-compile", "--cache-dir", os.path.join(self.caches, "pip"),
                               "--index-url", self.index["cu128"], "torch"), env=self.env)
            if r["rc"] != 0:
                raise RuntimeError("pip could not install set A for the replace template:\n" + r["tail"])
            self.expect_set("cu128")
            rmtree(t)
            os.rename(self.venv, t)
            open(os.path.join(t, ".done"), "w").close()
        return t

    def execute(self, argv):
        if isinstance(argv, tuple):  # in-process floors, timed the same way (a child process)
            kind = argv[0]
            if kind == "unzip":
                return timed([sys.executable, os.path.join(HERE, "floor.py"), "unzip", argv[2], *argv[1]],
                             env=self.env)
            if kind == "read":
                return timed([sys.executable, os.path.join(HERE, "floor.py"), "read", *argv[1]], env=self.env)
            if kind == "replace-floor":
                site = self.site()
                old = [os.path.join(site, n) for n in os.listdir(self.unpack_tree("cu128"))
                       if n != ".done" and not n.startswith(tuple(workload.escape(s) for s in workload.SMALL))]
                new = [os.path.join(self.unpack_tree("cu126"), n) for n in os.listdir(self.unpack_tree("cu126"))
                       if n != ".done" and not n.startswith(tuple(workload.escape(s) for s in workload.SMALL))]
                script = 'rm -rf "$@" && cp -r ' + " ".join(f"'{n}'" for n in new) + f" '{site}/'"
                return timed(["sh", "-c", script, "sh", *[o for o in old if os.path.exists(o)]], env=self.env)
        out = os.path.join(self.dir, "last-stdout.txt")
        return timed(argv, env=self.env, stdout_path=out)

    def run_workload(self, wl, tools):
        plan = [t for t in tools if self.command(wl, t, 0) is not None]
        if not plan:
            return
        res = {t: [] for t in plan}
        log(f"[{self.scale:g}] {wl}: tools {', '.join(plan)}; warm-up")
        for r in range(-1, self.a.rounds):  # round -1: untimed warm-up (page cache, populated caches)
            for t in plan:
                setup, argv, check = self.command(wl, t, r)
                if setup:
                    setup()
                m = self.execute(argv)
                ok = m["rc"] == 0
                if ok and check:
                    try:
                        check()
                    except RuntimeError as e:
                        ok, m["tail"] = False, str(e)
                if not ok:
                    log(f"  {t} FAILED (rc {m['rc']}): {m['tail'][-1500:]}")
                    res[t] = {"failed": m["tail"][-1500:]}
                    plan = [x for x in plan if x != t]
                    continue
                if wl in ("cold", "warm", "replace") and t == "envfix":
                    m["json"] = envfix_phases(os.path.join(self.dir, "last-stdout.txt"), m["tail"])
                m.pop("tail", None)
                if r >= 0:
                    res[t].append(m)
                    log(f"  round {r + 1} {t}: {m['wall']:.2f}s, {m['rss_kib'] / 1024:.0f} MiB")
        self.results[wl] = res
        for d in ("floor-out",):
            rmtree(os.path.join(self.dir, d))

    def profile(self):
        """strace -c and perf stat of a cold envfix install (this scale); returns text for the report."""
        out = {}
        py = os.path.join(self.venv, "bin", "python")
        fresh_cache = os.path.join(self.dir, "fresh-cache")
        argv = self.envfix("apply", "torch", "--index-url", self.index["cu128"], "--python", py, "--yes", "--no-verify",
                           "--cache-dir", fresh_cache, "--lockfile", os.path.join(self.dir, "envfix.lock"))
        if shutil.which("strace"):
            self.fresh_venv()
            rmtree(fresh_cache)
            so = os.path.join(self.dir, "strace.txt")
            subprocess.run(["strace", "-f", "-c", "-o", so, *argv], env=self.env, capture_output=True)
            out["strace"] = open(so).read()
        if shutil.which("perf"):
            self.fresh_venv()
            rmtree(fresh_cache)
            pd = os.path.join(self.dir, "perf.data")
            r = subprocess.run(["perf", "record", "-F", "999", "-o", pd, "--", *argv], env=self.env,
                               capture_output=True, text=True)
            if r.returncode == 0:
                rep = subprocess.run(["perf", "report", "-i", pd, "--stdio", "--no-children", "--sort",
                                      "dso,symbol", "--percent-limit", "1.5"],
                                     capture_output=True, text=True)
                out["perf"] = "\n".join(" ".join(line.split())[:110] for line in rep.stdout.splitlines()
                                        if line.strip() and not line.startswith("#"))[:4000]
            else:
                out["perf"] = "perf record failed: " + r.stderr[-500:]
        return out

    def close(self):
        self.server.stop()


def envfix_phases(stdout_path, stderr_tail):
    """Phase seconds of one `envfix apply`: resolve and prepare from its stderr lines, the rest from JSON."""
    import re
    out = {}
    for key, pat in (("resolve_s", r"Resolved \d+ packages? in ([0-9.]+)(ms|s)"),
                     ("prepare_s", r"Prepared \d+ packages? in ([0-9.]+)(ms|s)")):
        mt = re.search(pat, stderr_tail)
        if mt:
            out[key] = float(mt.group(1)) / (1000 if mt.group(2) == "ms" else 1)
    try:
        with open(stdout_path) as f:
            out.update(json.load(f).get("applied", {}).get("timings") or {})
    except (OSError, ValueError, AttributeError):
        pass
    return out or None


def inspect_files(d):
    seen, files = set(), []
    for p in sorted(glob.glob(os.path.join(d, "*.so*"))):
        real = os.path.realpath(p)
        if os.path.isfile(real) and real not in seen:
            seen.add(real)
            files.append(p)
    return files


def floor_unzip(wheels, dst, jobs):
    subprocess.run([sys.executable, os.path.join(HERE, "floor.py"), "unzip", dst, *wheels], check=True)


# ---------------------------------------------------------------- report

def med(ms, key="wall"):
    return statistics.median(m[key] for m in ms)


def fmt_s(x):
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def workload_table(res):
    rows = ["| workload | envfix | pip | uv | floor | envfix/pip | envfix/uv | envfix/floor | targets |",
            "|---|---|---|---|---|---|---|---|---|"]
    ratios = {}
    for wl in ALL_WORKLOADS:
        if wl not in res:
            continue
        cells = []
        for t in ALL_TOOLS:
            ms = res[wl].get(t)
            if ms is None or ms == []:
                cells.append("–")
            elif isinstance(ms, dict):
                cells.append("failed")
            else:
                cells.append(f"{fmt_s(med(ms))} ({fmt_s(min(m['wall'] for m in ms))}–{fmt_s(max(m['wall'] for m in ms))})")
        e = res[wl].get("envfix")
        rs = []
        verdicts = []
        for t in ("pip", "uv", "floor"):
            o = res[wl].get(t)
            if isinstance(e, list) and isinstance(o, list) and e and o:
                ratio = med(e) / med(o)
                ratios[(wl, t)] = ratio
                rs.append(f"{ratio:.2f}×")
                lim = TARGETS.get(wl, {}).get(t)
                if lim is not None:
                    verdicts.append(f"{t} ≤{lim}: {'met' if ratio <= lim else '**missed**'}")
            else:
                rs.append("–")
                lim = TARGETS.get(wl, {}).get(t)
                if lim is not None:
                    verdicts.append(f"{t} ≤{lim}: n/a")
        rows.append(f"| {wl} | " + " | ".join(cells + rs) + f" | {'; '.join(verdicts)} |")
    return "\n".join(rows), ratios


def rss_table(all_results):
    scales = sorted(all_results, key=lambda s: float(s))
    head = "| workload | tool | " + " | ".join(f"scale {s}" for s in scales) + " |"
    rows = [head, "|---|---|" + "---|" * len(scales)]
    for wl in ALL_WORKLOADS:
        for t in ALL_TOOLS:
            cells, any_ = [], False
            for s in scales:
                ms = all_results[s]["results"].get(wl, {}).get(t)
                if isinstance(ms, list) and ms:
                    anon = f" (anon {med(ms, 'anon_kib') / 1024:.0f})" if all("anon_kib" in m for m in ms) else ""
                    cells.append(f"{med(ms, 'rss_kib') / 1024:.0f} MiB{anon}")
                    any_ = True
                else:
                    cells.append("–")
            if any_:
                rows.append(f"| {wl} | {t} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def plot(ratios_by_label, png):
    ratios_by_label = {k: v for k, v in ratios_by_label.items() if v}  # runs without envfix: no bars
    if not ratios_by_label:
        return "No ratios to plot (envfix and another tool must both have run)."
    if not shutil.which("gnuplot"):
        return "gnuplot not found (apt-get install -y gnuplot-nox): no plot."
    dat = png + ".dat"
    labels = list(ratios_by_label)
    keys = sorted({k for r in ratios_by_label.values() for k in r}, key=lambda k: (ALL_WORKLOADS.index(k[0]), k[1]))
    with open(dat, "w") as f:
        f.write("case " + " ".join(f'"{lab}"' for lab in labels) + "\n")
        for k in keys:
            f.write(f'"{k[0]} / {k[1]}" ' + " ".join(
                f"{ratios_by_label[lab].get(k, float('nan')):.4f}" for lab in labels) + "\n")
    script = f"""
set terminal pngcairo size 1200,640 font "DejaVu Sans,10"
set output "{png}"
set title "envfix time / other tool's time (median; lower is better; 1 = parity)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y 10
set yrange [0.005:20]
set grid ytics
set xtics rotate by -35 scale 0
set key below
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb "#aa0000"
plot for [i=2:{len(labels) + 1}] "{dat}" using i:xtic(1) title columnheader(i)
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    os.remove(dat)
    if r.returncode != 0:
        return "gnuplot failed: " + r.stderr[-500:]
    return None


def machine_info():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.node()}: {os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {platform.platform()}"


def tool_versions(a, tools):
    v = {}
    try:
        if "envfix" not in tools:
            raise OSError
        bt = ""
        cache = os.path.join(os.path.dirname(os.path.dirname(a.envfix)), "CMakeCache.txt")
        if os.path.exists(cache):
            bt = ", " + next((ln.split("=", 1)[1].strip() for ln in open(cache)
                              if ln.startswith("CMAKE_BUILD_TYPE:")), "?") + " build"
        v["envfix"] = f"{a.envfix}{bt} (git " + subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"], capture_output=True,
                                                text=True).stdout.strip() + ")"
    except OSError:
        pass
    v["pip"] = subprocess.run([a.python, *pip_invocation(a), "--version"], capture_output=True, text=True).stdout.split(" from")[0]
    if "uv" in tools and a.uv and shutil.which(a.uv):
        v["uv"] = subprocess.run([a.uv, "--version"], capture_output=True, text=True).stdout.strip()
    v["python"] = subprocess.run([a.python, "--version"], capture_output=True, text=True).stdout.strip()
    return v


def describe_workload(data):
    m = data["manifest"]
    ws = m["wheels"]
    A = m["sets"]["cu128"]
    torch = [fn for fn in A if fn.startswith("torch-")][0]
    nv = [fn for fn in A if fn.startswith("nvidia")]
    sm = [fn for fn in A if not fn.startswith(("torch-", "nvidia"))]
    mb = lambda b: f"{b / 2**20:.0f} MiB" if b >= 2**20 else f"{b / 1024:.0f} KiB"  # noqa: E731
    tot = sum(ws[f]["size"] for f in A)
    unp = sum(ws[f]["unpacked"] for f in A)
    return (f"set A (cu128) = {len(A)} wheels, {mb(tot)} to download, {mb(unp)} unpacked: torch "
            f"{mb(ws[torch]['size'])} ({ws[torch]['members']} files, {mb(ws[torch]['unpacked'])} unpacked), "
            f"{len(nv)} nvidia-* wheels {mb(sum(ws[f]['size'] for f in nv))} "
            f"(largest {mb(max(ws[f]['size'] for f in nv))}), {len(sm)} small pure-Python wheels "
            f"{mb(sum(ws[f]['size'] for f in sm))}; set B (cu126) the same shapes with other versions")


def write_report(a, runs, path, extra_notes):
    png = os.path.splitext(path)[0] + ".png"
    lines = ["# envfix performance", "",
             f"Generated by `bench/run.py` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. "
             "Do not edit by hand: edit `bench/run.py` or `bench/analysis.md` and run it again.", ""]
    ratios_by_label = {}
    for label, run in runs.items():
        lines += [f"## Machine: {label}", "", f"- {run['machine']}",
                  "- tools: " + ", ".join(f"{k} = {v}" for k, v in run["versions"].items()),
                  f"- load average before / after: {run['load_before']} / {run['load_after']}",
                  f"- index server: {run.get('server', '?')} on loopback, a CA made by the run",
                  f"- rounds: {run['rounds']} per tool, alternating tools within each round after one untimed "
                  "warm-up round; cells are median (min–max) wall time", "",
                  "Command:", "", "```", run["command"], "```", ""]
        main_scale = run.get("main_scale") or max(run["scales"], key=float)
        for s in [main_scale] + [x for x in run["scales"] if x != main_scale]:
            sd = run["scales"][s]
            table, ratios = workload_table(sd["results"])
            if s == main_scale:
                ratios_by_label[f"{label} (scale {s})"] = ratios
            lines += [f"### Scale {s}", "", describe_workload(sd) + ".", "", table, ""]
            failed = [(wl, t, ms["failed"]) for wl, r in sd["results"].items() for t, ms in r.items()
                      if isinstance(ms, dict)]
            for wl, t, msg in failed:
                lines += [f"- {wl} / {t} failed: `{msg.strip().splitlines()[-1] if msg.strip() else '?'}`"]
            phases = [m.get("json") for m in sd["results"].get("cold", {}).get("envfix", []) if isinstance(m, dict)
                      and m.get("json")] if isinstance(sd["results"].get("cold", {}).get("envfix"), list) else []
            if phases:
                lines += ["", "envfix cold install phases (median; resolve/prepare from its stderr, install/uninstall "
                          "from `apply --format json`): " + ", ".join(
                              f"{k} {statistics.median(p[k] for p in phases if k in p):.2f} s" for k in phases[0]
                              if isinstance(phases[0][k], (int, float))), ""]  # not the nested `steps`
            lines += [""]
        lines += ["### Peak RSS (median of the rounds; whole process tree)", "",
                  "`ru_maxrss` from wait4; in parentheses the peak anonymous RSS (heap and stacks, sampled every "
                  "20 ms from /proc), which leaves out mmap'd wheels and libraries (file-backed, reclaimable).", "",
                  rss_table(run["scales"]), ""]
        if run.get("profile"):
            pr = run["profile"]
            lines += [f"### Profile of one cold envfix install (scale {pr['scale']})", ""]
            if pr.get("strace"):
                lines += ["`strace -f -c` (syscalls by time):", "", "```",
                          "\n".join(pr["strace"].strip().splitlines()[:22]), "```", ""]
            if pr.get("perf"):
                lines += ["`perf record` then `perf report --sort dso,symbol` (self time ≥ 1.5 %):", "", "```",
                          pr["perf"], "```", ""]
    err = plot(ratios_by_label, png)
    lines += ["## Ratios", "", f"![ratios]({os.path.basename(png)})" if err is None else err, "",
              "Each bar is envfix's median time divided by the other tool's median time on the same workload "
              "(log scale; below 1 envfix is faster).", ""]
    analysis = os.path.join(HERE, "analysis.md")
    if os.path.exists(analysis):
        lines += [open(analysis).read().rstrip(), ""]
    lines += extra_notes
    with open(path, "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    log(f"wrote {path}" + ("" if err else f" and {png}"))


# ---------------------------------------------------------------- main

WORK = os.path.join(SRC, "build", "bench", "work")


def main():
    global WORK
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", default="1,0.05", help="comma-separated scales (1 = full); the first is the main table")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--other-scales-tools", default="",
                    help="tools for the scales after the first (default: all of --tools), e.g. envfix,floor "
                    "to show envfix's memory at a second scale without re-timing pip")
    ap.add_argument("--tools", default="envfix,pip,uv,floor")
    ap.add_argument("--workloads", default=",".join(ALL_WORKLOADS))
    ap.add_argument("--envfix", default=os.path.join(SRC, "build", "bench", "cli", "envfix"))
    ap.add_argument("--uv", default=shutil.which("uv") or "/usr/local/bin/uv")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the venvs and for pip")
    ap.add_argument("--pip-dir", default="", help="run pip from this unpacked pip package directory "
                    "(e.g. a copy of pip 23.2.1's site-packages/pip) instead of `python -m pip`")
    ap.add_argument("--server", default="auto", choices=["auto", "nginx", "python"],
                    help="HTTPS index server: nginx (default when installed) or bench/serve.py")
    ap.add_argument("--inspect-dir", default="/usr/local/cuda/lib64")
    ap.add_argument("--work", default=WORK, help="where workloads, venvs and caches go (large)")
    ap.add_argument("--label", default=platform.node() or "this machine")
    ap.add_argument("--report", default=os.path.join(SRC, "docs", "performance.md"))
    ap.add_argument("--results", help="results JSON to write (default WORK/results-LABEL.json)")
    ap.add_argument("--merge", default="", help="comma-separated results JSON files of other runs to include")
    ap.add_argument("--report-only", action="store_true", help="no runs: rebuild the report from --merge files")
    ap.add_argument("--profile", action="store_true", help="strace -c and perf of a cold envfix install at the "
                    "smallest scale")
    ap.add_argument("--keep", action="store_true", help="keep venvs and caches (workloads are always kept)")
    a = ap.parse_args()
    WORK = os.path.abspath(a.work)
    os.makedirs(WORK, exist_ok=True)
    runs = {}
    if not a.report_only:
        tools = [t for t in a.tools.split(",") if t]
        if "uv" in tools and not (a.uv and os.path.exists(a.uv)):
            log(f"uv not found at {a.uv}: skipping uv")
            tools.remove("uv")
        if "envfix" in tools and not os.access(a.envfix, os.X_OK):
            sys.exit(f"envfix binary not found: {a.envfix} (cmake -S . -B build/bench -G Ninja "
                     "-DCMAKE_BUILD_TYPE=Release -DENVFIX_TESTS=OFF && cmake --build build/bench --target envfix)")
        wls = [w for w in a.workloads.split(",") if w]
        run = {"machine": machine_info(), "versions": tool_versions(a, tools), "load_before": " ".join(
            f"{x:.1f}" for x in os.getloadavg()), "rounds": a.rounds, "scales": {},
            "command": "bench/run.py " + " ".join(sys.argv[1:])}
        scales = [float(s) for s in a.scale.split(",")]
        run["main_scale"] = f"{scales[0]:g}"
        other_tools = [t for t in (a.other_scales_tools or ",".join(tools)).split(",") if t in tools]
        for s in scales:
            b = Bench(a, s)
            try:
                for wl in wls:
                    b.run_workload(wl, tools if s == scales[0] else other_tools)
                run["server"] = b.server.kind
                run["scales"][f"{s:g}"] = {"results": b.results, "manifest": {
                    "sets": b.manifest["sets"], "wheels": b.manifest["wheels"]}}
                if a.profile and s == min(scales) and "envfix" in tools:
                    log("profiling a cold envfix install")
                    run["profile"] = dict(b.profile(), scale=f"{s:g}")
            finally:
                b.close()
                if not a.keep:
                    for d in ("venv", "caches", "fresh-cache", "floor-out"):
                        rmtree(os.path.join(b.dir, d))
        run["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
        runs[a.label] = run
        rpath = a.results or os.path.join(WORK, f"results-{a.label}.json")
        with open(rpath, "w") as f:
            json.dump({a.label: run}, f, indent=1)
        log(f"results in {rpath}")
    for p in [p for p in a.merge.split(",") if p]:
        with open(p) as f:
            runs.update(json.load(f))
    if not runs:
        sys.exit("nothing to report")
    write_report(a, runs, a.report, [])


if __name__ == "__main__":
    main()
