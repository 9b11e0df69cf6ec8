#!/usr/bin/env python3
"""Build the tinyfw fixture index for envfix's GPU end-to-end test.

Compiles tinyfw_kernels.cu with nvcc for each build, packs real wheels (dist-info with METADATA,
WHEEL, RECORD) and writes a PEP 503 tree:

  OUT/whl/cu130/{tinyfw,tinyfw-vision}/      stable, sm_80 SASS only   (broken on CC 9.0)
  OUT/whl/cu129/{tinyfw,tinyfw-vision}/      stable, compute_80 PTX    (runs by JIT)
  OUT/whl/nightly/cu130/{...}/               nightly, sm_90 SASS       (native on CC 9.0)

Usage: build_index.py OUT [--nvcc PATH]
"""
import argparse
import hashlib
import html
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
import wheel_writer  # noqa: E402

BUILDS = [
    # (index path, tinyfw version, vision version, gencode flags)
    ("whl/cu130", "1.0.0+cu130", "0.1.0+cu130", ["-gencode", "arch=compute_80,code=sm_80"]),
    ("whl/cu129", "1.0.0+cu129", "0.1.0+cu129", ["-gencode", "arch=compute_80,code=compute_80"]),
    ("whl/nightly/cu130", "1.1.0.dev20261120+cu130", "0.2.0.dev20261120+cu130",
     ["-gencode", "arch=compute_90,code=sm_90"]),
]
PLATFORM = "manylinux_2_17_x86_64"


def build_so(nvcc, flags, out):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = [nvcc, "-O2", "-shared", "-Xcompiler", "-fPIC", "-cudart", "static", *flags,
           os.path.join(HERE, "tinyfw_kernels.cu"), "-o", out]
    subprocess.run(cmd, check=True)


def make_wheel(outdir, dist, import_name, version, files, requires):
    """files: {path inside wheel: bytes}. Returns the wheel path."""
    norm = dist.replace("-", "_")
    path = os.path.join(outdir, f"{norm}-{version}-py3-none-{PLATFORM}.whl")
    wheel_writer.build_wheel(path, dist, version, files, tags=[f"py3-none-{PLATFORM}"], requires_dist=requires,
                             requires_python=">=3.8", generator="envfix-tinyfw", date_time=(2026, 11, 20, 0, 0, 0),
                             modes={p: 0o755 for p in files if p.endswith(".so")})
    return path


def write_project_page(project_dir, wheels):
    os.makedirs(project_dir, exist_ok=True)
    links = []
    for w in wheels:
        name = os.path.basename(w)
        dest = os.path.join(project_dir, name)
        shutil.copyfile(w, dest)
        digest = hashlib.sha256(open(dest, "rb").read()).hexdigest()
        links.append(f'<a href="{html.escape(name)}#sha256={digest}" '
                     f'data-requires-python="&gt;=3.8">{html.escape(name)}</a><br/>')
    with open(os.path.join(project_dir, "index.html"), "w") as f:
        f.write("<!DOCTYPE html>\n<html><body>\n" + "\n".join(links) + "\n</body></html>\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    args = ap.parse_args()
    work = os.path.join(args.out, "_build")
    os.makedirs(work, exist_ok=True)
    init_fw = open(os.path.join(HERE, "tinyfw_init.py")).read()
    init_vi = open(os.path.join(HERE, "tinyfw_vision_init.py")).read()
    for index_path, fw_version, vi_version, flags in BUILDS:
        tag = index_path.replace("/", "_")
        so = os.path.join(work, tag, "libtinyfw_kernels.so")
        build_so(args.nvcc, flags, so)
        so_bytes = open(so, "rb").read()
        wdir = os.path.join(work, tag, "wheels")
        os.makedirs(wdir, exist_ok=True)
        public = fw_version.split("+")[0]
        fw = make_wheel(wdir, "tinyfw", "tinyfw", fw_version, {
            "tinyfw/__init__.py": init_fw.replace("@VERSION@", fw_version).encode(),
            "tinyfw/lib/libtinyfw_kernels.so": so_bytes,
        }, [])
        vi = make_wheel(wdir, "tinyfw-vision", "tinyfw_vision", vi_version, {
            "tinyfw_vision/__init__.py": init_vi.replace("@VERSION@", vi_version).encode(),
            "tinyfw_vision/lib/libtinyfw_vision_kernels.so": so_bytes,
        }, [f"tinyfw=={public}"])
        write_project_page(os.path.join(args.out, index_path, "tinyfw"), [fw])
        write_project_page(os.path.join(args.out, index_path, "tinyfw-vision"), [vi])
        with open(os.path.join(args.out, index_path, "index.html"), "w") as f:
            f.write('<html><body><a href="tinyfw/">tinyfw</a><br/>'
                    '<a href="tinyfw-vision/">tinyfw-vision</a></body></html>\n')
    shutil.rmtree(work)
    print(f"tinyfw index written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
