#!/usr/bin/env python3
"""List the functions of the core that are longer than a limit (docs/development.md, Long functions).

A brace-matching scan, no compiler needed: comments, string, character and raw string literals and
preprocessor lines are blanked first, then every `{` at namespace or class scope whose header (the text
since the previous `;`, `{` or `}` at that scope) looks like a function or a lambda starts a function; its
length is counted from the first line of that header to the closing brace, inclusive. Lambdas and local
classes inside a function count towards it.

Usage: scripts/long-functions.py [--limit N] [FILE...]   (default: every .cpp of the core modules)
Exit 1 naming file:line, the function and its length for each one over the limit.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The modules (directories with a CMakeLists.txt) less the ones that are not the product.
NOT_CORE = {"tests", "fuzz", "bench", "build", "cmake", "docs", "scripts"}


def core_files():
    for cm in sorted(ROOT.glob("*/CMakeLists.txt")):
        if cm.parent.name not in NOT_CORE:
            yield from sorted(cm.parent.rglob("*.cpp"))


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#" or (line_start and c in " \t" and text[i:].lstrip(" \t").startswith("#")):
            # A preprocessor line, with its backslash continuations.
            j = i
            while j < n:
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        line_start = c == "\n" or (line_start and c in " \t")
        if text.startswith("//", i):
            k = text.find("\n", i)
            k = n if k < 0 else k
            out.append(" " * (k - i))
            i = k
        elif text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
                                                           or text[i - 1] in "8uUL"):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            k = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum() and not re.match(r"(u8|[uUL])$", text[max(0, i - 2):i]))):
            # A string or character literal (a ' after a digit is a digit separator: 1'000).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


CONTAINER = re.compile(r"\b(namespace|struct|class|union|enum)\b[^()]*$|extern\s*\"\s*\"\s*$|^\s*$")
LAMBDA = re.compile(r"\]\s*(\([^)]*\))?[^=;]*$")


def name_of(header):
    """The function's name: the identifier (with its scope) before the parameter list."""
    head = re.sub(r"\s+", " ", header).strip()
    if "=" in head and LAMBDA.search(head):
        m = re.search(r"([A-Za-z_]\w*)\s*=\s*\[", head)
        return (m.group(1) if m else "lambda") + " (lambda)"
    # The name stands before the first parameter list (a constructor's initialisers come after it).
    m = re.search(r"operator\s*\(\s*\)\s*\(|operator\s*[^\s(]+\s*\(|\(", head)
    i = m.start() if m else len(head)
    if head[i:].startswith("operator"):
        return head[i:m.end() - 1].replace(" ", "")
    m = re.search(r"((?:[A-Za-z_~][\w]*\s*(?:<[^()]*>)?\s*::\s*)*[A-Za-z_~][\w]*)\s*$", head[:i])
    return m.group(1).replace(" ", "") if m else head[:40]


def is_function(header):
    head = header.strip()
    if not head or ")" not in head and "]" not in head:
        return False
    # Only an `=` outside parentheses tells data from a function (a default argument `x = {}` is inside).
    depth, outside = 0, []
    for ch in head:
        depth += ch == "("
        if depth == 0:
            outside.append(ch)
        depth -= ch == ")" and depth > 0
    if "=" in re.sub(r"operator\s*[^\s(]+", "", "".join(outside)):
        # `auto f = [..](..) {`: a lambda at namespace scope counts as a function; `T x[] = {` is data.
        return bool(LAMBDA.search(head)) and not head.rstrip().endswith("=")
    # `template <class T>` is not a class head.
    untemplated = re.sub(r"\btemplate\s*<[^{};]*?>", "", head.split("(")[0])
    return bool(re.search(r"\)[^()]*$", head)) and not re.search(r"\b(namespace|struct|class|union|enum)\b", untemplated)


def functions(path):
    text = blank(path.read_text(errors="replace"))
    found = []
    # Scope stack: for each open brace, whether it is a container (namespace/class), function or other.
    stack = []
    header_start = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        in_container = not stack or stack[-1][0] == "container"
        if c == "{":
            if in_container:
                header = text[header_start:i]
                if is_function(header):
                    # A constructor's member initialiser `x_{a}` is not a body: it follows `) :` and ends
                    # in an identifier.
                    if re.search(r"\)\s*(noexcept\s*)?:[^;]*[\w>]\s*$", header) and not re.search(r"\)\s*$", header):
                        stack.append(("init", i, header_start))
                    else:
                        stack.append(("function", i, header_start, name_of(header)))
                elif CONTAINER.search(header) or re.search(r"\b(struct|class|union)\b[^;(]*$", header):
                    stack.append(("container", i, header_start))
                    header_start = i + 1
                else:
                    stack.append(("other", i, header_start))
            else:
                stack.append(("other", i, header_start))
        elif c == "}":
            if stack:
                top = stack.pop()
                if top[0] == "function":
                    begin = top[2] + len(text[top[2]:top[1]]) - len(text[top[2]:top[1]].lstrip())
                    first = text.count("\n", 0, begin) + 1
                    last = text.count("\n", 0, i) + 1
                    found.append((first, last - first + 1, top[3]))
                if top[0] == "init":
                    # The header continues after an initialiser brace.
                    i += 1
                    continue
            # A brace inside a header's parentheses (a default argument `= {}`) does not end the header.
            if (not stack or stack[-1][0] == "container") and text.count("(", header_start, i) <= text.count(")", header_start, i):
                header_start = i + 1
        elif c == ";" and in_container:
            header_start = i + 1
        elif c == ":" and in_container and re.fullmatch(r"\s*(public|private|protected)\s*", text[header_start:i]):
            header_start = i + 1  # an access label is not part of the next member's header
        i += 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=100, help="longest allowed function, in lines (default 100)")
    ap.add_argument("--all", action="store_true", help="list every function, longest first")
    ap.add_argument("files", nargs="*", type=pathlib.Path)
    args = ap.parse_args()
    files = args.files or list(core_files())
    rows = []
    for f in files:
        for line, length, name in functions(f):
            rel = f.resolve().relative_to(ROOT) if f.resolve().is_relative_to(ROOT) else f
            rows.append((length, f"{rel}:{line}", name))
    rows.sort(key=lambda r: (-r[0], r[1]))
    if args.all:
        for length, where, name in rows:
            print(f"{length:5d}  {where}  {name}")
        return 0
    long = [r for r in rows if r[0] > args.limit]
    if long:
        print(f"long-functions: {len(long)} function(s) over {args.limit} lines (docs/development.md, Long functions):",
              file=sys.stderr)
        for length, where, name in long:
            print(f"{where}: {name} is {length} lines", file=sys.stderr)
        return 1
    print(f"long-functions: {len(rows)} functions in {len(files)} files, none over {args.limit} lines")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `--all | head`
        sys.exit(0)
