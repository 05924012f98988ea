#!/usr/bin/env python3
"""Code bytes of a wasm file's functions, grouped by the first `app::` path each function's
demangled name holds (a component, a wire type), else by its crate path.

Generic functions carry their type arguments in their names only with v0 symbol mangling, so
build the bundle with it first (docs/benchmarks.md, "The floor of the stack"):

    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C symbol-mangling-version=v0" \\
      cargo leptos build --release --split --frontend-only
    python3 bench/wasm_owners.py \\
      target/front/wasm32-unknown-unknown/wasm-release/frontend_split.wasm [top-n]

`frontend_split.wasm` is the main module after the split, before wasm-bindgen and wasm-opt, with
its name section. Needs `rustfilt` (`cargo install rustfilt`) to demangle.

With `--by-crate` (after the path), the code bytes are grouped by crate instead: a function
counts for the crate of its trait when its name is `<T as Trait>::f`, for the standard library
when it is an inherent method of a slice, `str`, reference, pointer or trait object, else for
the crate of its first path; a few crates that belong together are counted as one
(docs/benchmarks.md keeps that table current).
"""

import collections
import re
import subprocess
import sys


def leb(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def skip_limits(data, at):
    flags, at = leb(data, at)
    _, at = leb(data, at)
    return leb(data, at)[1] if flags & 1 else at


def imported_functions(data, at):
    count, at = leb(data, at)
    functions = 0
    for _ in range(count):
        for _ in range(2):  # module and field names
            length, at = leb(data, at)
            at += length
        kind = data[at]
        at += 1
        if kind == 0:  # function: a type index
            _, at = leb(data, at)
            functions += 1
        elif kind == 1:  # table: element type, limits
            at = skip_limits(data, at + 1)
        elif kind == 2:  # memory: limits
            at = skip_limits(data, at)
        elif kind == 3:  # global: value type, mutability
            at += 2
    return functions


def function_names(data, at, end):
    names = {}
    while at < end:
        subsection = data[at]
        size, at = leb(data, at + 1)
        if subsection == 1:
            count, cursor = leb(data, at)
            for _ in range(count):
                index, cursor = leb(data, cursor)
                length, cursor = leb(data, cursor)
                names[index] = data[cursor : cursor + length].decode("utf8", "replace")
                cursor += length
        at += size
    return names


def functions(path):
    """(mangled name, code bytes) of every function defined in the module."""
    data = open(path, "rb").read()
    at, imports, sizes, names = 8, 0, [], {}
    while at < len(data):
        section = data[at]
        size, at = leb(data, at + 1)
        if section == 2:
            imports = imported_functions(data, at)
        elif section == 10:
            count, cursor = leb(data, at)
            for _ in range(count):
                body, cursor = leb(data, cursor)
                sizes.append(body)
                cursor += body
        elif section == 0:
            length, cursor = leb(data, at)
            if data[cursor : cursor + length] == b"name":
                names = function_names(data, cursor + length, at + size)
        at += size
    return [(names.get(imports + i, f"#{i}"), s) for i, s in enumerate(sizes)]


GROUPS = {
    "core": "core + alloc + std",
    "alloc": "core + alloc + std",
    "std": "core + alloc + std",
    "serde": "serde + serde_json",
    "serde_core": "serde + serde_json",
    "serde_json": "serde + serde_json",
    "wasm_bindgen": "wasm_bindgen, js_sys, web_sys",
    "js_sys": "wasm_bindgen, js_sys, web_sys",
    "web_sys": "wasm_bindgen, js_sys, web_sys",
    "leptos": "leptos, leptos_dom, leptos_server, server_fn",
    "leptos_dom": "leptos, leptos_dom, leptos_server, server_fn",
    "leptos_server": "leptos, leptos_dom, leptos_server, server_fn",
    "server_fn": "leptos, leptos_dom, leptos_server, server_fn",
}


def trait_of(name):
    """The trait's path in `<T as Trait>::f`, or None."""
    if not name.startswith("<"):
        return None
    depth = 0
    for at, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
            if depth == 0:
                return None
        elif depth == 1 and name.startswith(" as ", at):
            return name[at + 4 :]
    return None


def crate_of(name):
    path = trait_of(name)
    # An inherent method of a slice, str, reference, pointer or trait object (`<[T]>::to_vec`,
    # `<str>::len`, `<dyn Any>::is`) is the standard library's, whatever its type argument.
    if path is None and re.match(r"<(\[|str>|&|\*|dyn )", name):
        return GROUPS["core"]
    path = path or name
    first = re.search(r"[a-z_][a-z0-9_]*", path)
    crate = first.group(0) if first else "(unnamed)"
    return GROUPS.get(crate, crate)


def by_crate(listed, demangled, total, top):
    crates = collections.Counter()
    for (_, size), name in zip(listed, demangled):
        crates[crate_of(name)] += size
    for crate, size in crates.most_common(top):
        print(f"{size:>10,} {100 * size / total:5.1f} %  {crate}")


def main():
    path = sys.argv[1]
    grouped = "--by-crate" in sys.argv[2:]
    numbers = [arg for arg in sys.argv[2:] if arg != "--by-crate"]
    top = int(numbers[0]) if numbers else 40
    listed = functions(path)
    demangled = subprocess.run(
        ["rustfilt"], input="\n".join(n for n, _ in listed), capture_output=True, text=True, check=True
    ).stdout.split("\n")
    total = sum(s for _, s in listed)
    if grouped:
        print(f"{path}: {len(listed)} functions, {total:,} code bytes")
        return by_crate(listed, demangled, total, top)
    owners = collections.Counter()
    for (_, size), name in zip(listed, demangled):
        ours = re.search(r"app::((?:\w+::){0,2}\w+)", name)
        theirs = re.search(r"([a-z_][a-z0-9_]*(?:::[a-zA-Z_]\w*)?)", name)
        owners[f"app::{ours.group(1)}" if ours else f"({theirs.group(1) if theirs else name[:30]})"] += size
    ours = sum(s for k, s in owners.items() if k.startswith("app::"))
    print(f"{path}: {len(listed)} functions, {total:,} code bytes, {100 * ours / total:.1f} % for app:: types")
    for owner, size in owners.most_common(top):
        print(f"{size:>10,} {100 * size / total:5.1f} %  {owner}")


if __name__ == "__main__":
    main()
