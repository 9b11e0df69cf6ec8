#!/usr/bin/env python3
"""Every message id of the files that carry ids has a zh_CN translation (issue 56, item 9).

A message is made with util::msg("…", args) or fail(code, "…", args) (util/message.hpp): its English
format string is its id, and i18n::tr(const util::Message&) looks the translation up by that id. A
sentence reworded in the source is a new id: this check names it, instead of the output falling back
to English silently. FILES lists the sources whose every id is translated; a file joins once its
messages carry ids. Exit 1 naming each id without a catalog entry.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Every source of the modules: each user-facing text there is made with an id (issue 56).
MODULES = ["api", "cli", "diagnosis", "fetch", "index", "installer", "lockfile", "matrices", "probe", "project", "resolver", "smoke",
           "specs", "util", "wheel"]
FILES = sorted(str(p.relative_to(ROOT)) for m in MODULES for p in (ROOT / m).rglob("*.cpp"))
# An id whose placeholder has a format spec ("offset {:#x}") cannot be filled from a translation
# (util::fill takes plain {} only): it is shown in English, as the binary-format errors of wheel/ are.
SPEC = re.compile(r"\{[^{}]+\}")

CALL = re.compile(r'\b(?:util::msg|msg|fail_errno\([^,]+,\s*ErrorCode::\w+,|fail\(ErrorCode::\w+,)\s*\(?\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def unescape(s: str) -> str:
    return s.encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


def ids_in(path: pathlib.Path):
    text = path.read_text()
    for m in CALL.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, "".join(unescape(x) for x in LITERAL.findall(m.group(1)))


def catalog(path: pathlib.Path):
    ids, cur, key = set(), None, None
    for line in path.read_text().splitlines():
        if line.startswith("msgid "):
            key, cur = "id", [line[6:]]
        elif line.startswith("msgstr "):
            if key == "id":
                ids.add("".join(unescape(s[1:-1]) for s in cur))
            key = None
        elif line.startswith('"') and key == "id":
            cur.append(line)
    return ids


def main() -> int:
    known = catalog(ROOT / "i18n/zh_CN.po")
    missing = []
    for f in FILES:
        for line, mid in ids_in(ROOT / f):
            # "{}{}", "{}; {}": joins of messages, each translated by its own id; nothing to word.
            if not re.search(r"[A-Za-z]", mid.replace("{}", "")) or SPEC.search(mid.replace("{{", "").replace("}}", "")):
                continue
            if mid not in known:
                missing.append(f"{f}:{line}: no zh_CN entry for id \"{mid}\"")
    for m in missing:
        print(m)
    if missing:
        print(f"check-catalog: {len(missing)} message id(s) without a translation (i18n/zh_CN.po)")
        return 1
    print(f"check-catalog: every message id of {len(FILES)} file(s) has a zh_CN entry")
    return 0


if __name__ == "__main__":
    sys.exit(main())
