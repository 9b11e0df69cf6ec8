#!/usr/bin/env python3
"""Writes a test wheel from a JSON spec (used by the installer and staging tests).

spec = {
  "filename": "demo_pkg-1.0-py3-none-any.whl",  # written into OUTDIR
  "name": "demo-pkg", "version": "1.0",           # METADATA (Name/Version)
  "dist_info": "demo_pkg-1.0.dist-info",          # default from name/version
  "root_is_purelib": true, "wheel_version": "1.0",
  "requires": ["other>=1"],                       # Requires-Dist
  "entry_points": "[console_scripts]\\n...",
  "members": [{"name": "pkg/x.py", "content": "...", "mode": 420,
               "symlink": false, "in_record": true, "record_hash": null,
               "zeros": 0, "dup": false}],
  "record_extra": ["pkg/ghost.py,sha256=AAAA,4"], # rows for files not in the archive
  "no_record": false, "utf8_patch": null            # ["XX", "fffe"]: raw bytes in a UTF-8 name
}
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from wheel_writer import metadata_text, record_hash, wheel_text, write_zip  # noqa: E402


def main():
    spec = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    name, version = spec["name"], spec["version"]
    stem = name.replace("-", "_") + "-" + version
    di = spec.get("dist_info", stem + ".dist-info")
    members = list(spec.get("members", []))
    members.append({"name": di + "/METADATA",
                    "content": metadata_text(name, version, spec.get("requires", []), description="A test package.\n")})
    members.append({"name": di + "/WHEEL",
                    "content": wheel_text(root_is_purelib=spec.get("root_is_purelib", True), generator="gen_wheel.py",
                                          wheel_version=spec.get("wheel_version", "1.0"))})
    if spec.get("entry_points"):
        members.append({"name": di + "/entry_points.txt", "content": spec["entry_points"]})
    rows = []
    for m in members:
        m["data"] = m.get("content", "").encode() if "zeros" not in m else b"\0" * m["zeros"]
        if m.get("in_record", True) and not m.get("symlink") and not m["name"].endswith("/"):
            rows.append("%s,%s,%d" % (m["name"], m.get("record_hash") or record_hash(m["data"]), len(m["data"])))
    rows += spec.get("record_extra", [])
    rows.append(di + "/RECORD,,")
    if not spec.get("no_record"):
        members.append({"name": di + "/RECORD", "data": ("\n".join(rows) + "\n").encode()})
    write_zip(out, members, date_time=(2020, 1, 1, 0, 0, 0))
    if spec.get("utf8_patch"):
        old, new = spec["utf8_patch"]
        raw = open(out, "rb").read().replace(old.encode(), bytes.fromhex(new))
        open(out, "wb").write(raw)


main()
