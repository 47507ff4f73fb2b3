#!/usr/bin/env python3
"""Traffic generators for make-corpus.sh, each bounded (socket timeouts, fixed counts).

TCP and UDP go through the kernel's own sockets (the kernel stack builds every frame);
only the link-local control frames and the padded replay are written with AF_PACKET,
because no kernel protocol here emits LLDP/EAPOL/PAUSE frames and veth never pads.
"""
import socket
import struct
import sys
import time

TIMEOUT = 10.0


def tcp_sink(family, port, echo):
    """Accept one connection; read to EOF (echo=1: send every chunk back)."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.settimeout(TIMEOUT)
    s.bind(("", port))
    s.listen(1)
    c, _ = s.accept()
    c.settimeout(TIMEOUT)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        data = c.recv(65536)
        if not data:
            break
        if echo:
            c.sendall(data)
    c.close()


def tcp_source_server(family, port, nbytes):
    """Accept one connection and send nbytes to it (the reverse bulk direction)."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.settimeout(TIMEOUT)
    s.bind(("", port))
    s.listen(1)
    c, _ = s.accept()
    c.settimeout(TIMEOUT)
    c.sendall(bytes(i & 0xFF for i in range(nbytes)))
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()


def connect(family, host, port):
    for _ in range(50):
        try:
            return socket.create_connection((host, port), timeout=TIMEOUT)
        except (ConnectionRefusedError, OSError):
            time.sleep(0.1)
    raise SystemExit(f"connect {host}:{port} failed")


def tcp_bulk(family, host, port, nbytes):
    c = connect(family, host, port)
    c.sendall(bytes((i * 7) & 0xFF for i in range(nbytes)))
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()


def tcp_download(family, host, port):
    c = connect(family, host, port)
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()


def tcp_small(family, host, port, writes):
    """TCP_NODELAY writes of mixed small sizes, each echoed back before the next."""
    c = connect(family, host, port)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sizes = [1, 7, 50, 200, 600, 1, 33]
    for i in range(writes):
        n = sizes[i % len(sizes)]
        c.sendall(bytes([0x41 + i % 26]) * n)
        got = 0
        while got < n:
            d = c.recv(65536)
            if not d:
                raise SystemExit("echo closed early")
            got += len(d)
        time.sleep(0.005)
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()


def udp_sink(family, port, seconds):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind(("", port))
    s.settimeout(0.2)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            s.recv(65536)
        except socket.timeout:
            pass


def udp_send(family, host, port):
    """Datagrams from 1 byte to past the MTU (the larger ones leave as IP fragments)."""
    s = socket.socket(family, socket.SOCK_DGRAM)
    for size in [1, 18, 100, 512, 1472, 1473, 3000, 8000, 0, 1200]:
        s.sendto(bytes((size + i) & 0xFF for i in range(size)), (host, port))
        time.sleep(0.01)


def mcast_join4(group, ifaddr, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    mreq = socket.inet_aton(group) + socket.inet_aton(ifaddr)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    time.sleep(seconds)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_DROP_MEMBERSHIP, mreq)
    time.sleep(0.5)


def mcast_join6(group, ifname, seconds):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    mreq = socket.inet_pton(socket.AF_INET6, group) + struct.pack("@I", socket.if_nametoindex(ifname))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq)
    time.sleep(seconds)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_LEAVE_GROUP, mreq)
    time.sleep(0.5)


def mac_of(ifname):
    with open(f"/sys/class/net/{ifname}/address") as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def tlv(t, value):
    return struct.pack("!H", (t << 9) | len(value)) + value


def link_local(ifname):
    """LLDP (01:80:c2:00:00:0e), EAPOL-Start (..:03), PAUSE (..:01), LACP-like slow
    protocol frame (..:02): the link-local control frames a host or switch emits."""
    src = mac_of(ifname)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    lldp = (
        tlv(1, b"\x04" + src)  # chassis id: MAC address
        + tlv(2, b"\x05" + ifname.encode())  # port id: interface name
        + tlv(3, struct.pack("!H", 120))  # TTL
        + tlv(5, b"skbsim-corpus")  # system name
        + tlv(0, b"")
    )
    frames = []
    for ttl in (120, 120, 0):
        body = lldp if ttl else lldp.replace(tlv(3, struct.pack("!H", 120)), tlv(3, b"\x00\x00"))
        frames.append(bytes.fromhex("0180c200000e") + src + b"\x88\xcc" + body)
    eapol_start = b"\x02\x01\x00\x00"  # version 2, type Start, length 0
    frames += [bytes.fromhex("0180c2000003") + src + b"\x88\x8e" + eapol_start] * 2
    pause = struct.pack("!HH", 1, 0xFFFF)  # MAC control PAUSE, quanta 0xffff
    frames.append(bytes.fromhex("0180c2000001") + src + b"\x88\x08" + pause)
    lacp_actor = struct.pack("!BBBHH6sHHHB3x", 1, 1, 20, 0x8000, 1, src, 1, 0x8000, 1, 0x3D)
    lacp = b"\x01\x01" + lacp_actor + b"\x02\x14" + bytes(18) + b"\x03\x10" + bytes(14) + b"\x00\x00" + bytes(50)
    frames.append(bytes.fromhex("0180c2000002") + src + b"\x88\x09" + lacp)
    for f in frames:
        if len(f) < 60:  # a NIC pads to ETH_ZLEN; so does this sender
            f += bytes(60 - len(f))
        s.send(f)
        time.sleep(0.05)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, out = 24, []
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + "IIII", data[off : off + 16])
        out.append(data[off + 16 : off + 16 + incl])
        off += 16 + incl
    return out


def pad_replay(ifname, path):
    """Send the frames the kernel built (captured in `path`), each short one padded with
    zeros to ETH_ZLEN (60) the way a NIC driver's eth_skb_pad does."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    for f in read_pcap(path):
        if len(f) < 60:
            f += bytes(60 - len(f))
        s.send(f)
        time.sleep(0.01)


def fam(name):
    return socket.AF_INET6 if name == "6" else socket.AF_INET


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "tcp-sink":
        tcp_sink(fam(args[0]), int(args[1]), int(args[2]))
    elif cmd == "tcp-source-server":
        tcp_source_server(fam(args[0]), int(args[1]), int(args[2]))
    elif cmd == "tcp-bulk":
        tcp_bulk(fam(args[0]), args[1], int(args[2]), int(args[3]))
    elif cmd == "tcp-download":
        tcp_download(fam(args[0]), args[1], int(args[2]))
    elif cmd == "tcp-small":
        tcp_small(fam(args[0]), args[1], int(args[2]), int(args[3]))
    elif cmd == "udp-sink":
        udp_sink(fam(args[0]), int(args[1]), float(args[2]))
    elif cmd == "udp-send":
        udp_send(fam(args[0]), args[1], int(args[2]))
    elif cmd == "mcast-join4":
        mcast_join4(args[0], args[1], float(args[2]))
    elif cmd == "mcast-join6":
        mcast_join6(args[0], args[1], float(args[2]))
    elif cmd == "link-local":
        link_local(args[0])
    elif cmd == "pad-replay":
        pad_replay(args[0], args[1])
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv)
