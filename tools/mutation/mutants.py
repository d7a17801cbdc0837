"""Mutant generation for tools/mutate.py: one-line textual changes of a C++ source file.

Each mutant changes exactly one line.  Operators (names as printed and stored in reports):
  ror          relational off-by-one: < <-> <=, > <-> >=
  loop_bound   for-loop bound +-1, loop start +1, loop step +1
  rounding     Rounding:: mode swaps, std::round/nearbyint/rint/trunc/floor/ceil swaps, and a
               non-default mode given to a conversion that relies on the default (RNE)
  precision    a float literal rounded through fp16 (bf16 when out of fp16 range), a double
               literal rounded to float
  index_swap   a * b + c -> c * b + a (row/column of a linear index), / <-> % on integer-looking
               operands, two adjacent plain-identifier arguments of a call swapped
  arith        + <-> -, * <-> /, and the compound assignments
  skip_stmt    one expression statement (assignment, call, ++, continue/break) deleted
  negate       an if/while condition or a bool initialiser negated, a ! removed, true <-> false

Never mutated: comments, string literals, preprocessor lines, the defect enum and catalogue
(`enum class Defect`, `kDefects[]`), the fault backend's injected-defect code (a conjunction
containing `defect == Defect::k...` or a bool flag initialised from one, the true arm of a ternary
conditioned on it, and the whole body of an `if` whose condition is such a conjunction), and
harness guards (OPGATE_TRY / OPGATE_ASSIGN_OR_RETURN statements, and an `if` whose body returns an
error status): these are not kernel numerics.

Mutant id: the first 12 hex digits of
  sha1("<file>\\0<operator>\\0<original line, stripped>\\0<mutated line, stripped>\\0<k>")
where k counts earlier lines of the file with the same stripped text.  The line number is
recorded but not hashed, so an edit above a line does not rename its mutants and the
equivalents file stays valid across runs.
"""

import hashlib
import re
import struct
from dataclasses import dataclass, asdict

OPERATORS = ("ror", "loop_bound", "rounding", "precision", "index_swap", "arith", "skip_stmt", "negate")


@dataclass
class Mutant:
    id: str
    file: str       # path relative to the tree root
    line: int       # 1-based
    operator: str
    original: str   # the whole original line (without newline)
    mutated: str    # the whole mutated line

    def as_dict(self):
        return asdict(self)


