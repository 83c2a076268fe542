#!/usr/bin/env python3
"""Writes the conformance scenarios to tests/conformance/<name>.json.

    python3 tests/conformance/gen/gen.py              # into tests/conformance/
    python3 tests/conformance/gen/gen.py --out DIR    # into DIR (created if missing)

The expected outputs are derived from the spec by hand in upstream.py, serving.py,
footprints.py, queries.py and wire.py (read path) and writes.py, gate.py, flush.py and
tokens.py (write plane and tokens; canon.py spells JCS, the hashes and token signing);
nothing here runs or reads the room. Files in the scenario directory that no generator
function wrote are reported, never deleted.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

import flush  # noqa: E402
import footprints  # noqa: E402
import gate  # noqa: E402
import queries  # noqa: E402
import serving  # noqa: E402
import tokens  # noqa: E402
import upstream  # noqa: E402
import wire  # noqa: E402
import writes  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description="Writes the conformance scenarios.")
    parser.add_argument("--out", default=os.path.dirname(HERE),
                        help="output directory (default: the scenario directory)")
    out_dir = parser.parse_args().out
    os.makedirs(out_dir, exist_ok=True)
    all_scenarios = []
    for module in (upstream, serving, footprints, queries, wire, writes, gate, flush, tokens):
        all_scenarios.extend(module.scenarios())
    names = [s.name for s in all_scenarios]
    assert len(names) == len(set(names)), "duplicate scenario names"
    written = set()
    for s in all_scenarios:
        path = s.write(out_dir)
        written.add(os.path.basename(path))
        print("%-40s %3d steps" % (s.name, len(s.steps)))
    extra = sorted(f for f in os.listdir(out_dir) if f.endswith(".json") and f not in written)
    for f in extra:
        print("note: %s was not written by this generator" % f, file=sys.stderr)
    print("%d scenarios" % len(all_scenarios))


if __name__ == "__main__":
    main()
