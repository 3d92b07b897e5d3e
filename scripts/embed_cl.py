#!/usr/bin/env python3
"""Embed OpenCL C sources into the library.

Usage: embed_cl.py OUT_C OUT_H --include-dir DIR ... -- FILE.cl ...

Each source has our own `#include "..."` lines expanded (searched in its own
directory, then in every --include-dir), once per file, so the text the
library compiles is self-contained and the recorded hash covers exactly it.
A file whose first line is REINCLUDE_MARKER opts in to being expanded at
every include instead: a kernel template stamped once per set of #define'd
parameters (cl_kernels/reduce_kernels.clh).
Outputs are removed on any error so a broken build never leaves stale tables.

One-kernel builds: every kernel of the embedded text can be compiled alone.
With -DKILN_ONLY -DKILN_ONLY_IS_<name>=KILN_K_PROBE_ a program holds only
kernel <name> (PoCL compiles a work-group function for every kernel of a
program when asked for its binary, so a cached program of one kernel costs
one kernel's compile; docs/cache.md). Kernels declared at file level under a
plain name are wrapped in #if (they vanish); kernels whose name is computed
(inside a #define, or FN(...) in a template) get KILN_KERNEL(name) in place
of `kernel`, which turns the others into unused static functions; inside a
#define the body is also wrapped in KILN_KBODY(name, ...), which leaves only a
prototype, so the others are not even parsed.
"""
import hashlib
import os
import re
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')
REINCLUDE_MARKER = '/* kiln-embed: reinclude */'


def expand(path, search, seen, deps, stack=()):
    real = os.path.realpath(path)
    if real in stack:
        raise SystemExit(f'{path}: includes itself')
    with open(path, encoding='utf-8') as f:
        lines = f.readlines()
    reinclude = bool(lines) and lines[0].strip() == REINCLUDE_MARKER
    if real in seen and not reinclude:
        return ''
    if real not in seen:
        seen.add(real)
        deps.append(real)
    out = []
    for lineno, line in enumerate(lines, 1):
        m = INCLUDE_RE.match(line)
        if not m:
            out.append(line)
            continue
        name = m.group(1)
        for d in [os.path.dirname(path)] + search:
            cand = os.path.join(d, name)
            if os.path.isfile(cand):
                out.append(expand(cand, search, seen, deps, stack + (real,)))
                break
        else:
            raise SystemExit(f'{path}:{lineno}: cannot find include "{name}"')
    return ''.join(out)


ONE_KERNEL_PRELUDE = """/* kiln-embed: one-kernel builds (scripts/embed_cl.py) */
#define KILN_K_SECOND_(a, b, ...) b
#define KILN_K_IS_PROBE_(...) KILN_K_SECOND_(__VA_ARGS__, 0, 0)
#define KILN_K_PROBE_ ~, 1
#define KILN_K_CAT_(a, b) a##b
#define KILN_K_CAT(a, b) KILN_K_CAT_(a, b)
#define KILN_K_SEL_1 kernel
#define KILN_K_SEL_0 static
#define KILN_KB_SEL_1(...) __VA_ARGS__
#define KILN_KB_SEL_0(...) ;
#ifdef KILN_ONLY
#define KILN_KERNEL(n) KILN_K_CAT(KILN_K_SEL_, KILN_K_IS_PROBE_(KILN_K_CAT(KILN_ONLY_IS_, n)))
#define KILN_KBODY(n, ...) \\
  KILN_K_CAT(KILN_KB_SEL_, KILN_K_IS_PROBE_(KILN_K_CAT(KILN_ONLY_IS_, n)))(__VA_ARGS__)
#else
#define KILN_KERNEL(n) kernel
#define KILN_KBODY(n, ...) __VA_ARGS__
#endif
"""

KERNEL_LINE_RE = re.compile(r'^(\s*)(__kernel|kernel)\b')
ATTR_FIRST_RE = re.compile(r'^\s*__attribute__\b.*\b(__kernel|kernel)\b')
MACRO_KERNEL_RE = re.compile(r'\b(?:__kernel|kernel)(\s+void\s+)(\w+(?:\s*##\s*\w+)*)(\s*\()')


def skip_space_comments(text, i):
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text.startswith('/*', i):
            i = text.index('*/', i) + 2
        elif text.startswith('//', i):
            i = text.index('\n', i)
        else:
            break
    return i


def match_close(text, i, open_ch, close_ch):
    """Index just past the bracket closing the one at text[i], skipping comments and literals."""
    depth = 0
    while i < len(text):
        c = text[i]
        if text.startswith('/*', i):
            i = text.index('*/', i) + 2
            continue
        if text.startswith('//', i):
            i = text.index('\n', i)
            continue
        if c in '"\'':
            j = i + 1
            while text[j] != c:
                j += 2 if text[j] == '\\' else 1
            i = j + 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise SystemExit('embed_cl.py: unbalanced brackets in a kernel')


def skip_macro_space(text, i):
    """skip_space_comments, also over the backslash-newlines of a #define."""
    while True:
        j = skip_space_comments(text, i)
        if text.startswith('\\\n', j):
            i = j + 2
        else:
            return j


def macro_kernels(mac, path):
    """Kernels defined inside one #define: KILN_KERNEL(name) for `kernel`, and the body
    wrapped in KILN_KBODY(name, {...}), which drops it (leaving a prototype) when another
    kernel is selected, so the compiler does not even parse it."""
    out, pos = [], 0
    for m in MACRO_KERNEL_RE.finditer(mac):
        if m.start() < pos:
            continue
        name = m.group(2)
        close = match_close(mac, m.end() - 1, '(', ')')
        body = skip_macro_space(mac, close)
        if mac[body] != '{':
            raise SystemExit(f'{path}: cannot find the body of macro kernel {name}')
        end = match_close(mac, body, '{', '}')
        out.append(mac[pos:m.start()])
        out.append(f'KILN_KERNEL({name}){m.group(1)}{name}{mac[m.end(2):body]}')
        out.append(f'KILN_KBODY({name}, {mac[body:end]})')
        pos = end
    out.append(mac[pos:])
    return ''.join(out)


