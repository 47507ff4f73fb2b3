#!/usr/bin/env python3
"""Writes linktypes.expected: what each frame of the link-type captures must become,
from tshark's dissection (tshark -T json -x): addresses, EtherType and the byte ranges
of the LLC and IP layers as tshark found them. Run from sim/src/pcap/testdata.

Each line: FILE INDEX eth DST SRC TYPE_OR_LEN PAYLOAD_HEX (DST/SRC "synth" where the
frame has no MACs), or FILE INDEX skip REASON.
"""
import json, subprocess

def layers(f):
    out = subprocess.run(["tshark", "-r", f, "-T", "json", "-x"], capture_output=True, check=True).stdout
    return [p["_source"]["layers"] for p in json.loads(out)]

def val(l, layer, field, default=None):
    return l.get(layer, {}).get(field, default)

def flag(l, layer, tree, field):
    # tshark nests flag bits in *_tree dicts
    def find(d):
        if isinstance(d, dict):
            for k, v in d.items():
                if k == field:
                    return v
                r = find(v)
                if r is not None:
                    return r
        return None
    return find(l.get(layer, {}))

def llc_payload(frame, off, end):
    """RFC 1042 (not AARP/IPX) or bridge-tunnel SNAP: EtherType from it; else 802.3."""
    snap = frame[off:off + 8]
    et = snap[6:8].hex() if len(snap) == 8 else None
    if len(snap) == 8 and ((snap[:6].hex() == "aaaa03000000" and et not in ("80f3", "8137"))
                           or snap[:6].hex() == "aaaa030000f8"):
        return et, frame[off + 8:end]
    return "%04x" % (end - off), frame[off:end]

def mac(s):
    return s.lower()

def wlan(f, i, l, out):
    frame = bytes.fromhex(l["frame_raw"][0])
    if flag(l, "radiotap", None, "radiotap.flags.badfcs") == "1":
        return out.append(f"{f} {i} skip radiotap bad FCS")
    ftype = int(val(l, "wlan", "wlan.fc.type_subtype"), 16 if str(val(l, "wlan", "wlan.fc.type_subtype")).startswith("0x") else 10)
    t, st = ftype >> 4, ftype & 0xf
    if t == 0:
        return out.append(f"{f} {i} skip 802.11 management")
    if t == 1:
        return out.append(f"{f} {i} skip 802.11 control")
    if st & 4:
        return out.append(f"{f} {i} skip 802.11 no data")
    if flag(l, "wlan", None, "wlan.fc.protected") in ("1", "True"):
        return out.append(f"{f} {i} skip 802.11 protected")
    if flag(l, "wlan", None, "wlan.fc.frag") in ("1", "True") or val(l, "wlan", "wlan.frag", "0") != "0":
        return out.append(f"{f} {i} skip 802.11 fragment")
    if flag(l, "wlan", None, "wlan.qos.amsdupresent") in ("1", "True"):
        return out.append(f"{f} {i} skip 802.11 A-MSDU")
    end = len(frame) - (4 if flag(l, "radiotap", None, "radiotap.flags.fcs") == "1" else 0)
    ty, payload = llc_payload(frame, l["llc_raw"][1], end)
    out.append(f"{f} {i} eth {mac(val(l, 'wlan', 'wlan.da'))} {mac(val(l, 'wlan', 'wlan.sa'))} {ty} {payload.hex()}")

def ip_payload(f, i, l, out, ty_of, reason):
    frame = bytes.fromhex(l["frame_raw"][0])
    for layer, ty in (("ip_raw", "0800"), ("ipv6_raw", "86dd")):
        if layer in l and ty_of(l) == ty:
            off = l[layer][1]
            return out.append(f"{f} {i} eth synth synth {ty} {frame[off:].hex()}")
    out.append(f"{f} {i} skip {reason}")

def main():
    out = []
    for f in ("wlan.pcap", "radiotap_data.pcap"):
        for i, l in enumerate(layers(f)):
            wlan(f, i, l, out)
    ppp_ty = lambda l: {"0x0021": "0800", "0x0057": "86dd", "0x21": "0800", "0x57": "86dd"}.get(val(l, "ppp", "ppp.protocol"))
    for i, l in enumerate(layers("ppp.pcap")):
        ip_payload("ppp.pcap", i, l, out, ppp_ty, "PPP non-IP protocol")
    nf_ty = lambda l: {"2": "0800", "10": "86dd"}.get(val(l, "nflog", "nflog.family"))
    for i, l in enumerate(layers("nflog.pcap")):
        if nf_ty(l) is None:
            out.append(f"nflog.pcap {i} skip NFLOG non-IP family")
            continue
        frame = bytes.fromhex(l["frame_raw"][0])
        layer = "ip_raw" if nf_ty(l) == "0800" else "ipv6_raw"
        off = l[layer][1]
        n = int(val(l, "ip", "ip.len")) if layer == "ip_raw" else 40 + int(val(l, "ipv6", "ipv6.plen"))
        out.append(f"nflog.pcap {i} eth synth synth {nf_ty(l)} {frame[off:off + n].hex()}")
    for i, l in enumerate(layers("fddi.pcap")):
        frame = bytes.fromhex(l["frame_raw"][0])
        fc = int(val(l, "fddi", "fddi.fc"), 16)
        if fc & 0xf8 not in (0x50, 0xd0):
            out.append(f"fddi.pcap {i} skip FDDI non-LLC")
            continue
        # The address fields as stored (tcpdump on Linux prints them so; Wireshark
        # bit-reverses LINKTYPE_FDDI addresses for display).
        dst, src = frame[1:7].hex(":"), frame[7:13].hex(":")
        ty, payload = llc_payload(frame, l["llc_raw"][1], len(frame))
        out.append(f"fddi.pcap {i} eth {dst} {src} {ty} {payload.hex()}")
    for f in ("wpan.pcap", "wpan_nofcs.pcap"):
        for i, _ in enumerate(layers(f)):
            out.append(f"{f} {i} skip 802.15.4")
    open("linktypes.expected", "w").write("\n".join(out) + "\n")

main()
