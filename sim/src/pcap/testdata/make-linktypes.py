#!/usr/bin/env python3
"""Writes the 802.11, radiotap, PPP, FDDI and 802.15.4 test captures with scapy.

Run from sim/src/pcap/testdata: python3 make-linktypes.py (scapy 2.8). Every frame is
built by scapy's own layers where it has them (FDDI has none: its 13-byte header is
written out by hand) and written by scapy's wrpcap with the link type given.
"""
from scapy.all import (ARP, HDLC, IP, IPv6, LLC, PPP, SNAP, UDP, ICMP, ICMPv6EchoRequest,
                       Dot11, Dot11Beacon, Dot11Elt, Dot11QoS, Dot11WEP, Dot11Ack,
                       Dot11FCS, RadioTap, Raw, STP, wrpcap)
from scapy.layers.dot15d4 import Dot15d4, Dot15d4FCS, Dot15d4Data
from scapy.layers.ppp import PPP_LCP

STA, AP, DST, SRC4 = "02:11:00:00:00:01", "02:11:00:00:00:aa", "02:11:00:00:00:02", "02:11:00:00:00:04"
T = 1_700_000_000

def ip4(n):
    return IP(src="10.11.0.1", dst="10.11.0.2", id=n) / ICMP(id=7, seq=n) / Raw(b"p" * 20)

def ip6(n):
    return IPv6(src="fd11::1", dst="fd11::2") / ICMPv6EchoRequest(id=7, seq=n)

def udp(n):
    return IP(src="10.11.0.1", dst="10.11.0.2", id=n) / UDP(sport=4000 + n, dport=9) / Raw(b"u" * 12)

def stamp(pkts):
    for i, p in enumerate(pkts):
        p.time = T + i
    return pkts

def wlan():
    """LINKTYPE_IEEE802_11 (105): data frames of every address form and the kinds the
    reader skips."""
    snap = lambda t: LLC(dsap=0xAA, ssap=0xAA, ctrl=3) / SNAP(OUI=0, code=t)
    return [
        # 0: beacon (management) -> skipped
        Dot11(type=0, subtype=8, addr1="ff:ff:ff:ff:ff:ff", addr2=AP, addr3=AP)
        / Dot11Beacon() / Dot11Elt(ID=0, info=b"skbsim"),
        # 1: data, ToDS (station to AP): DA = addr3, SA = addr2
        Dot11(type=2, subtype=0, FCfield="to_DS", addr1=AP, addr2=STA, addr3=DST) / snap(0x0800) / ip4(1),
        # 2: data, FromDS (AP to station): DA = addr1, SA = addr3
        Dot11(type=2, subtype=0, FCfield="from_DS", addr1=STA, addr2=AP, addr3=DST) / snap(0x86DD) / ip6(2),
        # 3: QoS data, ToDS: a 2-byte QoS control field after the header
        Dot11(type=2, subtype=8, FCfield="to_DS", addr1=AP, addr2=STA, addr3=DST) / Dot11QoS(TID=5)
        / snap(0x0800) / udp(3),
        # 4: 4-address (WDS): DA = addr3, SA = addr4
        Dot11(type=2, subtype=0, FCfield="to_DS+from_DS", addr1=AP, addr2=STA, addr3=DST, addr4=SRC4)
        / snap(0x0806) / ARP(hwsrc=SRC4, psrc="10.11.0.4", pdst="10.11.0.2"),
        # 5: protected data -> skipped
        Dot11(type=2, subtype=0, FCfield="to_DS+protected", addr1=AP, addr2=STA, addr3=DST)
        / Dot11WEP(iv=b"\x01\x02\x03", keyid=0, wepdata=b"\x00" * 40),
        # 6: null function (data without data) -> skipped
        Dot11(type=2, subtype=4, FCfield="to_DS", addr1=AP, addr2=STA, addr3=AP),
        # 7: ACK (control) -> skipped
        Dot11(type=1, subtype=13, addr1=STA),
        # 8: bridge-tunnel SNAP (OUI 00-00-f8) of IPX: EtherType 0x8137, header removed
        Dot11(type=2, subtype=0, FCfield="to_DS", addr1=AP, addr2=STA, addr3=DST)
        / LLC(dsap=0xAA, ssap=0xAA, ctrl=3) / SNAP(OUI=0xF8, code=0x8137) / Raw(b"\xff\xff" + b"i" * 28),
        # 9: RFC 1042 SNAP of AARP: kept, as an 802.3 length frame
        Dot11(type=2, subtype=0, FCfield="to_DS", addr1=AP, addr2=STA, addr3=DST) / snap(0x80F3) / Raw(b"a" * 28),
        # 10: 802.2 LLC without SNAP (STP): an 802.3 length frame
        Dot11(type=2, subtype=0, FCfield="to_DS", addr1=AP, addr2=STA, addr3="01:80:c2:00:00:00")
        / LLC(dsap=0x42, ssap=0x42, ctrl=3) / STP(),
        # 11: QoS data carrying an A-MSDU -> skipped
        Dot11(type=2, subtype=8, FCfield="to_DS", addr1=AP, addr2=STA, addr3=DST) / Dot11QoS(A_MSDU_Present=1)
        / Raw(bytes.fromhex(DST.replace(":", "") + STA.replace(":", "")) + b"\x00\x10" + b"m" * 16),
        # 12: first fragment of a data frame (More Fragments) -> skipped
        Dot11(type=2, subtype=0, FCfield="to_DS+MF", addr1=AP, addr2=STA, addr3=DST) / snap(0x0800) / Raw(b"f" * 20),
        # 13: QoS data with the Order bit: a 4-byte HT control field after QoS control
        Dot11(type=2, subtype=8, FCfield="to_DS+order", addr1=AP, addr2=STA, addr3=DST) / Dot11QoS(TID=1)
        / Raw(b"\x00\x00\x00\x00") / snap(0x0800) / udp(13),
    ]