def mutant_id(file, operator, original, mutated, occurrence):
    key = "\0".join([file, operator, original.strip(), mutated.strip(), str(occurrence)])
    return hashlib.sha1(key.encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------------------------
# Blanking: comments and the insides of string/char literals become spaces, offsets unchanged.

def blank_comments_and_strings(text):
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _match_close(code, open_at):
    """Index of the bracket closing the one at open_at, or -1."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    o = code[open_at]
    c = pairs[o]
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == o:
            depth += 1
        elif code[k] == c:
            depth -= 1
            if depth == 0:
                return k
    return -1


_ASSIGN_AT = re.compile(r"(?<![=!<>+\-*/%&|^])=(?!=)")


def _is_delim_left(code, k):
    """Length of the conjunction delimiter ending at k (inclusive), or 0."""
    ch = code[k]
    if ch in ";{},?":
        return 1
    if ch == ":" and not (code[k - 1:k + 1] == "::" or code[k:k + 2] == "::"):
        return 1
    if ch == "|" and k > 0 and code[k - 1] == "|":
        return 2
    if ch == "=" and _ASSIGN_AT.match(code, k) and (k == 0 or code[k - 1] not in "=!<>+-*/%&|^"):
        return 1
    if code[max(0, k - 5):k + 1] == "return" and (k - 6 < 0 or not code[k - 6].isalnum()):
        return 6
    return 0


def _conjunction_span(code, start, end):
    """The &&-conjunction around code[start:end] at its paren depth: (left, right, left_delim,
    right_delim) where left/right are offsets just inside the delimiters."""
    depth, k = 0, start - 1
    left_delim = ""
    while k >= 0:
        ch = code[k]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                left_delim = ch
                break
            depth -= 1
        elif depth == 0:
            d = _is_delim_left(code, k)
            if d:
                left_delim = code[k - d + 1:k + 1]
                break
        k -= 1
    left = k + 1
    depth, k = 0, end
    right_delim = ""
    while k < len(code):
        ch = code[k]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                right_delim = ch
                break
            depth -= 1
        elif depth == 0:
            if ch in ";{},?" or (ch == ":" and code[k:k + 2] != "::" and code[k - 1] != ":"):
                right_delim = ch
                break
            if code.startswith("||", k):
                right_delim = "||"
                break
        k += 1
    return left, k, left_delim, right_delim


def _ternary_colon(code, q):
    """The ':' matching the '?' at q, or -1."""
    depth, nested, k = 0, 0, q + 1
    while k < len(code):
        ch = code[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return -1
            depth -= 1
        elif depth == 0:
            if ch == "?":
                nested += 1
            elif ch == ":" and code[k:k + 2] != "::" and code[k - 1] != ":":
                if nested == 0:
                    return k
                nested -= 1
            elif ch == ";":
                return -1
        k += 1
    return -1


def _statement_end(code, k):
    """End (exclusive) of the statement or block starting at k (first non-space char)."""
    while k < len(code) and code[k].isspace():
        k += 1
    if k < len(code) and code[k] == "{":
        close = _match_close(code, k)
        return len(code) if close < 0 else close + 1
    depth = 0
    while k < len(code):
        ch = code[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            return k + 1
        k += 1
    return len(code)


_DEFECT_CMP = re.compile(r"\b\w*defect\w*\s*(==|!=)\s*Defect::\w+")
_FLAG_DECL = re.compile(r"\bbool\s+(\w+)\s*=\s*$")


def protected_mask(code):
    """Per character: True where no mutation may touch (see the module docstring)."""
    n = len(code)
    prot = [False] * n

    def cover(a, b):
        for k in range(max(0, a), min(n, b)):
            prot[k] = True

    # Preprocessor lines.
    for m in re.finditer(r"(?m)^[ \t]*#.*$", code):
        cover(m.start(), m.end())
    # The defect enum and catalogue.
    for m in re.finditer(r"enum\s+class\s+Defect\b|\bkDefects\s*\[\s*\]\s*=", code):
        brace = code.find("{", m.end())
        close = _match_close(code, brace) if brace >= 0 else -1
        if close >= 0:
            cover(m.start(), close + 1)
    # Harness guards.
    for m in re.finditer(r"\b(OPGATE_TRY|OPGATE_ASSIGN_OR_RETURN)\s*\(", code):
        cover(m.start(), _statement_end(code, m.start()))
    for m in re.finditer(r"\bif\s*\(", code):
        close = _match_close(code, m.end() - 1)
        if close < 0:
            continue
        end = _statement_end(code, close + 1)
        body = code[close + 1:end].strip().lstrip("{").strip()
        if body.startswith("return") and re.match(r"return\s+(\w+::)*\w*(_error|invalid_case)\s*\(", body):
            cover(m.start(), end)

    # Defect comparisons, then bool flags initialised from a defect-only conjunction.
    flags = set()
    patterns = [_DEFECT_CMP]
    changed = True
    while changed:
        changed = False
        for pat in patterns:
            for m in pat.finditer(code):
                is_eq = m.group(0).find("!=") < 0
                left, right, ldel, rdel = _conjunction_span(code, m.start(), m.end())
                if not is_eq:
                    cover(m.start(), m.end())
                    continue
                cover(left, right)
                # A bool flag holding the defect-only conjunction.
                decl = _FLAG_DECL.search(code[:left])
                if ldel == "=" and rdel == ";" and decl and decl.group(1) not in flags:
                    flags.add(decl.group(1))
                    changed = True
                # The true arm of a ternary whose condition is defect-only.
                if rdel == "?" and ldel != "||":
                    colon = _ternary_colon(code, right)
                    if colon > 0:
                        cover(right, colon + 1)
                # The body of an if whose whole condition is the defect-only conjunction.
                if ldel == "(":
                    before = code[:left - 1].rstrip()
                    if re.search(r"\bif$", before) and right < n and code[right] == ")":
                        if_at = before.rfind("if")
                        cover(if_at, _statement_end(code, right + 1))
        if flags:
            patterns = [_DEFECT_CMP, re.compile(r"\b(" + "|".join(sorted(flags)) + r")\b(\s*==\s*true)?")]
            # Recompute the pattern's effect for flag uses (flag declarations are covered already).
    return prot


# ---------------------------------------------------------------------------------------------
# Operators. Each yields (start_col, end_col, replacement) on one line of blanked code.

_REL_SWAP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}


def op_ror(line):
    for m in re.finditer(r"(?<= )(<=|>=|<|>)(?= )", line):
        yield m.start(), m.end(), _REL_SWAP[m.group(1)]


def _split_top(text, sep):
    parts, depth, cur = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append((cur, k))
            cur = k + 1
    parts.append((cur, len(text)))
    return parts


def _wrap(expr):
    return f"({expr})" if re.search(r"\s", expr.strip()) else expr.strip()


def op_loop_bound(line):
    for m in re.finditer(r"\bfor\s*\(", line):
        close = _match_close(line, m.end() - 1)
        if close < 0:
            continue
        inner_at = m.end()
        parts = _split_top(line[inner_at:close], ";")
        if len(parts) != 3:
            continue
        (i0, i1), (c0, c1), (s0, s1) = [(a + inner_at, b + inner_at) for a, b in parts]
        init = line[i0:i1]
        im = re.search(r"(?<![=!<>])=\s*(\S.*?)\s*$", init)
        if im:
            a, b = i0 + im.start(1), i0 + im.end(1)
            yield a, b, _wrap(line[a:b]) + " + 1"
        cond = line[c0:c1]
        cm = re.search(r" (<=|>=|<|>|!=) ", cond)
        if cm:
            rhs_at = c0 + cm.end()
            rhs_end = c1
            lm = re.search(r" (&&|\|\|) ", line[rhs_at:c1])
            if lm:
                rhs_end = rhs_at + lm.start()
            while rhs_end > rhs_at and line[rhs_end - 1] == " ":
                rhs_end -= 1
            rhs = line[rhs_at:rhs_end]
            yield rhs_at, rhs_end, _wrap(rhs) + " + 1"
            yield rhs_at, rhs_end, _wrap(rhs) + " - 1"
        step = line[s0:s1]
        sm = re.search(r"(\+=|-=)\s*(\S.*?)\s*$", step)
        if sm:
            a, b = s0 + sm.start(2), s0 + sm.end(2)
            yield a, b, _wrap(line[a:b]) + " + 1"


_MODES = ("kNearestEven", "kHalfAway", "kTowardZero")
_ROUND_FN = {"round": ("nearbyint", "trunc"), "nearbyint": ("round", "trunc"), "rint": ("round", "trunc"),
             "trunc": ("round", "nearbyint"), "floor": ("ceil", "trunc"), "ceil": ("floor", "trunc"),
             "lround": ("lrint",), "lrint": ("lround",)}
# Conversions whose last parameter is a Rounding defaulting to RNE: name -> arguments without it.
_DEFAULT_RNE = {"round_to": 2, "f16_from_double": 1, "bf16_from_double": 1, "f32_from_double": 1,
                "store_element": 3, "set": 2}


def op_rounding(line):
    for m in re.finditer(r"\bRounding::(k\w+)", line):
        for other in _MODES:
            if other != m.group(1) and m.group(1) in _MODES:
                yield m.start(1), m.end(1), other
    for m in re.finditer(r"\bstd::(\w+)\s*\(", line):
        for other in _ROUND_FN.get(m.group(1), ()):
            yield m.start(1), m.end(1), other
    for m in re.finditer(r"(?:\.|\b)(" + "|".join(_DEFAULT_RNE) + r")\s*\(", line):
        name = m.group(1)
        if name == "set" and not line[m.start()] == ".":
            continue
        open_at = m.end() - 1
        close = _match_close(line, open_at)
        if close < 0:
            continue
        args = _split_top(line[open_at + 1:close], ",")
        if len(args) != _DEFAULT_RNE[name] or "Rounding" in line[open_at:close]:
            continue
        value = line[open_at + 1 + args[-1][0]:open_at + 1 + args[-1][1]].strip()
        if re.fullmatch(r"[-+]?[\d.]+f?", value):
            continue  # a literal: exactly representable in practice
        for mode in ("kHalfAway", "kTowardZero"):
            yield close, close, f", Rounding::{mode}"


def _fp16(x):
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return None


def _bf16(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _f32(x):
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return None


_FLOAT_LIT = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)([fF]?)(?![\w.])")


def op_precision(line):
    for m in _FLOAT_LIT.finditer(line):
        if line[max(0, m.start() - 2):m.start()].lower() == "0x":
            continue
        value = float(m.group(1))
        if m.group(2):  # float constant: through fp16 (bf16 when it overflows fp16)
            f32 = _f32(value)
            dropped = _fp16(f32)
            if dropped is None or dropped == f32:
                dropped = _bf16(f32)
            if dropped != f32:
                yield m.start(), m.end(), repr(dropped) + "f"
        else:  # double constant: through float
            dropped = _f32(value)
            if dropped is not None and dropped != value:
                yield m.start(), m.end(), repr(dropped)


_OPERAND = r"[A-Za-z_][\w.]*(?:->\w+)*(?:\(\))?"


def op_index_swap(line):
    pat = re.compile(r"(?<![\w.*/%>])(?<![*/%] )(" + _OPERAND + r") \* (" + _OPERAND + r") \+ (" + _OPERAND +
                     r")(?![\w.(\[])(?! \*| /| %)")
    for m in pat.finditer(line):
        a, b, c = m.group(1), m.group(2), m.group(3)
        if a != c:
            yield m.start(), m.end(), f"{c} * {b} + {a}"
    for m in re.finditer(r"(?<=[\w)\]]) ([/%]) (?=(" + _OPERAND + r"|\d+)(?![\w.]))", line):
        rhs = m.group(2)
        if re.fullmatch(r"\d+", rhs) or re.fullmatch(_OPERAND, rhs):
            yield m.start(1), m.end(1), "%" if m.group(1) == "/" else "/"
    for m in re.finditer(r"(?<![\w:])((?:[A-Za-z_]\w*(?:\.|->))*[a-z_]\w*)\s*\(", line):
        if m.group(1) in ("if", "for", "while", "switch", "return", "sizeof") or re.search(r"std::|fmt::", line[
                max(0, m.start() - 5):m.start()]):
            continue
        open_at = m.end() - 1
        close = _match_close(line, open_at)
        if close < 0:
            continue
        args = _split_top(line[open_at + 1:close], ",")
        texts = [line[open_at + 1 + a:open_at + 1 + b] for a, b in args]
        for k in range(len(texts) - 1):
            x, y = texts[k].strip(), texts[k + 1].strip()
            if x != y and re.fullmatch(r"[A-Za-z_][\w.]*", x) and re.fullmatch(r"[A-Za-z_][\w.]*", y):
                a = open_at + 1 + args[k][0]
                b = open_at + 1 + args[k + 1][1]
                lead = texts[k][:len(texts[k]) - len(texts[k].lstrip())]
                yield a, b, f"{lead}{y}, {x}"


_ARITH_SWAP = {"+": "-", "-": "+", "*": "/", "/": "*"}


def op_arith(line):
    for m in re.finditer(r"(?<= )([-+*/])(=?)(?= )", line):
        yield m.start(1), m.end(1), _ARITH_SWAP[m.group(1)]


_DECL = re.compile(r"^(?:(?:const|static|constexpr|mutable)\s+)*[\w:]+(?:<.*>)?[\s*&]+\w+\s*(?:=|\{|\(|;|\[)")
_NOT_STMT = re.compile(r"^(return|case|default|using|namespace|template|typedef|struct|class|enum|else|do|public|"
                       r"private|protected|static_assert|\}|\{|\))\b")


def op_skip_stmt(line, prev_code_line):
    s = line.strip()
    if not s.endswith(";") or _NOT_STMT.match(s) or not prev_code_line.rstrip().endswith((";", "{", "}")):
        return
    if s.startswith(("if ", "if(", "for ", "for(", "while ")) or not _DECL.match(s):
        lead = len(line) - len(line.lstrip())
        yield lead, len(line.rstrip()), ""


def op_negate(line):
    for m in re.finditer(r"\b(if|while)\s*\(", line):
        close = _match_close(line, m.end() - 1)
        cond = line[m.end():close] if close > 0 else ""
        if cond and not cond.startswith("!"):  # "if (!x)" is negated by removing the "!"
            yield m.end(), close, f"!({cond})"
    m = re.search(r"\bbool\s+\w+\s*=\s*", line)
    if m:
        end = line.rfind(";")
        if end > m.end() and line[m.end():end].strip():
            yield m.end(), end, f"!({line[m.end():end]})"
    for m in re.finditer(r"!(?=[\w(])", line):
        yield m.start(), m.end(), ""
    for m in re.finditer(r"\b(true|false)\b", line):
        yield m.start(), m.end(), "false" if m.group(1) == "true" else "true"


# ---------------------------------------------------------------------------------------------

def generate(text, relpath, operators=OPERATORS):
    """All mutants of one file's text, in line order (deduplicated by mutated line)."""
    code = blank_comments_and_strings(text)
    prot = protected_mask(code)
    lines = text.split("\n")
    code_lines = code.split("\n")
    out, seen_text = [], {}
    offset = 0
    prev_code = "{"
    for idx, (line, cl) in enumerate(zip(lines, code_lines)):
        key = line.strip()
        occurrence = seen_text.get(key, 0)
        seen_text[key] = occurrence + 1
        line_prot = prot[offset:offset + len(line)]
        if cl.strip() and not all(line_prot[k] for k in range(len(cl)) if not cl[k].isspace()):
            produced = set()
            for op in operators:
                if op == "skip_stmt":
                    sites = op_skip_stmt(cl, prev_code)
                else:
                    sites = globals()["op_" + op](cl)
                for a, b, repl in sites:
                    lo, hi = (a, b) if b > a else (a - 1, a + 1)
                    if any(line_prot[k] for k in range(max(0, lo), min(len(line), hi))):
                        continue
                    if op == "skip_stmt" and any(line_prot[k] for k in range(len(cl)) if not cl[k].isspace()):
                        continue
                    mutated = line[:a] + repl + line[b:]
                    if mutated == line or mutated in produced:
                        continue
                    produced.add(mutated)
                    out.append(Mutant(mutant_id(relpath, op, line, mutated, occurrence), relpath, idx + 1, op,
                                      line, mutated))
        if cl.strip():
            prev_code = cl
        offset += len(line) + 1
    return out
