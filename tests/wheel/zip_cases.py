#!/usr/bin/env python3
"""Writes the ZIP archives of test_wheel_archive.cpp.

  zip_cases.py many OUT N            N members (deflated, stored, empty, directories) and a
                                     dist-info/METADATA as the last member
  zip_cases.py descriptor OUT        every member followed by a data descriptor (flag bit 3),
                                     stored and deflated, one stored member containing a false
                                     PK\\7\\10 signature, the last member stored
  zip_cases.py raw OUT SPEC.json     a stored-only ZIP written byte by byte, with lies:
      {"members": [{"name": "a.txt", "data": "...",
                    "local_name": "other.txt",   # name in the local header only
                    "gap": "bytes",              # written before this member's local header
                    "fake_header": "EVIL",       # then a whole member of the same name with this data
                    "cd_offset_from": 0,         # CD offset: that member's local header instead
                    "cd_offset": 99999,          # CD offset: this value instead
                    "cd_size_delta": 10,         # added to the CD's compressed size
                    "zip64": true,               # sizes (and CD offset) in ZIP64 extra fields
                    "zip64_short": true}],       # ... with the CD's field cut short by 8 bytes
       "reverse_cd": false}                      # central directory in reverse order
"""
import json, struct, sys, zipfile, zlib


class Unseekable:
    """A write-only stream: zipfile then writes data descriptors for every member."""

    def __init__(self, f):
        self.f = f

    def write(self, b):
        return self.f.write(b)

    def flush(self):
        self.f.flush()


def content(i):
    return ("# member %d\n" % i + "x = %d\n" % i * (i % 7)).encode()


def many(out, n):
    with zipfile.ZipFile(out, "w") as z:
        for i in range(n):
            if i % 500 == 0:
                z.writestr(zipfile.ZipInfo("pkg/d%d/" % (i // 500), date_time=(2020, 1, 1, 0, 0, 0)), b"")
            zi = zipfile.ZipInfo("pkg/d%d/m%d.py" % (i // 500, i), date_time=(2020, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_STORED if i % 5 == 0 else zipfile.ZIP_DEFLATED
            zi.external_attr = (0o100755 if i % 11 == 0 else 0o100644) << 16
            z.writestr(zi, b"" if i % 13 == 0 else content(i))
        z.writestr("x-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n")


def descriptor(out):
    members = [
        ("a/stored.txt", b"stored with a descriptor\n" * 3, zipfile.ZIP_STORED),
        ("a/deflated.txt", b"deflated with a descriptor\n" * 50, zipfile.ZIP_DEFLATED),
        # A signature that is not followed by this member's CRC: the reader must read on.
        ("a/decoy.bin", b"before PK\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c after", zipfile.ZIP_STORED),
        ("a/empty.txt", b"", zipfile.ZIP_STORED),
        ("a/deflated2.txt", bytes(range(256)) * 40, zipfile.ZIP_DEFLATED),
        ("a/last.txt", b"last", zipfile.ZIP_STORED),
    ]
    with open(out, "wb") as f:
        with zipfile.ZipFile(Unseekable(f), "w") as z:
            for name, data, method in members:
                zi = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                zi.compress_type = method
                zi.external_attr = 0o100644 << 16
                z.writestr(zi, data)


def raw(out, spec):
    members = spec["members"]
    body = bytearray()
    offsets = []

    def local(name, data, zip64=False):
        size = 0xFFFFFFFF if zip64 else len(data)
        extra = struct.pack("<HHQQ", 1, 16, len(data), len(data)) if zip64 else b""
        return struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if zip64 else 20, 0, 0, 0, 0, zlib.crc32(data), size,
                           size, len(name), len(extra)) + name + extra + data

    for m in members:
        body += m.get("gap", "").encode("latin-1")
        name = m.get("local_name", m["name"]).encode()
        if "fake_header" in m:
            body += local(name, m["fake_header"].encode())
        offsets.append(len(body))
        body += local(name, m.get("data", "").encode(), m.get("zip64", False))
    records = []
    for i, m in enumerate(members):
        data = m.get("data", "").encode()
        name = m["name"].encode()
        off = offsets[m["cd_offset_from"]] if "cd_offset_from" in m else m.get("cd_offset", offsets[i])
        csize, usize, extra = len(data) + m.get("cd_size_delta", 0), len(data), b""
        if m.get("zip64"):
            extra = struct.pack("<QQQ", usize, csize, off)
            if m.get("zip64_short"):
                extra = extra[:16]
            extra = struct.pack("<HH", 1, len(extra)) + extra
            csize = usize = off = 0xFFFFFFFF
        records.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 45 if extra else 20, 0, 0, 0, 0,
                                   zlib.crc32(data), csize, usize, len(name), len(extra), 0, 0, 0,
                                   0o100644 << 16, off) + name + extra)
    if spec.get("reverse_cd"):
        records.reverse()
    cd = b"".join(records)
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(cd), len(body), 0)
    with open(out, "wb") as f:
        f.write(bytes(body) + cd + eocd)


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "many":
        many(out, int(sys.argv[3]))
    elif mode == "descriptor":
        descriptor(out)
    elif mode == "raw":
        raw(out, json.load(open(sys.argv[3])))
    else:
        sys.exit("unknown mode " + mode)


main()
