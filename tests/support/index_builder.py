#!/usr/bin/env python3
"""Generate wheels and a PEP 503/691/658 index tree for envfix tests (stdlib only).

Usage:  index_builder.py SPEC.json|- OUT_DIR          (prints a JSON summary on stdout)
   or:  import index_builder; index_builder.build(spec_dict, out_dir)

SPEC (JSON):
{
  "packages": [
    {"name": "torch", "version": "2.7.0+cu128",       # required
     "tags": ["cp311-cp311-manylinux_2_28_x86_64"],   # default ["py3-none-any"]; one wheel per tag
     "build": "1",                                    # optional build tag
     "requires_dist": ["numpy>=1.21", "triton==3.3.0; platform_system == 'Linux'"],
     "requires_python": ">=3.9",
     "index_requires_python": ">=3.9" | null,        # page data-requires-python (default: requires_python)
     "provides_extra": ["opt"],
     "metadata_extra": {"Summary": "..."},            # more METADATA headers
     "files": {"torch/__init__.py": "x = 1\n"},       # extra members (text); "@@random:N" = N random bytes,
                                                      # "@@file:PATH" = the bytes of that file (a real .so)
     "pad_bytes": 0,                                  # a stored member of incompressible bytes (big wheels)
     "yanked": false | true | "reason",
     "omit_hash": false,                              # no #sha256 in HTML, empty hashes in JSON
     "metadata_file": true,                           # write <wheel>.metadata and advertise it (PEP 658/714)
     "metadata_file_text": "Metadata-Version: ...",    # write this as <wheel>.metadata instead (an index that
                                                      # lies about the wheel; its hash is published)
     "wrong_hash": false,                             # publish a wrong sha256 for the wheel
     "wrong_metadata_hash": false,
     "compress": true}                                # deflate members (METADATA is always readable)
  ],
  "html": true, "json": true,                         # page forms to write
  "href_style": "relative" | "root" | "absolute",     # how hrefs are written (absolute needs base_url)
  "base_url": "http://127.0.0.1:8080",
  "files_dir": "files",                               # where wheels go, relative to OUT_DIR
  "simple_dir": "simple",
  "api_version": "1.1"
}
Output: OUT_DIR/<files_dir>/<wheel>[.metadata], OUT_DIR/<simple_dir>/index.html, and per project
OUT_DIR/<simple_dir>/<normalized>/index.html + index.json.
Summary: {"files": [{"project", "filename", "path", "sha256", "size", "metadata_sha256", "url_path"}]}
"""
import base64
import hashlib
import html
import io
import json
import os
import random
import re
import sys
import urllib.parse
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wheel_writer  # noqa: E402


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def escape_name(name):
    return re.sub(r"[-_.]+", "_", name)


def make_wheel(pkg, tag, out_dir, rng):
    name, version = pkg["name"], pkg["version"]
    dist = f"{escape_name(name)}-{version}"
    parts = [escape_name(name), version]
    if pkg.get("build"):
        parts.append(str(pkg["build"]))
    filename = "-".join(parts + [tag]) + ".whl"
    files = {}
    for path, content in sorted(pkg.get("files", {}).items()):
        if isinstance(content, str) and content.startswith("@@random:"):
            files[path] = rng.randbytes(int(content[9:]))
        elif isinstance(content, str) and content.startswith("@@file:"):
            with open(content[7:], "rb") as f:
                files[path] = f.read()
        else:
            files[path] = content.encode() if isinstance(content, str) else bytes(content)
    if not pkg.get("files"):
        files[f"{escape_name(name)}/__init__.py"] = f"__version__ = {version!r}\n".encode()
    pad = f"{escape_name(name)}/_pad.bin"
    if pkg.get("pad_bytes"):
        files[pad] = rng.randbytes(int(pkg["pad_bytes"]))
    buf = io.BytesIO()
    _, meta = wheel_writer.build_wheel(
        buf, name, version, files, tags=[tag], requires_dist=pkg.get("requires_dist", []),
        requires_python=pkg.get("requires_python"), provides_extra=pkg.get("provides_extra", []),
        metadata_extra=pkg.get("metadata_extra", {}), description=pkg.get("description", ""),
        generator="envfix-index-builder", build=pkg.get("build"), dist_info=f"{dist}.dist-info",
        compress=zipfile.ZIP_STORED if not pkg.get("compress", True) else {pad: zipfile.ZIP_STORED})
    data = buf.getvalue()
    path = os.path.join(out_dir, filename)
    with open(path, "wb") as f:
        f.write(data)
    return filename, path, data, meta


