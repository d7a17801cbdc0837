#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (issue 14: none over 80 lines in core/, harness/, tools/).

Usage: tools/function_lengths.py [--max N] PATH...   (files, or folders scanned for *.h and *.cpp)

A function's length is its body: the lines from its opening brace to its closing brace, both
included; lambdas and local classes count toward the function that holds them. The scanner blanks
comments, string and character literals (raw strings included) and preprocessor lines, then
tracks braces: a brace at namespace or class scope opens a function when the text before it ends
like a function header (a parameter list, then qualifiers, a trailing return type or a
constructor's initializer list). Prints "<file>:<line>: <name>: <n> lines (limit N)" per
offender, longest first, and exits 1 when there is any.
"""
import argparse
import os
import re
import sys

_HEADER_END = re.compile(
    r"\)\s*(?:const\b|override\b|final\b|noexcept\b(?:\s*\([^()]*\))?|mutable\b|&&|&|\s)*"
    r"(?:->\s*[\w:<>,\s*&]+)?\s*(?::.*)?$",
    re.S,
)
_CLASS = re.compile(r"\b(class|struct|union|enum)\b")


def blank_code(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        ch = text[i]
        if at_line_start and ch == "#":
            j = i
            while j < n and text[j] != "\n":  # a directive, with its backslash continuations
                j += 2 if text[j] == "\\" and j + 1 < n else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if ch in " \t":
            out.append(ch)
            i += 1
            continue
        at_line_start = ch == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif ch == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(ch + " " * (j - i - 2) + ch if j - i >= 2 else ch)
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def function_name(header):
    """The name before the parameter list: the identifier before the first '(' outside <...>."""
    depth = 0
    for k, ch in enumerate(header):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif ch == "(" and depth == 0:
            names = re.findall(r"[~\w:]+(?:\s*\(\s*\))?\s*$", header[:k])
            if names and names[-1].strip().endswith("operator"):
                return names[-1].strip() + "()"
            return names[-1].strip() if names else "?"
    return "?"


def scope_kind(header):
    """What a brace at namespace or class scope opens: namespace, class, function or other."""
    flat = " ".join(header.split())
    if re.search(r"\bnamespace\b", flat) or re.match(r"^extern\s*\"", flat):
        return "namespace"
    if "=" in re.sub(r"operator\s*[=!<>]=?|[=!<>]=", "", flat.split("(")[0]):
        return "other"  # an initializer: `T x = {`, `auto f = [] {`
    if "(" in flat and _HEADER_END.search(flat):
        # `Foo(int a) : a_{a}`: a brace after a member name of an initializer list initialises it.
        if re.search(r"\)\s*:", flat) and re.search(r"\w\s*$", flat):
            return "other"
        return "function"
    if _CLASS.search(flat):
        return "class"
    return "other"


def functions(path):
    """(name, first line, lines) of every function defined in the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank_code(f.read())
    found = []
    stack = []  # (kind, line of the brace, header)
    header = []
    line = 1
    for ch in code:
        if ch == "\n":
            line += 1
        in_function = any(kind in ("function", "other") for kind, _, _ in stack)
        if ch == "{":
            if in_function:
                stack.append(("nested", line, ""))
                continue
            text = "".join(header).strip()
            kind = scope_kind(text)
            stack.append((kind, line, text))
            if kind != "other":
                header = []
        elif ch == "}":
            if not stack:
                continue
            kind, start, text = stack.pop()
            if kind == "function":
                found.append((function_name(text), start, line - start + 1))
            if kind in ("namespace", "class", "function"):
                header = []
            elif kind == "other" and not any(k in ("function", "other") for k, _, _ in stack):
                header.append("{}")  # `y_{b}` of an initializer list stays part of the header
        elif not in_function:
            if ch == ";":
                header = []
            elif ch == ":" and re.search(r"\b(public|private|protected)\s*$", "".join(header)):
                header = []
            else:
                header.append(ch)
    return found


def sources(paths):
    for p in paths:
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                if name.endswith((".h", ".cpp")):
                    yield os.path.join(p, name)
        else:
            yield p


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=80, help="longest allowed body in lines (default 80)")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    offenders = []
    for path in sources(args.paths):
        for name, start, lines in functions(path):
            if lines > args.max:
                offenders.append((lines, path, start, name))
    for lines, path, start, name in sorted(offenders, key=lambda o: (-o[0], o[1], o[2])):
        print(f"{path}:{start}: {name}: {lines} lines (limit {args.max})")
    return 1 if offenders else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
