"""Deterministic generator of the torch-like benchmark workload (stdlib only; used by bench/run.py).

Two variant sets, each on its own PEP 503/691/658 index (`<out>/cu128/simple/`, `<out>/cu126/simple/`),
wheels under `<out>/files/`, and a find-links folder `<out>/findlinks/` holding set A's wheels:
- torch (one big wheel: a few large shared objects plus ~12,000 small files at scale 1),
- twelve CUDA-runtime-like `nvidia-*-cu12` wheels (large shared objects, versions differ per set),
- twenty small pure-Python dependencies (same files in both sets).
Shared objects are written as 64 KiB blocks that are part random, part a repeated 1 KiB pattern, so they
deflate about 2.2x like real CUDA libraries. The large members are deflated at level 1 (generation speed;
inflate speed barely depends on the level), small files at level 6.
Pages carry realistic noise: thousands of anchors for other Pythons, platforms, older releases and
nightly dev builds (not installable here, never fetched), like download.pytorch.org's torch page.
Everything derives from a fixed seed: same scale -> byte-identical wheels.
"""
import base64
import hashlib
import html
import json
import os
import random
import urllib.parse
import zipfile
import zlib

SEED = 20261129
BLOCK = 64 * 1024
RANDOM_FRACTION = 0.45  # ~2.2x deflate ratio

NVIDIA = [  # name, uncompressed MB at scale 1, shared objects
    ("nvidia-cudnn-cu12", 700, ["libcudnn_engines_precompiled.so.9", "libcudnn_adv.so.9", "libcudnn_cnn.so.9", "libcudnn_ops.so.9"]),
    ("nvidia-cublas-cu12", 560, ["libcublasLt.so.12", "libcublas.so.12"]),
    ("nvidia-nccl-cu12", 240, ["libnccl.so.2"]),
    ("nvidia-cusparse-cu12", 220, ["libcusparse.so.12"]),
    ("nvidia-cufft-cu12", 220, ["libcufft.so.11", "libcufftw.so.11"]),
    ("nvidia-cusolver-cu12", 200, ["libcusolver.so.11", "libcusolverMg.so.11"]),
    ("nvidia-cuda-nvrtc-cu12", 70, ["libnvrtc.so.12", "libnvrtc-builtins.so.12.8"]),
    ("nvidia-curand-cu12", 50, ["libcurand.so.10"]),
    ("nvidia-nvjitlink-cu12", 40, ["libnvJitLink.so.12"]),
    ("nvidia-cuda-cupti-cu12", 30, ["libcupti.so.12", "libnvperf_host.so"]),
    ("nvidia-cuda-runtime-cu12", 4, ["libcudart.so.12"]),
    ("nvidia-nvtx-cu12", 1, ["libnvToolsExt.so.1"]),
]
SMALL = ["filelock", "typing-extensions", "sympy", "networkx", "jinja2", "fsspec", "markupsafe", "mpmath",
         "setuptools", "packaging", "pyyaml-pure", "numpy-lite", "pillow-lite", "requests", "urllib3", "idna",
         "certifi", "charset-normalizer", "tqdm", "triton-stub"]
TORCH_SO = [("libtorch_cuda.so", 0.58), ("libtorch_cpu.so", 0.27), ("libtorch_python.so", 0.05),
            ("libc10_cuda.so", 0.02), ("libc10.so", 0.02), ("libcaffe2_nvrtc.so", 0.01), ("libshm.so", 0.05)]
TORCH_MB = 1700          # uncompressed shared objects at scale 1 (-> ~0.8 GB of deflated .so)
TORCH_FILES = 12000      # small members at scale 1
SETS = {"cu128": {"torch": "2.7.0+cu128", "nvidia": "12.8.{i}"},
        "cu126": {"torch": "2.7.0+cu126", "nvidia": "12.6.{i}"}}


def normalize(name):
    import re
    return re.sub(r"[-_.]+", "-", name).lower()


def escape(name):
    import re
    return re.sub(r"[-_.]+", "_", name)


def record_hash(digest):
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


_POOL = {}


