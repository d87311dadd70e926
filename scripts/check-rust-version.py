#!/usr/bin/env python3
"""Checks that the declared `rust-version` is honest: no locked dependency (for this host)
declares a newer one. Run by `make test`; prints the dependencies that need the most."""
import json
import subprocess
import sys


def version(text):
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    host = next(line.split(": ", 1)[1] for line in subprocess.run(
        ["rustc", "-vV"], check=True, capture_output=True, text=True).stdout.splitlines()
        if line.startswith("host: "))
    metadata = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", host],
        check=True, capture_output=True, text=True).stdout)
    members = set(metadata["workspace_members"])
    declared = {p["name"]: p.get("rust_version") for p in metadata["packages"] if p["id"] in members}
    needed = sorted((version(p["rust_version"]), p["name"], p["version"])
                    for p in metadata["packages"] if p["id"] not in members and p.get("rust_version"))
    ours = {version(v) for v in declared.values() if v}
    if len(ours) != 1 or None in declared.values():
        sys.exit(f"every workspace package should declare the same rust-version: {declared}")
    ours = ours.pop()
    highest = needed[-1][0] if needed else (0,)
    worst = ", ".join(f"{n} {v} ({'.'.join(map(str, r))})" for r, n, v in needed if r == highest)
    if highest > ours:
        sys.exit(f"rust-version {'.'.join(map(str, ours))} is too old: {worst} need(s) newer")
    print(f"rust-version {'.'.join(map(str, ours))} covers every locked dependency (highest: {worst})")


if __name__ == "__main__":
    main()
