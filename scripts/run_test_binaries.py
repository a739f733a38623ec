#!/usr/bin/env python3
"""Runs the test binaries of a cargo build two at a time.

`cargo test` runs its test binaries one after another, which on the 2-core CI machine left
one core mostly idle (the workspace's binaries: 88 s of wall time for 120 s of CPU, most of it
in the longest binary, `runtime`). This script reads the JSON messages of
`cargo test --no-run --message-format=json` on stdin, and runs every test executable the way
cargo runs it: from its package's directory, with `CARGO_MANIFEST_DIR` set and the arguments
given here passed on. The largest executables start first, so the long ones do not end last
alone. Each binary's output is printed whole when it ends. The exit status is 1 if any binary
failed.

    cargo test --no-run --message-format=json ... | python3 scripts/run_test_binaries.py [-- ARGS]
"""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

PARALLEL_BINARIES = 2


def test_executables(lines):
    """(package directory, executable, target name) of each test artifact, once each."""
    seen = set()
    for line in lines:
        if not line.startswith("{"):
            continue
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact" or not message["profile"]["test"]:
            continue
        executable = message.get("executable")
        if executable is None or executable in seen:
            continue
        seen.add(executable)
        package_dir = os.path.dirname(message["manifest_path"])
        yield package_dir, executable, message["target"]["name"]


def run(package_dir, executable, name, args):
    """Runs one binary; returns (name, exit status, seconds, output)."""
    start = time.monotonic()
    env = dict(os.environ, CARGO_MANIFEST_DIR=package_dir)
    done = subprocess.run(
        [executable, *args],
        cwd=package_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    output = done.stdout.decode("utf-8", "replace")
    return name, done.returncode, time.monotonic() - start, output


def main():
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    binaries = list(test_executables(sys.stdin))
    binaries.sort(key=lambda binary: os.path.getsize(binary[1]), reverse=True)
    failed = []
    with ThreadPoolExecutor(PARALLEL_BINARIES) as pool:
        jobs = [pool.submit(run, *binary, args) for binary in binaries]
        for job in jobs:
            name, status, seconds, output = job.result()
            print(f"--- {name} ({seconds:.1f} s, exit {status})", flush=True)
            print(output, end="", flush=True)
            if status != 0:
                failed.append(name)
    print(f"--- {len(binaries)} test binaries, {len(failed)} failed {failed if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