def radiotap():
    """LINKTYPE_IEEE802_11_RADIOTAP (127): radiotap headers with and without TSFT, an FCS
    at the end, a bad FCS, padding after the 802.11 header."""
    snap = LLC(dsap=0xAA, ssap=0xAA, ctrl=3) / SNAP(OUI=0, code=0x0800)
    d = lambda: Dot11(type=2, subtype=0, FCfield="from_DS", addr1=STA, addr2=AP, addr3=DST)
    return [
        # 0: flags + rate, no FCS
        RadioTap(present="Flags+Rate", Flags=0, Rate=2) / d() / snap / ip4(1),
        # 1: TSFT (8-byte aligned) + flags with FCS: 4 bytes at the end to strip
        RadioTap(present="TSFT+Flags+Rate+Channel+dBm_AntSignal", mac_timestamp=123456789, Flags="FCS",
                 Rate=12, ChannelFrequency=2437, ChannelFlags=0xA0, dBm_AntSignal=-40)
        / Dot11FCS(type=2, subtype=0, FCfield="from_DS", addr1=STA, addr2=AP, addr3=DST) / snap / udp(2),
        # 2: a frame the card marked as failing its FCS -> skipped
        RadioTap(present="Flags", Flags="FCS+badFCS") / Dot11FCS(type=2, subtype=0, FCfield="from_DS",
                                                              addr1=STA, addr2=AP, addr3=DST) / snap / ip4(3),
        # 3: beacon -> skipped
        RadioTap(present="Flags", Flags=0) / Dot11(type=0, subtype=8, addr1="ff:ff:ff:ff:ff:ff", addr2=AP,
                                                    addr3=AP) / Dot11Beacon() / Dot11Elt(ID=0, info=b"x"),
        # 4: QoS data (26-byte header) with DataPad: 2 bytes of padding to a 4-byte boundary
        RadioTap(present="Flags", Flags="pad") / Dot11(type=2, subtype=8, FCfield="from_DS", addr1=STA,
                                                         addr2=AP, addr3=DST) / Dot11QoS()
        / Raw(b"\x00\x00") / snap / ip4(4),
        # 5: no Flags field at all
        RadioTap(present="Rate", Rate=2) / d() / snap / ip4(5),
    ]

def ppp():
    """LINKTYPE_PPP (9): with and without the ff 03 address and control bytes, a
    compressed 1-byte protocol field, IPv6, and LCP (skipped)."""
    return [
        HDLC() / PPP(proto=0x0021) / ip4(1),
        PPP(proto=0x0021) / ip4(2),
        HDLC() / PPP(proto=0x0057) / ip6(3),
        HDLC() / PPP(proto=0xC021) / PPP_LCP(code=1, id=1),
        Raw(b"\x21") / ip4(5),
        HDLC() / PPP(proto=0x8021) / Raw(bytes.fromhex("01010004")),
    ]

def fddi_frame(fc, dst, src, body):
    mac = lambda m: bytes.fromhex(m.replace(":", ""))
    return Raw(bytes([fc]) + mac(dst) + mac(src) + bytes(body))

def fddi():
    """LINKTYPE_FDDI (10): frame control, destination, source (canonical bit order, as
    Linux captures them), then 802.2 LLC."""
    snap = lambda t: LLC(dsap=0xAA, ssap=0xAA, ctrl=3) / SNAP(OUI=0, code=t)
    return [
        fddi_frame(0x50, DST, STA, snap(0x0800) / ip4(1)),
        fddi_frame(0x51, DST, STA, snap(0x86DD) / ip6(2)),
        fddi_frame(0x41, "01:80:c2:00:01:10", STA, b"\x01\x01\x01\x00" + b"s" * 28),  # SMT -> skipped
        fddi_frame(0x50, "01:80:c2:00:00:00", STA, LLC(dsap=0x42, ssap=0x42, ctrl=3) / STP()),
        fddi_frame(0x57, DST, STA, snap(0x0806) / ARP(hwsrc=STA, psrc="10.11.0.1", pdst="10.11.0.2")),
    ]

def wpan(cls):
    return [cls(fcf_frametype=1, fcf_destaddrmode=2, fcf_srcaddrmode=2, seqnum=i) / Dot15d4Data(
        dest_panid=0x1234, dest_addr=0x0001, src_addr=0x0002) / Raw(b"zz") for i in range(3)]

wrpcap("wlan.pcap", stamp(wlan()), linktype=105)
wrpcap("radiotap_data.pcap", stamp(radiotap()), linktype=127)
wrpcap("ppp.pcap", stamp(ppp()), linktype=9)
wrpcap("fddi.pcap", stamp(fddi()), linktype=10)
wrpcap("wpan.pcap", stamp(wpan(Dot15d4FCS)), linktype=195)
wrpcap("wpan_nofcs.pcap", stamp(wpan(Dot15d4)), linktype=230)
