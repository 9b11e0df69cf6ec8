#!/usr/bin/env python3
"""Hostile wheels for envfix's reliability tests (stdlib only).

Usage: hostile_wheels.py OUT_DIR     writes one .whl per case into OUT_DIR/<case>/ and prints a JSON
                                     list on stdout: [{"case", "file", "entry", "limits"?}, ...]
  case    short name (also the folder)
  file    absolute path of the wheel (always named demo-1.0-py3-none-any.whl unless the case is about
          the file name)
  entry   text the refusal must contain: the offending member (or the file name when the whole
          archive is the problem)
  limits  optional ArchiveLimits overrides for the case ({"max_total_size": N, "max_ratio": N})
  accept  true when the wheel must stage, with `entry` staged as a plain regular file; "either"
          when a refusal naming `entry` is fine too

Every case starts from one valid wheel (the "valid" case, which must stage) and breaks exactly one
thing, so a refusal can only come from that one thing. ZIP structures that zipfile will not write
(lying local headers, overlapping entries, non-UTF-8 names flagged as UTF-8) are patched in the raw
bytes after zipfile wrote them.
"""
import json
import os
import struct
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from wheel_writer import record_hash, write_zip  # noqa: E402

NAME, VERSION = "demo", "1.0"
DIST = f"{NAME}-{VERSION}.dist-info"
WHEEL_FILE = f"{NAME}-{VERSION}-py3-none-any.whl"
METADATA = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n\n".encode()
WHEEL = b"Wheel-Version: 1.0\nGenerator: hostile_wheels\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


rhash = record_hash


def base_members():
    return [
        ("demo/__init__.py", b"VALUE = 1\n"),
        ("demo/aaaaaaaaaa.py", b"A = 'a' * 10\n"),
        (f"{DIST}/METADATA", METADATA),
        (f"{DIST}/WHEEL", WHEEL),
    ]


def record_for(members, extra_rows=(), skip=(), override=None):
    rows = []
    for name, data, *_ in members:
        if name in skip:
            continue
        h, size = rhash(data), len(data)
        if override and name in override:
            h, size = override[name]
        rows.append(f"{name},{h},{size}")
    rows.extend(extra_rows)
    rows.append(f"{DIST}/RECORD,,")
    return ("\n".join(rows) + "\n").encode()


def wheel(path, members=None, record=None, compress=zipfile.ZIP_DEFLATED, record_members=None):
    members = list(members if members is not None else base_members())
    rec = record if record is not None else record_for(record_members if record_members is not None else members)
    write_zip(path, members + [(f"{DIST}/RECORD", rec)], compress)


# ---- raw ZIP surgery -------------------------------------------------------------------------
def central_entries(raw):
    """(offset of central header, name, local header offset) for each central directory entry."""
    eocd = raw.rfind(b"PK\x05\x06")
    count, _size, cd_off = struct.unpack_from("<HII", raw, eocd + 10)
    out, pos = [], cd_off
    for _ in range(count):
        assert raw[pos:pos + 4] == b"PK\x01\x02"
        nlen, xlen, clen = struct.unpack_from("<HHH", raw, pos + 28)
        local = struct.unpack_from("<I", raw, pos + 42)[0]
        out.append((pos, raw[pos + 46:pos + 46 + nlen], local))
        pos += 46 + nlen + xlen + clen
    return out


def replace_name_everywhere(raw, old, new, utf8_flag=False):
    """Same-length rename in local and central headers (optionally setting the UTF-8 flag)."""
    assert len(old) == len(new)
    raw = bytearray(raw)
    for cpos, name, local in central_entries(bytes(raw)):
        if name != old:
            continue
        raw[cpos + 46:cpos + 46 + len(new)] = new
        raw[local + 30:local + 30 + len(new)] = new
        if utf8_flag:
            struct.pack_into("<H", raw, cpos + 8, struct.unpack_from("<H", raw, cpos + 8)[0] | 0x800)
            struct.pack_into("<H", raw, local + 6, struct.unpack_from("<H", raw, local + 6)[0] | 0x800)
    return bytes(raw)


