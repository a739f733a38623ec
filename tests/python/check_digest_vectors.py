#!/usr/bin/env python3
"""An independent implementation of docs/digest.md, checked against the golden vectors.

Written from the spec alone (standard library only), it recomputes the canonical JSON of every
event in tests/vectors/digest.json and every prefix digest, and exits non-zero on any mismatch.

Usage: python3 tests/python/check_digest_vectors.py [tests/vectors/digest.json]
"""

import hashlib
import json
import os
import sys

DOMAIN_PREFIX = b"contextfold-source-v1\n"
SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def number_to_string(number):
    """ECMAScript Number::toString of the double nearest to `number` (ints round half-even)."""
    value = float(number)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr() gives the shortest round-trip digits; extract digits and decimal exponent n such
    # that value = 0.d1d2...dk * 10^n.
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    n = int(exponent or 0) + len(whole) - (len(whole + fraction) - len((whole + fraction).lstrip("0")))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def string_to_json(text):
    out = ['"']
    for ch in text:
        if ch in SHORT_ESCAPES:
            out.append(SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def canonical(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return number_to_string(value)
    if isinstance(value, str):
        return string_to_json(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical(item) for item in value) + "]"
    keys = sorted(value, key=lambda key: key.encode("utf-16-be"))
    return "{" + ",".join(string_to_json(key) + ":" + canonical(value[key]) for key in keys) + "}"


def normalize(event):
    """The reading normalization: null optionals and false flags are absent."""
    event = {k: v for k, v in event.items() if not (k in ("createdAtMs", "responseId", "metadata") and v is None)}
    event = {k: v for k, v in event.items() if not (k in ("partial", "pinned") and v is False)}
    content = {k: v for k, v in event["content"].items()
               if not ((k == "providerData" and v is None) or (k == "isError" and v is False))}
    event["content"] = content
    return event


def main():
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors", "digest.json")
    path = sys.argv[1] if len(sys.argv) > 1 else default
    with open(path, encoding="utf-8") as file:
        vectors = json.load(file)
    failures = 0
    events = 0
    for case in vectors["cases"]:
        hasher = hashlib.sha256(DOMAIN_PREFIX)
        for index, event in enumerate(case["events"]):
            events += 1
            line = canonical(normalize(event))
            if line != case["canonical"][index]:
                failures += 1
                print(f"{case['name']}[{index}]: canonical JSON differs", file=sys.stderr)
            hasher.update(line.encode("utf-8") + b"\n")
            if "sha256:" + hasher.hexdigest() != case["prefixDigests"][index]:
                failures += 1
                print(f"{case['name']}[{index}]: prefix digest differs", file=sys.stderr)
        if case["prefixDigests"] and case["digest"] != case["prefixDigests"][-1]:
            failures += 1
            print(f"{case['name']}: digest is not the last prefix digest", file=sys.stderr)
    print(f"{len(vectors['cases'])} cases, {events} events, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
