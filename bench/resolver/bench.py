#!/usr/bin/env python3
"""envfix plan vs pip 23.2.1 `install --dry-run --report` on realistic page sizes (not a test).

Builds an index whose pages look like real ones (hundreds of files per project: many versions x
several cp/platform tags, PEP 658 metadata on half of them), serves it over HTTP (python -m
http.server), and times both resolvers cold (empty caches) and warm (second run, same caches) on the
same request. Prints one table and the envfix/pip time ratio.

Usage: bench.py --envfix build/resolver/cli/envfix [--projects 12] [--versions 60] [--runs 3] [--delay-ms 20]

--delay-ms N answers every request N ms late, like an index across a network (the dependency chain
is --projects deep, so a resolver that asks level by level pays N ms per level).
"""
import argparse, functools, http.server, json, os, random, shutil, statistics, subprocess, sys, tempfile, \
    threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "support"))
import index_builder  # noqa: E402

TAGS = ["cp39-cp39-manylinux_2_17_x86_64", "cp310-cp310-manylinux_2_17_x86_64", "cp311-cp311-manylinux_2_17_x86_64",
        "cp312-cp312-manylinux_2_17_x86_64", "cp311-cp311-manylinux_2_28_aarch64", "cp311-cp311-win_amd64"]


def make_spec(projects, versions, seed=1):
    rng = random.Random(seed)
    names = [f"proj{i}" for i in range(projects)]
    pkgs = []
    for i, n in enumerate(names):
        for v in range(versions):
            ver = f"{1 + v // 20}.{(v // 5) % 4}.{v % 5}"
            deps = [f"{names[j]}>={1 + rng.randrange(2)}.0" for j in range(i + 1, min(projects, i + 3))]
            pkgs.append({"name": n, "version": ver, "tags": TAGS, "requires_dist": deps,
                         "requires_python": ">=3.9", "metadata_file": v % 2 == 0})
    return {"packages": pkgs, "html": True, "json": False, "href_style": "relative"}, names[0]


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 drops the SYNs of parallel connections: 1 s retransmits
    daemon_threads = True


class DelayedHandler(http.server.SimpleHTTPRequestHandler):
    delay_s = 0.0

    def log_message(self, *a):
        pass

    def send_head(self):
        time.sleep(self.delay_s)
        return super().send_head()


def timed(argv, env):
    t = time.perf_counter()
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{r.stderr[-2000:]}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--envfix", required=True)
    ap.add_argument("--projects", type=int, default=12)
    ap.add_argument("--versions", type=int, default=60)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="envfix-bench-")
    spec, root = make_spec(a.projects, a.versions)
    index_builder.build(spec, os.path.join(work, "idx"))
    # Pages dated an hour ahead have no heuristic freshness: every warm run revalidates every page.
    ahead = time.time() + 3600
    for d, _, fs in os.walk(os.path.join(work, "idx")):
        for f in fs:
            if f.startswith("index."):
                os.utime(os.path.join(d, f), (ahead, ahead))
    DelayedHandler.delay_s = a.delay_ms / 1000.0
    server = Server(("127.0.0.1", 0), functools.partial(DelayedHandler, directory=os.path.join(work, "idx")))
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{port}/simple/"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        rows = {}
        for tool in ("envfix", "pip"):
            cold, warm = [], []
            for run in range(a.runs):
                cache = os.path.join(work, f"cache-{tool}-{run}")
                if tool == "envfix":
                    argv = [a.envfix, "plan", root, "--index-url", url, "--cache-dir", cache, "--format", "json",
                            "--python", sys.executable]
                else:
                    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                            "--report", os.path.join(work, "r.json"), "--index-url", url, "--cache-dir", cache, root]
                cold.append(timed(argv, env))
                warm.append(timed(argv, env))
            rows[tool] = (statistics.median(cold), statistics.median(warm))
        files = len(spec["packages"]) * len(TAGS)
        print(f"index: {a.projects} projects x {a.versions} versions x {len(TAGS)} tags = {files} files "
              f"(~{len(TAGS) * a.versions} per page); {a.delay_ms:g} ms added to every request")
        print(f"{'tool':8} {'cold s':>8} {'warm s':>8}")
        for tool, (c, w) in rows.items():
            print(f"{tool:8} {c:8.3f} {w:8.3f}")
        print(f"ratio envfix/pip: cold {rows['envfix'][0] / rows['pip'][0]:.2f}, warm {rows['envfix'][1] / rows['pip'][1]:.2f}")
    finally:
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