def cases(out):
    res = []

    def add(case, members=None, entry=None, limits=None, raw=None, filename=WHEEL_FILE, accept=False, **kw):
        d = os.path.join(out, case)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, filename)
        if raw is not None:
            with open(path, "wb") as f:
                f.write(raw)
        else:
            wheel(path, members, **kw)
        item = {"case": case, "file": path, "entry": entry if entry is not None else filename}
        if limits:
            item["limits"] = limits
        if accept:
            item["accept"] = accept
        res.append(item)
        return path

    def plus(*extra):
        return base_members() + list(extra)

    valid = add("valid", entry="", accept=True)

    # Names.
    add("dotdot", plus(("demo/../../evil.py", b"x")), "demo/../../evil.py")
    add("dotdot-leading", plus(("../evil.py", b"x")), "../evil.py")
    add("absolute", plus(("/tmp/envfix-evil.py", b"x")), "/tmp/envfix-evil.py")
    add("drive-letter", plus(("C:/evil.py", b"x")), "C:/evil.py")
    add("backslash", plus(("demo\\..\\..\\evil.py", b"x")), "evil.py")
    add("dot-component", plus(("demo/./evil.py", b"x")), "demo/./evil.py")
    add("empty-component", plus(("demo//evil.py", b"x")), "demo//evil.py")
    # Non-UTF-8 bytes in a name that claims to be UTF-8 (flag bit 11).
    p = add("non-utf8-name", plus(("demo/badXX.py", b"x")), "demo/bad")
    with open(p, "rb") as f:
        raw = replace_name_everywhere(f.read(), b"demo/badXX.py", b"demo/bad\xff\xfe.py", utf8_flag=True)
    with open(p, "wb") as f:
        f.write(raw)

    # Links and special files (ZIP has no hard links: Info-ZIP/libarchive only know these via
    # st_mode in external_attr; a FIFO or device node stands in for "not a regular file").
    add("symlink", plus(("demo/link", b"../../../../etc/passwd", 0o120777 << 16)), "demo/link")
    add("symlink-dir", plus(("demo/sub", b"/", 0o120777 << 16), ("demo/sub/x.py", b"x")), "demo/sub")
    # libarchive reports a FIFO as a regular file and a device as "other": either refused naming the
    # member, or staged as a plain empty file (never mkfifo/mknod) -- "either" lets both pass.
    add("fifo", plus(("demo/fifo", b"", 0o010644 << 16)), "demo/fifo", accept="either")
    add("device", plus(("demo/dev", b"", 0o060644 << 16)), "demo/dev", accept="either")

    # Duplicates (zipfile warns but writes both).
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        add("duplicate", plus(("demo/__init__.py", b"EVIL = 1\n")), "demo/__init__.py",
            record_members=base_members())
        add("duplicate-dir-and-file", plus(("demo/x/", b"", 0o040755 << 16), ("demo/x", b"x")), "demo/x")

    # RECORD disagreements.
    bm = base_members()
    add("record-hash", bm, "demo/aaaaaaaaaa.py",
        record=record_for(bm, override={"demo/aaaaaaaaaa.py": (rhash(b"other"), len(bm[1][1]))}))
    add("record-size", bm, "demo/aaaaaaaaaa.py",
        record=record_for(bm, override={"demo/aaaaaaaaaa.py": (rhash(bm[1][1]), len(bm[1][1]) + 1)}))
    add("record-no-hash", bm, "demo/aaaaaaaaaa.py",
        record=record_for(bm, override={"demo/aaaaaaaaaa.py": ("", "")}))
    add("record-md5", bm, "demo/aaaaaaaaaa.py",
        record=record_for(bm, override={"demo/aaaaaaaaaa.py": ("md5=AAAA", len(bm[1][1]))}))
    add("not-in-record", plus(("demo/extra.py", b"x")), "demo/extra.py", record=record_for(bm))
    add("record-lists-missing", bm, "demo/ghost.py", record=record_for(bm, extra_rows=["demo/ghost.py,%s,1" % rhash(b"x")]))
    add("record-escapes", bm, "../../../etc/passwd",
        record=record_for(bm, extra_rows=["../../../etc/passwd,%s,1" % rhash(b"x")]))
    add("record-twice", bm, "demo/__init__.py",
        record=record_for(bm, extra_rows=["demo/__init__.py,%s,%d" % (rhash(bm[0][1]), len(bm[0][1]))]))
    add("record-garbage", bm, "RECORD", record=b'demo/__init__.py,"sha256=unterminated\n')

    # Zip bombs: the ratio limit with default limits; the total-size limit, configured small.
    add("bomb-ratio", plus(("demo/zeros.bin", bytes(64 << 20))), WHEEL_FILE,
        record_members=plus(("demo/zeros.bin", bytes(64 << 20))))
    big = plus(("demo/big.bin", os.urandom(3 << 20)))
    add("bomb-total", big, "demo/big.bin", limits={"max_total_size": 2 << 20}, compress=zipfile.ZIP_STORED)
    add("bomb-ratio-configured", plus(("demo/text.txt", b"abc" * 200000)), WHEEL_FILE, limits={"max_ratio": 5})
    # Central and local headers claim 100 bytes; the deflated data expands to 8 MiB.
    lying = plus(("demo/lie.bin", bytes(8 << 20)))
    p = add("bomb-lying-size", lying, "demo/lie.bin",
            record=record_for(lying, override={"demo/lie.bin": (rhash(bytes(100)), 100)}))
    with open(p, "rb") as f:
        raw = bytearray(f.read())
    for cpos, name, local in central_entries(bytes(raw)):
        if name == b"demo/lie.bin":
            struct.pack_into("<I", raw, cpos + 24, 100)
            struct.pack_into("<I", raw, local + 22, 100)
    with open(p, "wb") as f:
        f.write(raw)

    # Local header names something else than the central directory (same length).
    # The refusal names the name the local header smuggles in.
    p = add("local-name-differs", base_members(), "../../../evil.py..")
    with open(p, "rb") as f:
        raw = bytearray(f.read())
    for cpos, name, local in central_entries(bytes(raw)):
        if name == b"demo/aaaaaaaaaa.py":
            raw[local + 30:local + 30 + len(name)] = b"../../../evil.py.."
    with open(p, "wb") as f:
        f.write(raw)
    # Two central entries pointing at one local header (overlapping members).
    over = plus(("demo/bbbbbbbbbb.py", b"B = 'b'\n"))
    # Refused by a member count check that names the archive (libarchive yields one member fewer).
    p = add("overlapping", over, WHEEL_FILE)
    with open(p, "rb") as f:
        raw = bytearray(f.read())
    ents = {name: (cpos, local) for cpos, name, local in central_entries(bytes(raw))}
    struct.pack_into("<I", raw, ents[b"demo/bbbbbbbbbb.py"][0] + 42, ents[b"demo/aaaaaaaaaa.py"][1])
    with open(p, "wb") as f:
        f.write(raw)
    # Local header says a different uncompressed size than the central directory.
    p = add("local-size-differs", base_members(), "demo/aaaaaaaaaa.py", compress=zipfile.ZIP_STORED)
    with open(p, "rb") as f:
        raw = bytearray(f.read())
    for cpos, name, local in central_entries(bytes(raw)):
        if name == b"demo/aaaaaaaaaa.py":
            struct.pack_into("<II", raw, local + 18, 5, 5)
    with open(p, "wb") as f:
        f.write(raw)

    # .data and dist-info.
    add("data-unknown-scheme", plus((f"{NAME}-{VERSION}.data/evil/x.py", b"x")), "evil")
    add("data-other-dist", plus(("other-1.0.data/scripts/x", b"x")), "other-1.0.data")
    add("data-direct-file", plus((f"{NAME}-{VERSION}.data/x.py", b"x")), f"{NAME}-{VERSION}.data/x.py")
    other = [(n.replace(DIST, "other-1.0.dist-info"), d.replace(b"Name: demo", b"Name: other")) for n, d in base_members()]
    other_dist = "other-1.0.dist-info"
    with open(os.devnull, "w"):
        pass
    d = os.path.join(out, "dist-info-name")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, WHEEL_FILE)
    rec = record_for(other).replace(f"{DIST}/RECORD".encode(), f"{other_dist}/RECORD".encode())
    write_zip(path, other + [(f"{other_dist}/RECORD", rec)])
    res.append({"case": "dist-info-name", "file": path, "entry": "other"})
    two = [(n, d.replace(b"Version: 1.0", b"Version: 2.0")) for n, d in base_members()]
    add("metadata-version", two, "2.0")
    add("two-dist-infos", plus(("demo-2.0.dist-info/METADATA", METADATA)), "dist-info")
    add("no-metadata", [m for m in base_members() if not m[0].endswith("METADATA")], "METADATA")
    add("wheel-version-2", [(n, d.replace(b"Wheel-Version: 1.0", b"Wheel-Version: 2.0")) for n, d in base_members()],
        "Wheel-Version")

    # Not a (whole) zip.
    with open(valid, "rb") as f:
        good = f.read()
    add("truncated", raw=good[:len(good) // 2])
    add("truncated-tail", raw=good[:-10])
    add("empty", raw=b"")
    add("not-a-zip", raw=b"<html><body>404 Not Found</body></html>\n" * 10)
    add("bad-filename", base_members(), "demo.whl", filename="demo.whl")
    return res


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    json.dump(cases(out), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
