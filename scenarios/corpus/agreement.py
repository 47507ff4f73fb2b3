#!/usr/bin/env python3
"""Frame-by-frame agreement of the simulator and this machine's kernel over the corpus.

    python3 scenarios/corpus/agreement.py [path/to/skbsim]     (root; a few seconds)

`skbsim conform --json` runs every corpus scenario in both arms. A scenario that passes
agrees on every frame (trace and output pcap). For one that fails or is sim-only, the
capture is replayed with `skbsim replay` on each backend (tun-read and tap-write) and the
two output pcaps are aligned (longest matching runs, difflib): a frame agrees when its
output is byte-identical in both arms at the same place in the order. A tap-gro scenario
that does not pass counts none of its frames as agreeing (merged skbs have no per-frame
identity). Prints per-pipeline figures and every scenario with differences.
"""
import difflib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AREAS = ["corpus-tun-read", "corpus-tap-write", "corpus-tap-gro"]
REPLAY_FLAGS = {
    "corpus-tun-read": ["--pipeline", "tun-read", "--no-pi", "--vnet-hdr-sz", "10"],
    "corpus-tap-write": ["--pipeline", "tap-write", "--no-pi"],
}


def frames(path):
    """The records of a classic pcap, or of a pcapng (as (interface, bytes): a tap-write
    replay writes one interface per observation point)."""
    data = open(path, "rb").read()
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        end = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        off, out = 0, []
        while off + 12 <= len(data):
            btype, blen = struct.unpack(end + "II", data[off : off + 8])
            if blen < 12:
                break
            if btype == 6:  # Enhanced Packet Block
                iface, _, _, caplen = struct.unpack(end + "IIII", data[off + 8 : off + 24])
                out.append((iface, data[off + 28 : off + 28 + caplen]))
            off += blen
        return out
    end = "<" if struct.unpack("<I", data[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, out = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8 : off + 12])[0]
        out.append(data[off + 16 : off + 16 + incl])
        off += 16 + incl
    return out


def input_of(area, stem):
    """The capture a scenario replays (its `input`, relative to the scenario file)."""
    toml = os.path.join(ROOT, "scenarios", area, stem + ".toml")
    m = re.search(r'^input = "([^"]+)"', open(toml).read(), re.M)
    return os.path.normpath(os.path.join(os.path.dirname(toml), m.group(1)))


def per_frame(skbsim, area, stem, tmp):
    pcap = input_of(area, stem)
    outs = {}
    for backend in ("sim", "tap"):
        out = os.path.join(tmp, f"{area}-{stem}-{backend}.pcap")
        subprocess.run(
            [skbsim, "replay", pcap, *REPLAY_FLAGS[area], "--backend", backend, "-o", out],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        outs[backend] = frames(out)
    m = difflib.SequenceMatcher(a=outs["sim"], b=outs["tap"], autojunk=False)
    return sum(b.size for b in m.get_matching_blocks())


def main():
    skbsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/skbsim")
    paths = [os.path.join(ROOT, "scenarios", a) for a in AREAS]
    res = subprocess.run([skbsim, "conform", "--json", *paths], capture_output=True, text=True)
    report = json.loads(res.stdout)
    totals = {a: [0, 0] for a in AREAS}
    differing = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in report["results"]:
            area, stem = r["scenario"].split("/")
            n = len(frames(input_of(area, stem)))
            if r["status"] == "pass":
                agree = n
            elif area in REPLAY_FLAGS:
                agree = per_frame(skbsim, area, stem, tmp)
            else:
                agree = 0
            totals[area][0] += agree
            totals[area][1] += n
            if agree < n:
                differing.append((r["scenario"], r["status"], agree, n))
    for a in AREAS:
        agree, n = totals[a]
        print(f"{a[len('corpus-'):]:10} {agree:5} of {n:5} frames agree ({100.0 * agree / max(n, 1):.2f}%)")
    for name, status, agree, n in differing:
        print(f"  {name} ({status}): {agree} of {n} agree")


if __name__ == "__main__":
    main()
