#!/usr/bin/env python3
"""The one writer of test wheels (stdlib only), used by every test that makes wheels:
tests/installer/gen_wheel.py, tests/support/index_builder.py, tests/reliability/hostile_wheels.py and
tests/gpu/tinyfw/build_index.py. Wheels follow the binary distribution format spec: METADATA and
WHEEL headers, a RECORD of `path,sha256=<urlsafe b64>,size` rows listing itself with empty fields.

Members are (name, data) or (name, data, external_attr) tuples, or dicts:
  {"name": ..., "data": bytes, "mode": 0o644, "external_attr": int, "symlink": False,
   "compress": zipfile.ZIP_DEFLATED, "utf8": False, "dup": False}
"""
import base64
import hashlib
import warnings
import zipfile

DATE = (2024, 1, 1, 0, 0, 0)


def record_hash(data):
    """RECORD's hash field of `data`: sha256=<urlsafe base64 without padding>."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def metadata_text(name, version, requires_dist=(), requires_python=None, provides_extra=(), extra=None,
                  description=""):
    """Core metadata 2.1: Name, Version, extra headers, Requires-Python, Provides-Extra, Requires-Dist, body."""
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Provides-Extra: {e}" for e in provides_extra]
    lines += [f"Requires-Dist: {r}" for r in requires_dist]
    return "\n".join(lines) + "\n\n" + description


def wheel_text(tags=("py3-none-any",), root_is_purelib=True, generator="envfix-tests", wheel_version="1.0",
               build=None):
    """WHEEL: one Tag line per tag of each (compressed) tag set."""
    out = f"Wheel-Version: {wheel_version}\nGenerator: {generator}\nRoot-Is-Purelib: {'true' if root_is_purelib else 'false'}\n"
    for tag in tags:
        py, abi, plat = tag.split("-")
        for p in py.split("."):
            for a in abi.split("."):
                for pl in plat.split("."):
                    out += f"Tag: {p}-{a}-{pl}\n"
    if build:
        out += f"Build: {build}\n"
    return out


def record_text(rows, record_name, extra_rows=()):
    """RECORD for rows of (path, data) or (path, hash, size), then `extra_rows` (text), then itself."""
    lines = []
    for row in rows:
        if len(row) == 2:
            lines.append(f"{row[0]},{record_hash(row[1])},{len(row[1])}")
        else:
            lines.append(f"{row[0]},{row[1]},{row[2]}")
    lines += list(extra_rows)
    lines.append(f"{record_name},,")
    return ("\n".join(lines) + "\n").encode()


def _as_dict(m):
    if isinstance(m, dict):
        return m
    d = {"name": m[0], "data": m[1]}
    if len(m) > 2:
        d["external_attr"] = m[2]
    return d


def write_zip(target, members, compress=zipfile.ZIP_DEFLATED, date_time=DATE):
    """Writes `members` in order into `target` (a path or a binary file object)."""
    with zipfile.ZipFile(target, "w", compress) as z:
        for m in map(_as_dict, members):
            name, data = m["name"], m["data"]
            info = zipfile.ZipInfo(name, date_time=date_time)
            info.compress_type = m.get("compress", compress)
            if "external_attr" in m:
                info.external_attr = m["external_attr"]
                info.create_system = 3  # Unix: external_attr carries st_mode
            elif m.get("symlink"):
                info.external_attr = 0o120777 << 16
            elif name.endswith("/"):
                info.external_attr = 0o40755 << 16
            else:
                info.external_attr = (0o100000 | m.get("mode", 0o644)) << 16
            if m.get("utf8"):
                info.flag_bits |= 0x800
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # duplicate names are written on purpose
                z.writestr(info, data)
                if m.get("dup"):
                    z.writestr(info, data)


def build_wheel(target, name, version, files, tags=("py3-none-any",), requires_dist=(), requires_python=None,
                provides_extra=(), metadata_extra=None, description="", root_is_purelib=None,
                generator="envfix-tests", build=None, compress=zipfile.ZIP_DEFLATED, date_time=DATE, modes=None,
                dist_info=None):
    """A complete wheel: `files` ({path: bytes}, in order), METADATA, WHEEL, RECORD. Root-Is-Purelib
    defaults to whether every tag is py*-none-any. `modes` ({path: mode}) and `compress` ({path:
    method} or one method) are per member. Returns (dist-info name, METADATA bytes)."""
    dist_info = dist_info or f"{name.replace('-', '_')}-{version}.dist-info"
    if root_is_purelib is None:
        root_is_purelib = all(t.split("-")[1:] == ["none", "any"] for t in tags)
    members = list(files.items())
    metadata = metadata_text(name, version, requires_dist, requires_python, provides_extra, metadata_extra,
                             description).encode()
    members.append((f"{dist_info}/METADATA", metadata))
    members.append((f"{dist_info}/WHEEL", wheel_text(tags, root_is_purelib, generator, build=build).encode()))
    members.append((f"{dist_info}/RECORD", record_text(members, f"{dist_info}/RECORD")))
    out = []
    for path, data in members:
        m = {"name": path, "data": data, "mode": (modes or {}).get(path, 0o644)}
        if isinstance(compress, dict):
            m["compress"] = compress.get(path, zipfile.ZIP_DEFLATED)
        out.append(m)
    write_zip(target, out, compress if not isinstance(compress, dict) else zipfile.ZIP_DEFLATED, date_time)
    return dist_info, metadata