def build(spec, out):
    rng = random.Random(spec.get("seed", 1234))
    files_dir = spec.get("files_dir", "files")
    simple_dir = spec.get("simple_dir", "simple")
    style = spec.get("href_style", "relative")
    base_url = spec.get("base_url", "").rstrip("/")
    api = spec.get("api_version", "1.1")
    out = os.path.abspath(out)
    os.makedirs(os.path.join(out, files_dir), exist_ok=True)
    os.makedirs(os.path.join(out, simple_dir), exist_ok=True)
    by_project = {}
    summary = []
    for pkg in spec["packages"]:
        for tag in pkg.get("tags", ["py3-none-any"]):
            filename, path, data, meta = make_wheel(pkg, tag, os.path.join(out, files_dir), rng)
            sha = hashlib.sha256(data).hexdigest()
            meta_sha = None
            if pkg.get("metadata_file", True):
                if "metadata_file_text" in pkg:
                    meta = pkg["metadata_file_text"].encode()
                with open(path + ".metadata", "wb") as f:
                    f.write(meta)
                meta_sha = hashlib.sha256(meta).hexdigest()
            published = ("0" * 64) if pkg.get("wrong_hash") else sha
            published_meta = ("f" * 64) if pkg.get("wrong_metadata_hash") else meta_sha
            quoted = urllib.parse.quote(filename)
            url_path = f"/{files_dir}/{quoted}"
            if style == "root":
                href = url_path
            elif style == "absolute":
                href = base_url + url_path
            else:
                href = "../" * (simple_dir.count("/") + 2) + f"{files_dir}/{quoted}"
            entry = dict(project=normalize(pkg["name"]), filename=filename, path=path, sha256=sha,
                         size=len(data), metadata_sha256=meta_sha, url_path=url_path, href=href,
                         published_sha256=None if pkg.get("omit_hash") else published,
                         published_metadata_sha256=published_meta,
                         has_metadata=bool(pkg.get("metadata_file", True)),
                         requires_python=pkg.get("index_requires_python", pkg.get("requires_python")), yanked=pkg.get("yanked", False))
            by_project.setdefault(entry["project"], []).append(entry)
            summary.append({k: entry[k] for k in ("project", "filename", "path", "sha256", "size",
                                                   "metadata_sha256", "url_path")})
    for project, entries in sorted(by_project.items()):
        d = os.path.join(out, simple_dir, project)
        os.makedirs(d, exist_ok=True)
        if spec.get("html", True):
            lines = ["<!DOCTYPE html>", "<html>", "<head>",
                     f'<meta name="pypi:repository-version" content="{api}">',
                     f"<title>Links for {project}</title>", "</head>", "<body>", f"<h1>Links for {project}</h1>"]
            for e in entries:
                href = e["href"] + (f"#sha256={e['published_sha256']}" if e["published_sha256"] else "")
                attrs = f'href="{html.escape(href)}"'
                if e["requires_python"]:
                    attrs += f' data-requires-python="{html.escape(e["requires_python"])}"'
                if e["yanked"] is not False:
                    reason = "" if e["yanked"] is True else e["yanked"]
                    attrs += f' data-yanked="{html.escape(reason)}"'
                if e["has_metadata"]:
                    m = f"sha256={e['published_metadata_sha256']}"
                    attrs += f' data-dist-info-metadata="{m}" data-core-metadata="{m}"'
                lines.append(f"<a {attrs}>{html.escape(e['filename'])}</a><br/>")
            lines += ["</body>", "</html>"]
            with open(os.path.join(d, "index.html"), "w") as f:
                f.write("\n".join(lines) + "\n")
        if spec.get("json", True):
            files = []
            for e in entries:
                fe = {"filename": e["filename"], "url": e["href"],
                      "hashes": {"sha256": e["published_sha256"]} if e["published_sha256"] else {},
                      "size": e["size"]}
                if e["requires_python"]:
                    fe["requires-python"] = e["requires_python"]
                if e["yanked"] is not False:
                    fe["yanked"] = e["yanked"] if e["yanked"] is not True else True
                if e["has_metadata"]:
                    fe["core-metadata"] = {"sha256": e["published_metadata_sha256"]}
                files.append(fe)
            doc = {"meta": {"api-version": api}, "name": project, "files": files,
                   "versions": sorted({e["filename"].split("-")[1] for e in entries})}
            with open(os.path.join(d, "index.json"), "w") as f:
                json.dump(doc, f, indent=1)
    with open(os.path.join(out, simple_dir, "index.html"), "w") as f:
        f.write("<!DOCTYPE html><html><body>\n" + "".join(
            f'<a href="{p}/">{p}</a>\n' for p in sorted(by_project)) + "</body></html>\n")
    return {"files": summary}


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    spec = json.load(sys.stdin if argv[1] == "-" else open(argv[1]))
    json.dump(build(spec, argv[2]), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
