#!/usr/bin/env python3
"""Checks subprojects/*.wrap against the dependency() calls of meson.build, offline.

Usage: check_wraps.py SOURCE_ROOT DEPENDENCY...

Each DEPENDENCY named must be looked up in SOURCE_ROOT/meson.build with a fallback.
Every fallback there must name a wrap that parses and that meson can fetch and verify
on a machine without the package: a [wrap-file] with a source URL, file name and sha256,
and either WrapDB's patch_url/patch_filename/patch_hash/wrapdb_version (consistent with
one another, as WrapDB writes them) or a patch_directory under subprojects/packagefiles/
whose meson.build overrides the dependency. The [provide] section must offer the
dependency under the name meson.build asks for. A wrap that no fallback uses is an
error too, so the directory cannot drift from meson.build.
"""

import configparser
import re
import sys
from pathlib import Path

SHA256 = re.compile(r"[0-9a-f]{64}")


def strip_comments(text):
    """meson.build text with comments blanked, quoted strings kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "'":
            j = text.find("'", i + 1)
            j = n if j < 0 else j + 1
            out.append(text[i:j])
            i = j
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def dependency_calls(meson_build):
    """(name, call text) for every dependency('name', ...) call, parentheses balanced."""
    text = strip_comments(meson_build)
    for m in re.finditer(r"\bdependency\(\s*'([^']*)'", text):
        depth, i = 0, m.start() + len("dependency")
        while i < len(text):
            if text[i] == "'":
                i = text.index("'", i + 1)
            elif text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        yield m.group(1), text[m.start() : i + 1]


def fallback_of(call, text):
    """(subproject, variable or None) named by a call's fallback keyword, or None.

    The keyword's value is a string, a list, or a variable; for a variable, the first
    assignment of a non-empty string or list to it in text counts (meson.build may
    offer a fallback only where it works)."""
    m = re.search(r"\bfallback\s*:\s*(\[[^\]]*\]|'[^']*'|\w+)", call)
    if not m:
        return None
    value = m.group(1)
    if value[0] not in "['":
        assigned = re.findall(rf"^\s*{value}\s*=\s*(\[[^\]]*\]|'[^']*')", text, re.M)
        value = next((a for a in assigned if re.search(r"'[^']+'", a)), "")
    names = re.findall(r"'([^']*)'", value)
    if not names or len(names) > 2:
        return None
    return names[0], names[1] if len(names) == 2 else None


def check_wrap(root, subproject, dep_name, variable, errors):
    where = f"subprojects/{subproject}.wrap"
    path = root / "subprojects" / f"{subproject}.wrap"
    if not path.is_file():
        errors.append(f"{where}: missing (fallback of dependency('{dep_name}'))")
        return None
    wrap = configparser.ConfigParser(interpolation=None)
    try:
        wrap.read(path, encoding="utf-8")
    except configparser.Error as e:
        errors.append(f"{where}: does not parse: {e}")
        return None
    if wrap.sections()[:1] != ["wrap-file"]:
        errors.append(f"{where}: first section is {wrap.sections()[:1]}, not [wrap-file]")
        return None
    w = wrap["wrap-file"]
    for key in ("directory", "source_url", "source_filename", "source_hash"):
        if not w.get(key):
            errors.append(f"{where}: [wrap-file] lacks {key}")
    if not w.get("source_url", "").startswith("https://"):
        errors.append(f"{where}: source_url is not an https URL")
    if not SHA256.fullmatch(w.get("source_hash", "")):
        errors.append(f"{where}: source_hash is not a sha256 in lower-case hex")

    if "patch_directory" in w:
        if any(k in w for k in ("patch_url", "patch_filename", "patch_hash")):
            errors.append(f"{where}: both patch_directory and a patch archive")
        build = root / "subprojects" / "packagefiles" / w["patch_directory"] / "meson.build"
        if not build.is_file():
            errors.append(f"{where}: patch_directory has no {build.relative_to(root)}")
        elif f"override_dependency('{dep_name}'" not in build.read_text(encoding="utf-8"):
            errors.append(f"{build.relative_to(root)}: no meson.override_dependency('{dep_name}', ...)")
        origin = "packagefiles/" + w["patch_directory"]
    else:
        for key in ("patch_url", "patch_filename", "patch_hash", "wrapdb_version"):
            if not w.get(key):
                errors.append(f"{where}: [wrap-file] lacks {key} (and has no patch_directory)")
        release = f"{subproject}_{w.get('wrapdb_version', '')}"
        if w.get("patch_filename") != f"{release}_patch.zip":
            errors.append(f"{where}: patch_filename is not {release}_patch.zip")
        if w.get("patch_url") != f"https://wrapdb.mesonbuild.com/v2/{release}/get_patch":
            errors.append(f"{where}: patch_url is not WrapDB's URL for {release}")
        if not SHA256.fullmatch(w.get("patch_hash", "")):
            errors.append(f"{where}: patch_hash is not a sha256 in lower-case hex")
        upstream = w.get("wrapdb_version", "").rsplit("-", 1)[0]
        if not w.get("directory", "").endswith("-" + upstream):
            errors.append(f"{where}: directory does not match WrapDB version {upstream}")
        origin = "WrapDB " + w.get("wrapdb_version", "?")

    provide = wrap["provide"] if wrap.has_section("provide") else {}
    names = [n.strip() for n in provide.get("dependency_names", "").split(",") if n.strip()]
    if dep_name in provide:
        if variable and provide[dep_name] != variable:
            errors.append(f"{where}: provides {dep_name} as {provide[dep_name]}, "
                          f"meson.build asks for {variable}")
    elif dep_name not in names:
        errors.append(f"{where}: [provide] does not offer '{dep_name}'")
    return f"{where}: {dep_name} from {w.get('directory')} ({origin})"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, required = Path(argv[1]), set(argv[2:])
    errors, used, lines = [], set(), []
    text = strip_comments((root / "meson.build").read_text(encoding="utf-8"))
    for dep_name, call in dependency_calls(text):
        fallback = fallback_of(call, text)
        if fallback is None:
            if dep_name in required:
                errors.append(f"meson.build: dependency('{dep_name}') has no fallback")
            required.discard(dep_name)
            continue
        required.discard(dep_name)
        used.add(fallback[0])
        line = check_wrap(root, fallback[0], dep_name, fallback[1], errors)
        if line:
            lines.append(line)
    for dep_name in sorted(required):
        errors.append(f"meson.build: no dependency('{dep_name}') call")
    for path in sorted((root / "subprojects").glob("*.wrap")):
        if path.stem not in used:
            errors.append(f"subprojects/{path.name}: no fallback in meson.build uses it")
    print("\n".join(lines))
    for e in errors:
        print("error:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