def one_kernel_builds(text, path):
    """Makes each kernel of text selectable on its own (see the module docstring)."""
    lines = text.splitlines(keepends=True)
    # Offsets of line starts, and whether each line continues a #define.
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line)
    out, i, in_macro = [], 0, False
    while i < len(lines):
        line = lines[i]
        continued = line.rstrip('\n').endswith('\\')
        if line.lstrip().startswith('#define'):
            # The whole definition, continuation lines included.
            last = i
            while lines[last].rstrip('\n').endswith('\\') and last + 1 < len(lines):
                last += 1
            out.append(macro_kernels(''.join(lines[i:last + 1]), path))
            i = last + 1
            continue
        if ATTR_FIRST_RE.match(line):
            raise SystemExit(f'{path}: write "kernel __attribute__((...)) void", not the attribute '
                             f'first (one-kernel builds would miss this kernel): {line.strip()}')
        m = KERNEL_LINE_RE.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        # A file-level kernel: find its name (the identifier before the parameter list).
        at = starts[i] + m.end()
        j = skip_space_comments(text, at)
        # An attribute between kernel and void, spelled out or through a function-like
        # macro (nn_attention.cl's ATT_WG(n), empty on CPUs).
        attr = re.match(r'[A-Za-z_]\w*\s*\(', text[j:j + 200])
        if attr and not text.startswith('void', j):
            j = match_close(text, text.index('(', j), '(', ')')
            j = skip_space_comments(text, j)
        if not text.startswith('void', j):
            raise SystemExit(f'{path}: kernel without void near "{text[j:j + 40]}"')
        j = skip_space_comments(text, j + 4)
        k = j
        while text[k].isalnum() or text[k] == '_':
            k += 1
        name = text[j:k]
        after = match_close(text, skip_space_comments(text, k), '(', ')')
        nxt = skip_space_comments(text, after)
        if text[nxt] == '(':
            # A computed name, FN(_rows)(...): select through the macro.
            computed = text[j:after]
            out.append(line[:m.start(2)] + f'KILN_KERNEL({computed})' + line[m.end(2):])
            i += 1
            continue
        if text[nxt] != '{':
            raise SystemExit(f'{path}: cannot find the body of kernel {name}')
        end = match_close(text, nxt, '{', '}')
        last = i
        while last + 1 < len(lines) and starts[last + 1] < end:
            last += 1
        if text[end:starts[last] + len(lines[last])].strip():
            raise SystemExit(f'{path}: text after the body of kernel {name} on its last line')
        out.append(f'#if !defined(KILN_ONLY) || defined(KILN_ONLY_IS_{name})\n')
        out.extend(lines[i:last + 1])
        if not out[-1].endswith('\n'):
            out[-1] += '\n'
        out.append('#endif\n')
        i = last + 1
    return ONE_KERNEL_PRELUDE + ''.join(out)


def c_literal(text):
    # Split into lines so compilers never see one multi-megabyte token.
    parts = []
    for line in text.splitlines(keepends=True):
        esc = line.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
        parts.append(f'"{esc}"')
    return '\n    '.join(parts) if parts else '""'


def main(argv):
    out_c, out_h = argv[1], argv[2]
    rest = argv[3:]
    search, files = [], []
    i = 0
    while i < len(rest):
        if rest[i] == '--include-dir':
            search.append(rest[i + 1])
            i += 2
        elif rest[i] == '--':
            files = rest[i + 1:]
            break
        else:
            raise SystemExit(f'embed_cl.py: unexpected argument {rest[i]}')
    entries = []
    for path in sorted(files):
        name = os.path.splitext(os.path.basename(path))[0]
        plain = expand(path, search, set(), [])
        text = one_kernel_builds(plain, path)
        digest = hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]
        entries.append((name, text, digest, plain))
    with open(out_h, 'w', encoding='utf-8') as h:
        h.write('/* Generated by scripts/embed_cl.py: do not edit. */\n')
        h.write('#pragma once\n#include <stddef.h>\n\n')
        h.write('struct kiln__cl_source {\n    const char *name;\n    const char *text;\n'
                '    size_t len;\n    const char *hash; /* sha256 prefix of text, hex */\n'
                '    /* The source without the one-kernel rewriting: OpenCL C 1.2 has no variadic\n'
                '     * macros, which text uses, so only builds with -DKILN_ONLY take text. */\n'
                '    const char *plain;\n    size_t plain_len;\n};\n\n')
        h.write('extern const struct kiln__cl_source kiln__cl_sources[];\n')
        h.write(f'#define KILN__CL_SOURCE_COUNT {len(entries)}\n')
    with open(out_c, 'w', encoding='utf-8') as c:
        c.write('/* Generated by scripts/embed_cl.py: do not edit. */\n')
        c.write(f'#include "{os.path.basename(out_h)}"\n\n')
        c.write('const struct kiln__cl_source kiln__cl_sources[] = {\n')
        for name, text, digest, plain in entries:
            c.write(f'  {{"{name}",\n    {c_literal(text)},\n    {len(text.encode("utf-8"))}, "{digest}",\n'
                    f'    {c_literal(plain)},\n    {len(plain.encode("utf-8"))}}},\n')
        c.write('};\n')


if __name__ == '__main__':
    try:
        main(sys.argv)
    except BaseException:
        for p in sys.argv[1:3]:
            if os.path.exists(p):
                os.remove(p)
        raise
