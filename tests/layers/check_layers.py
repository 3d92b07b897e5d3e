#!/usr/bin/env python3
"""kiln's layering rules and exported symbols, checked from the source tree.

Usage: check_layers.py SOURCE_ROOT [LIBKILN_SO]

Fails (exit 1, one line per violation) when
- a file under lib/core includes anything but core/ and public kiln/ headers;
- a file under lib/runtime includes an ops or back-end header, or names an op
  family's embedded source in a string literal (the runtime reaches families
  only through the table of runtime/family.h);
- a back end (lib/backends) includes an ops header;
- a tool (tools/) includes anything but kiln.h and the tools' own headers;
- a library file other than lib/core/env.c reads the environment;
- the functions libkiln exports differ from those the public headers declare
  with KILN_API, or a provider-table slot names a function that is not public.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def files(root, sub, exts=(".c", ".h")):
    d = os.path.join(root, sub)
    for dirpath, _, names in os.walk(d):
        for n in sorted(names):
            if n.endswith(exts):
                yield os.path.join(dirpath, n)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def check_includes(root, problems):
    rules = [
        ("lib/core", lambda inc: inc.startswith(("core/", "kiln/")), "core/ and kiln/ headers only"),
        ("lib/runtime", lambda inc: not inc.startswith(("ops/", "backends/", "backends/")),
         "no ops or back-end header"),
        ("lib/backends", lambda inc: not inc.startswith("ops/"), "no ops header"),
        ("tools", lambda inc: inc == "kiln.h" or inc.startswith("tools/"),
         "kiln.h and tools/ headers only"),
    ]
    for sub, ok, what in rules:
        for path in files(root, sub):
            text = open(path, encoding="utf-8").read()
            for inc in INCLUDE.findall(text):
                if not ok(inc):
                    problems.append(f"{os.path.relpath(path, root)}: includes \"{inc}\" ({sub}: {what})")


def check_runtime_names_no_family(root, problems):
    kernels = os.path.join(root, "cl_kernels")
    sources = {n[:-3] for n in os.listdir(kernels) if n.endswith(".cl") and n != "common.cl"}
    for path in files(root, "lib/runtime"):
        code = strip_comments(open(path, encoding="utf-8").read())
        code = INCLUDE.sub("", code)
        for lit in STRING.findall(code):
            if lit in sources:
                problems.append(f"{os.path.relpath(path, root)}: names the family source \"{lit}\"")


def check_env_in_one_place(root, problems):
    for sub in ("lib",):
        for path in files(root, sub):
            if path.endswith(os.path.join("core", "env.c")):
                continue
            code = strip_comments(open(path, encoding="utf-8").read())
            if re.search(r"\b(secure_)?getenv\s*\(", code):
                problems.append(f"{os.path.relpath(path, root)}: reads the environment itself "
                                "(use kiln__env, lib/core/env.h)")


def public_functions(root):
    decl = re.compile(r"\bKILN_API\b[^;{]*?\b(kiln_\w+)\s*\(", re.S)
    names = set()
    for path in files(root, "include", (".h",)):
        names.update(decl.findall(strip_comments(open(path, encoding="utf-8").read())))
    return names


def check_exports(root, lib, problems):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    exported = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "W", "i"):
            exported.add(parts[2].split("@")[0])
    declared = public_functions(root)
    for name in sorted(exported - declared):
        problems.append(f"{os.path.basename(lib)} exports {name}, which no public header declares with KILN_API")
    for name in sorted(declared - exported):
        problems.append(f"{name} is declared with KILN_API but {os.path.basename(lib)} does not export it")
    provider = open(os.path.join(root, "lib", "provider.c"), encoding="utf-8").read()
    for slot, fn in re.findall(r"\.(\w+)\s*=\s*(kiln_\w+)\s*,", provider):
        if fn not in declared:
            problems.append(f"lib/provider.c: slot {slot} names {fn}, which is not public")


def check_headers_installed(root, problems):
    """Every public header is installed (include/meson.build) and included by kiln.h."""
    listed = open(os.path.join(root, "include", "meson.build")).read()
    umbrella = open(os.path.join(root, "include", "kiln.h")).read()
    for name in sorted(os.listdir(os.path.join(root, "include", "kiln"))):
        if not name.endswith(".h"):
            continue
        if f"'kiln/{name}'" not in listed:
            problems.append(f"include/kiln/{name} is not installed (include/meson.build)")
    for inc in re.findall(r'#include "(kiln/[^"]+)"', umbrella):
        if f"'{inc}'" not in listed:
            problems.append(f"include/kiln.h includes {inc}, which is not installed")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = sys.argv[1]
    problems = []
    check_includes(root, problems)
    check_runtime_names_no_family(root, problems)
    check_env_in_one_place(root, problems)
    check_headers_installed(root, problems)
    if len(sys.argv) > 2:
        check_exports(root, sys.argv[2], problems)
    for p in problems:
        print(p)
    print(f"layers: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
