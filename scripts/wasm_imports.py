#!/usr/bin/env python3
"""Print the import section of a core wasm module, one `module.name` per line.

Exit 0 always; the caller compares the output. Only the binary format's import section
(id 2) is decoded; that is all this check needs.
"""
import sys


def leb(data, pos):
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def name(data, pos):
    length, pos = leb(data, pos)
    return data[pos:pos + length].decode(), pos + length


def imports(data):
    """`module.name` of each import."""
    for module, field, _kind in import_entries(data):
        yield f"{module}.{field}"


def import_entries(data):
    """(module, name, kind) of each import; kind 0 is a function."""
    assert data[:4] == b"\0asm", "not a wasm module"
    pos = 8
    while pos < len(data):
        section, size_pos = data[pos], pos + 1
        size, body = leb(data, size_pos)
        if section == 2:
            count, p = leb(data, body)
            for _ in range(count):
                module, p = name(data, p)
                field, p = name(data, p)
                kind = data[p]
                yield module, field, kind
                p += 1
                if kind == 0:  # function: type index
                    _, p = leb(data, p)
                elif kind == 1:  # table: reftype + limits
                    p += 1
                    flags, p = leb(data, p)
                    _, p = leb(data, p)
                    if flags & 1:
                        _, p = leb(data, p)
                elif kind == 2:  # memory: limits
                    flags, p = leb(data, p)
                    _, p = leb(data, p)
                    if flags & 1:
                        _, p = leb(data, p)
                elif kind == 3:  # global: valtype + mutability
                    p += 2
                else:
                    raise ValueError(f"unknown import kind {kind}")
        pos = body + size


if __name__ == "__main__":
    for line in imports(open(sys.argv[1], "rb").read()):
        print(line)
