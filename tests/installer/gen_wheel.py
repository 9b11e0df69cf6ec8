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
import base64, hashlib, json, sys, zipfile

def rec_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

def main():
    spec = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    name, version = spec["name"], spec["version"]
    stem = name.replace("-", "_") + "-" + version
    di = spec.get("dist_info", stem + ".dist-info")
    members = list(spec.get("members", []))
    md = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    for r in spec.get("requires", []):
        md += "Requires-Dist: %s\n" % r
    md += "\nA test package.\n"
    members.append({"name": di + "/METADATA", "content": md})
    members.append({"name": di + "/WHEEL", "content":
                    "Wheel-Version: %s\nGenerator: gen_wheel.py\nRoot-Is-Purelib: %s\nTag: py3-none-any\n"
                    % (spec.get("wheel_version", "1.0"), "true" if spec.get("root_is_purelib", True) else "false")})
    if spec.get("entry_points"):
        members.append({"name": di + "/entry_points.txt", "content": spec["entry_points"]})
    rows = []
    for m in members:
        data = m.get("content", "").encode() if "zeros" not in m else b"\0" * m["zeros"]
        m["_data"] = data
        if m.get("in_record", True) and not m.get("symlink") and not m["name"].endswith("/"):
            rows.append("%s,%s,%d" % (m["name"], m.get("record_hash") or rec_hash(data), len(data)))
    rows += spec.get("record_extra", [])
    rows.append(di + "/RECORD,,")
    if not spec.get("no_record"):
        members.append({"name": di + "/RECORD", "_data": ("\n".join(rows) + "\n").encode()})
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for m in members:
            zi = zipfile.ZipInfo(m["name"], date_time=(2020, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            mode = m.get("mode", 0o644)
            if m.get("symlink"):
                zi.external_attr = (0o120777 << 16)
                data = m.get("content", "").encode()
            else:
                zi.external_attr = ((0o40755 if m["name"].endswith("/") else (0o100000 | mode)) << 16)
                data = m["_data"]
            if m.get("utf8"):
                zi.flag_bits |= 0x800
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                z.writestr(zi, data)
                if m.get("dup"):
                    z.writestr(zi, data)
    if spec.get("utf8_patch"):
        old, new = spec["utf8_patch"]
        raw = open(out, "rb").read().replace(old.encode(), bytes.fromhex(new))
        open(out, "wb").write(raw)

main()