def _random_pool(n):
    if n not in _POOL:
        rng = random.Random(f"{SEED}-pool")
        _POOL[n] = [rng.randbytes(n) for _ in range((16 << 20) // n)]
    return _POOL[n]


def elf_header(size):
    """A valid ELF64 x86-64 shared-object header for a member of `size` bytes: a section table with
    .shstrtab and one .rodata section covering the payload (no CUDA kernels), so kernel readers
    (envfix's pre-install check) parse it like a real library."""
    import struct
    shstr = b"\0.shstrtab\0.rodata\0".ljust(64, b"\0")
    shoff, payload = 128, 128 + 3 * 64
    eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    eh += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, 3, 1)
    sh = bytes(64)  # SHN_UNDEF
    sh += struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, 64, len(shstr), 0, 0, 1, 0)          # .shstrtab
    sh += struct.pack("<IIQQQQIIQQ", 11, 1, 2, 0, payload, max(0, size - payload), 0, 0, 16, 0)  # .rodata
    return (eh + shstr + sh)[:size]


class WheelWriter:
    """Streams members into a wheel, hashing each for RECORD."""

    def __init__(self, path, name, version, tag):
        self.path, self.name, self.version, self.tag = path, name, version, tag
        self.info = f"{escape(name)}-{version}.dist-info"
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6)
        self.record = []

    def _info(self, arc, level):
        zi = zipfile.ZipInfo(arc, date_time=(2025, 4, 23, 0, 0, 0))
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.external_attr = (0o755 if arc.endswith(".so") or ".so." in arc else 0o644) << 16
        zi._compresslevel = level  # zipfile honours the per-member level
        return zi

    def add_bytes(self, arc, data, level=6):
        self.zip.writestr(self._info(arc, level), data)
        self.record.append(f"{arc},{record_hash(hashlib.sha256(data).digest())},{len(data)}")

    def add_blob(self, arc, size, rng):
        """A shared-object-like member of `size` bytes (part random, part repetitive)."""
        h = hashlib.sha256()
        pattern = rng.randbytes(1024) * (BLOCK // 1024)
        nrand = int(BLOCK * RANDOM_FRACTION)
        pool = _random_pool(nrand)
        with self.zip.open(self._info(arc, 1), "w", force_zip64=size > 2**31) as f:
            head = elf_header(size)
            f.write(head)
            h.update(head)
            left = size - len(head)
            while left > 0:
                n = min(BLOCK, left)
                # A random chunk from a 16 MiB pool: repeats are far beyond deflate's 32 KiB window,
                # so they stay incompressible, and generation is not bound by the PRNG.
                block = (pool[rng.randrange(len(pool))] + pattern[nrand:])[:n]
                f.write(block)
                h.update(block)
                left -= n
        self.record.append(f"{arc},{record_hash(h.digest())},{size}")

    def close(self, metadata):
        self.add_bytes(f"{self.info}/METADATA", metadata.encode())
        purelib = self.tag.endswith("none-any")
        self.add_bytes(f"{self.info}/WHEEL", "Wheel-Version: 1.0\nGenerator: envfix-bench\nRoot-Is-Purelib: "
                       f"{'true' if purelib else 'false'}\nTag: {self.tag}\n".encode())
        record = "\n".join(self.record) + f"\n{self.info}/RECORD,,\n"
        self.zip.writestr(self._info(f"{self.info}/RECORD", 6), record.encode())
        self.zip.close()


def metadata(name, version, requires=(), requires_python=">=3.9"):
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
             f"Summary: envfix benchmark stand-in for {name}", f"Requires-Python: {requires_python}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\n"


def py_source(rng, i, size):
    words = ["def", "return", "self", "tensor", "import", "torch", "class", "None", "if", "for", "in", "x", "y"]
    out, n = [], 0
    while n < size:
        line = f"    {rng.choice(words)} {rng.choice(words)}_{rng.randrange(1000)} = {rng.randrange(10**6)}  # {i}\n"
        out.append(line)
        n += len(line)
    return "".join(out).encode()


def wheel_filename(name, version, tag):
    return f"{escape(name)}-{version}-{tag}.whl"


def build_torch(out, version, tag, scale, requires):
    rng = random.Random(f"{SEED}-torch-{version}")
    fn = wheel_filename("torch", version, tag)
    w = WheelWriter(os.path.join(out, fn), "torch", version, tag)
    nfiles = max(300, int(TORCH_FILES * scale))
    for i in range(nfiles):  # python sources and headers, in ~40 packages like torch/ has
        sub = f"torch/{['nn', 'include/ATen/ops', 'utils', '_inductor', 'distributed', 'fx', 'testing'][i % 7]}/m{i % 40}"
        ext = ".h" if i % 3 == 0 else ".py"
        w.add_bytes(f"{sub}/f{i}{ext}", py_source(rng, i, 500 + rng.randrange(8000)))
    total = int(TORCH_MB * 1024 * 1024 * scale)
    for so, frac in TORCH_SO:
        w.add_blob(f"torch/lib/{so}", int(total * frac), rng)
    w.close(metadata("torch", version, requires))
    return fn


def build_nvidia(out, name, mb, sos, version, tag, scale):
    rng = random.Random(f"{SEED}-{name}-{version}")
    fn = wheel_filename(name, version, tag)
    w = WheelWriter(os.path.join(out, fn), name, version, tag)
    short = name.split("-")[1] if not name.startswith("nvidia-cuda-") else name.split("-")[2]
    base = f"nvidia/{short}"
    # Like the current wheels (nvidia_cudnn_cu13 9.19 in tests/fixtures/gpu-h200/dist-info): a
    # namespace package, no nvidia/__init__.py (older cu12 wheels each shipped one; envfix refuses
    # such overlaps, pip does not).
    for i in range(max(2, int(60 * scale))):  # headers
        w.add_bytes(f"{base}/include/h{i}.h", py_source(rng, i, 2000 + rng.randrange(20000)))
    total = max(64 * 1024, int(mb * 1024 * 1024 * scale))
    for j, so in enumerate(sos):
        w.add_blob(f"{base}/lib/{so}", total // len(sos), rng)
    w.close(metadata(name, version, requires_python=">=3"))
    return fn


def build_small(out, name, version, scale, requires=()):
    rng = random.Random(f"{SEED}-{name}")
    fn = wheel_filename(name, version, "py3-none-any")
    w = WheelWriter(os.path.join(out, fn), name, version, "py3-none-any")
    pkg = escape(name)
    for i in range(max(5, int((20 + 15 * (len(name) % 9)) * max(scale, 0.2)))):
        w.add_bytes(f"{pkg}/mod{i}.py", py_source(rng, i, 300 + rng.randrange(12000)))
    w.close(metadata(name, version, requires))
    return fn


def noise_anchors(project, target_version, n, rng):
    """Filenames of n other releases of `project` (other Pythons, platforms, older releases, nightlies)."""
    pys = ["cp39-cp39", "cp310-cp310", "cp311-cp311", "cp312-cp312", "cp313-cp313", "cp313-cp313t"]
    plats = ["manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64", "macosx_11_0_arm64"]
    major = [int(x) for x in target_version.split("+")[0].split(".")[:2]]
    names, seen = [], set()
    d = 0
    while len(names) < n:
        d += 1
        if d % 4 == 0:  # older stable releases (always below the target)
            if major[1] > 0:
                v = f"{major[0]}.{(d // 4) % major[1]}.{(d // 28) % 3}"
            else:
                v = f"{major[0] - 1}.{(d // 4) % 10}.{(d // 28) % 3}"
        else:           # nightly dev builds (pre-releases: skipped without --pre)
            v = f"{major[0]}.{major[1] + 1}.0.dev{20250101 + d}"
        local = "" if "+" not in target_version else "+" + target_version.split("+")[1]
        for py in pys:
            for pl in plats:
                fn = f"{escape(project)}-{v}{local}-{py}-{pl}.whl"
                if len(names) < n and fn not in seen:
                    seen.add(fn)
                    names.append(fn)
    return names


def write_pages(root, entries, noise):
    """entries: project -> [(filename, sha256, metadata_sha256, size)]; noise: project -> [filename]."""
    simple = os.path.join(root, "simple")
    os.makedirs(simple, exist_ok=True)
    for project in sorted(entries):
        d = os.path.join(simple, project)
        os.makedirs(d, exist_ok=True)
        rows = [(fn, sha, msha, size, True) for fn, sha, msha, size in entries[project]]
        rng = random.Random(f"{SEED}-page-{project}")
        rows += [(fn, rng.randbytes(32).hex(), rng.randbytes(32).hex(), 10**6 + rng.randrange(10**9), False)
                 for fn in noise.get(project, [])]
        rows.sort(key=lambda r: r[0])
        lines = ["<!DOCTYPE html>", "<html>", "<body>", f"<h1>Links for {project}</h1>"]
        files = []
        for fn, sha, msha, size, _real in rows:
            href = "/files/" + urllib.parse.quote(fn)
            lines.append(f'<a href="{href}#sha256={sha}" data-requires-python="&gt;=3.9" '
                         f'data-dist-info-metadata="sha256={msha}" data-core-metadata="sha256={msha}">'
                         f"{html.escape(fn)}</a><br/>")
            files.append({"filename": fn, "url": href, "hashes": {"sha256": sha}, "size": size,
                          "requires-python": ">=3.9", "core-metadata": {"sha256": msha}})
        lines += ["</body>", "</html>"]
        with open(os.path.join(d, "index.html"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(d, "index.json"), "w") as f:
            f.write(json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": files,
                                "versions": sorted({r[0].split("-")[1] for r in rows})}))
    with open(os.path.join(simple, "index.html"), "w") as f:
        f.write("<!DOCTYPE html><html><body>\n" + "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(entries))
                + "</body></html>\n")


def _job(args):
    kind = args[0]
    if kind == "torch":
        return args[1], build_torch(*args[2:])
    if kind == "nvidia":
        return args[1], build_nvidia(*args[2:])
    return args[1], build_small(*args[2:])


def generate(out, scale, pytag, torch_noise=8000, other_noise=300, jobs=2):
    """Builds everything under `out` (skips work when `out/manifest.json` matches). Returns the manifest."""
    key = {"scale": scale, "pytag": pytag, "torch_noise": torch_noise, "other_noise": other_noise, "seed": SEED,
           "format": 5}
    mpath = os.path.join(out, "manifest.json")
    if os.path.exists(mpath):
        with open(mpath) as f:
            m = json.load(f)
        if m.get("key") == key:
            return m
    files = os.path.join(out, "files")
    os.makedirs(files, exist_ok=True)
    tag = f"{pytag}-{pytag}-manylinux_2_28_x86_64"
    small_versions = {n: f"{1 + len(n) % 5}.{len(n) % 7}.{len(n) % 3}" for n in SMALL}
    jobs_list = []
    for set_name, s in SETS.items():
        nv = {name: s["nvidia"].format(i=60 + k) for k, (name, _, _) in enumerate(NVIDIA)}
        requires = [f"{n}=={v}; platform_system == \"Linux\"" for n, v in nv.items()]
        requires += [f"{n}>={v.split('.')[0]}.0" for n, v in small_versions.items()]
        jobs_list.append(("torch", set_name, files, s["torch"], tag, scale, requires))
        for name, mb, sos in NVIDIA:
            jobs_list.append(("nvidia", set_name, files, name, mb, sos, nv[name], tag.replace(pytag + "-" + pytag, "py3-none"), scale))
    for n in SMALL:
        jobs_list.append(("small", "both", files, n, small_versions[n], scale))
    # Biggest first so the pool stays busy.
    order = sorted(jobs_list, key=lambda j: 0 if j[0] == "torch" else (1 if j[0] == "nvidia" else 2))
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(jobs) as ex:
            built = list(ex.map(_job, order))
    else:
        built = [_job(j) for j in order]
    manifest = {"key": key, "sets": {s: [] for s in SETS}, "wheels": {}}
    for set_name, fn in built:
        path = os.path.join(files, fn)
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        with zipfile.ZipFile(path) as z:
            info = [i for i in z.infolist() if i.filename.endswith(".dist-info/METADATA")][0]
            meta = z.read(info)
            n_members = len(z.infolist())
            unpacked = sum(i.file_size for i in z.infolist())
        with open(path + ".metadata", "wb") as f:
            f.write(meta)
        manifest["wheels"][fn] = {"sha256": h.hexdigest(), "metadata_sha256": hashlib.sha256(meta).hexdigest(),
                                  "size": os.path.getsize(path), "members": n_members, "unpacked": unpacked,
                                  "project": normalize(fn.split("-")[0])}
        for s in (SETS if set_name == "both" else [set_name]):
            manifest["sets"][s].append(fn)
    for set_name, s in SETS.items():
        entries = {}
        for fn in manifest["sets"][set_name]:
            w = manifest["wheels"][fn]
            entries.setdefault(w["project"], []).append((fn, w["sha256"], w["metadata_sha256"], w["size"]))
        rng = random.Random(f"{SEED}-noise-{set_name}")
        noise = {"torch": noise_anchors("torch", s["torch"], torch_noise, rng)}
        for name, _, _ in NVIDIA:
            noise[name] = noise_anchors(name, s["nvidia"].format(i=60), other_noise, rng)
        for n in SMALL:
            noise[n] = noise_anchors(n, small_versions[n], other_noise // 3, rng)
        write_pages(os.path.join(out, set_name), entries, noise)
    fl = os.path.join(out, "findlinks")
    os.makedirs(fl, exist_ok=True)
    for fn in manifest["sets"]["cu128"]:
        dst = os.path.join(fl, fn)
        if not os.path.exists(dst):
            os.link(os.path.join(files, fn), dst)
    manifest["torch_version"] = {s: v["torch"] for s, v in SETS.items()}
    with open(mpath, "w") as f:
        json.dump(manifest, f, indent=1)
    return manifest
