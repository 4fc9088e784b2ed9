"""Rebuild release_contents.json.gz: what release detection reads (`jaxderiv.spec.Content`) of
every PyTorch release's derivatives.yaml, for tests/spec/test_spec_version.py.

    python tests/spec/data/make_release_contents.py 0.4.0=path/to/derivatives.yaml 1.0.0=... ...

The release files are not in this repository (docs/releases.md says where each comes from); only
their entry names, schema arguments and formula identifiers are kept here.
"""

from __future__ import annotations

import gzip
import json
import sys
import warnings
from pathlib import Path

from jaxderiv.spec import Content, load_spec

KINDS = ("entries", "arguments", "words")


def main(pairs: list[str]) -> None:
    # Each release as what it adds to and removes from the one before it (in the order given,
    # oldest first): consecutive releases share most of their content.
    index, before = [], {k: set() for k in KINDS}
    for pair in pairs:
        release, path = pair.split("=", 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            content = Content.of(load_spec(path, strict=False).entries)
        now = {k: set(getattr(content, k)) for k in KINDS}
        index.append(
            {"release": release, **{k: [sorted(now[k] - before[k]), sorted(before[k] - now[k])] for k in KINDS}}
        )
        before = now
    out = Path(__file__).with_name("release_contents.json.gz")
    with gzip.open(out, "wt", encoding="utf-8") as f:
        json.dump(index, f, separators=(",", ":"))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(index)} releases)")


def read() -> dict[str, Content]:
    """The index: release label -> Content, oldest first."""
    with gzip.open(Path(__file__).with_name("release_contents.json.gz"), "rt", encoding="utf-8") as f:
        index = json.load(f)
    out, now = {}, {k: set() for k in KINDS}
    for item in index:
        now = {k: (now[k] | set(item[k][0])) - set(item[k][1]) for k in KINDS}
        out[item["release"]] = Content(*(frozenset(now[k]) for k in KINDS))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
