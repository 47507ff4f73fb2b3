#!/usr/bin/env bash
# Capture the real-traffic corpus: what this machine's kernel and userspace stacks send,
# recorded with tcpdump on a veth inside two private namespaces this script creates and
# deletes (skbcorpus-a, skbcorpus-b). Nothing outside them is touched. Run as root; rerun
# at will (every capture is rewritten). Every generator has a count and a timeout.
#
#   bash scenarios/corpus/make-corpus.sh            # all captures into scenarios/corpus/pcaps/
#   bash scenarios/corpus/make-corpus.sh NAME...    # only these groups (see `groups` below)
#   bash scenarios/corpus/make-corpus.sh --check    # the committed captures are readable
#                                                    # and each has its scenarios (CI)
#
# Where each frame comes from:
# - the kernel stack (this host, Linux 6.18): ARP, ICMP and ICMPv6 echo (ping), IPv6 ND,
#   DAD, router solicitations and MLD reports, IGMPv2/v3 reports (a socket joining a
#   group), TCP (bulk and small writes, both directions, IPv4 and IPv6) and UDP (with IP
#   fragments) from Python's kernel sockets, IGMP/MLD queries from a bridge with
#   multicast_querier 1, STP config BPDUs from a bridge with stp_state 1, 802.1Q and
#   QinQ (802.1ad over 802.1Q) tags put on by the kernel's skb_vlan_push, driven by a tc
#   program on each veth (vlan-tag.bpf.c, built with clang at capture time), VXLAN from vxlan devices, jumbo frames on
#   an MTU 9000 veth.
# - a userspace stack (traffic.py over AF_PACKET): the link-local control frames (LLDP,
#   EAPOL-Start, PAUSE, a LACPDU: no kernel protocol here sends them), and the padded short
#   frames: frames the kernel built (ARP, ICMP, UDP, TCP ACKs), padded with zeros to 60
#   bytes as a NIC driver's eth_skb_pad would (veth never pads).
# - not from here: GRE-TEB (this kernel has no ip_gre; the lab guest's `skbsim lab gre`
#   and the pcapgen GRE scenarios cover it). The 802.1Q/QinQ frames come from tc/BPF, not
#   vlan devices or bridge VLAN tagging: no 8021q module and no bridge VLAN filtering here).
#
# Offloads are off on both veths (ethtool -K ... tx off sg off tso off gso off gro off),
# so the stack segments and checksums in software and the captures look like a wire:
# MSS-sized TCP segments with full checksums. Frames are captured one direction per file
# (tcpdump filter on the source MAC): a capture replayed into one port sees every
# source MAC on that port, as on a link from one host.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="$HERE/pcaps"
PY="$HERE/traffic.py"
NA=skbcorpus-a
NB=skbcorpus-b
MAC_A=02:00:5e:c0:00:0a
MAC_B=02:00:5e:c0:00:0b
# The bridges' own addresses (VLAN and QinQ groups), so a filter can name them.
MAC_BRA=02:00:5e:c0:01:0a
MAC_BRB=02:00:5e:c0:01:0b

if [[ "${1:-}" == "--check" ]]; then
    # Every committed capture: a classic pcap, link type Ethernet, at least one frame,
    # each frame complete (captured length == wire length).
    status=0
    shopt -s nullglob
    files=("$OUT"/*.pcap)
    [[ ${#files[@]} -gt 0 ]] || { echo "$OUT: no captures" >&2; exit 1; }
    for f in "${files[@]}"; do
        python3 - "$f" <<'EOF' || status=1
import struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
if len(data) < 24:
    sys.exit(f"{path}: shorter than a pcap header")
magic = struct.unpack("<I", data[:4])[0]
if magic not in (0xA1B2C3D4, 0xA1B23C4D):
    sys.exit(f"{path}: not a little-endian classic pcap (magic {magic:#x})")
if struct.unpack("<I", data[20:24])[0] != 1:
    sys.exit(f"{path}: link type is not Ethernet (1)")
off, n = 24, 0
while off < len(data):
    if off + 16 > len(data):
        sys.exit(f"{path}: truncated record header at byte {off}")
    _, _, incl, orig = struct.unpack("<IIII", data[off:off + 16])
    if off + 16 + incl > len(data):
        sys.exit(f"{path}: frame {n} cut short: {incl} bytes announced, {len(data) - off - 16} left")
    if incl != orig or incl < 14:
        sys.exit(f"{path}: frame {n} incomplete (captured {incl} of {orig} bytes)")
    off += 16 + incl
    n += 1
if n == 0:
    sys.exit(f"{path}: no frames")
print(f"{path.rsplit('/', 1)[-1]}: {n} frames")
EOF
        # Every capture is replayed by the tun-read and tap-write pipelines.
        stem=$(basename "$f" .pcap)
        for area in corpus-tun-read corpus-tap-write; do
            [[ -f "$HERE/../$area/$stem.toml" ]] || { echo "$f: no scenarios/$area/$stem.toml" >&2; status=1; }
        done
    done
    exit $status
fi

[[ $EUID -eq 0 ]] || { echo "make-corpus.sh: run as root" >&2; exit 2; }
for tool in tcpdump ethtool; do
    if ! command -v "$tool" >/dev/null; then
        apt-get install -y "$tool" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y "$tool" >/dev/null; }
    fi
done
command -v python3 >/dev/null || { echo "make-corpus.sh: needs python3" >&2; exit 2; }
# The VLAN tagger (vlan-tag.bpf.c) needs clang and libbpf's headers, as ci/build-xdp.sh.
if ! { command -v clang-14 || command -v clang; } >/dev/null || [[ ! -f /usr/include/bpf/bpf_helpers.h ]]; then
    apt-get install -y clang-14 libbpf-dev >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y clang-14 libbpf-dev >/dev/null; }
fi

TMP="$(mktemp -d)"
del_ns() {
    ip netns del "$NA" 2>/dev/null || true
    ip netns del "$NB" 2>/dev/null || true
}
cleanup() {
    del_ns
    rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$OUT"

ina() { ip netns exec "$NA" "$@"; }
inb() { ip netns exec "$NB" "$@"; }
# Every traffic generator runs under this bound.
Ta() { timeout 30 ip netns exec "$NA" "$@"; }
Tb() { timeout 30 ip netns exec "$NB" "$@"; }

nooffload() { # ns dev
    ip netns exec "$1" ethtool -K "$2" tx off sg off tso off gso off gro off >/dev/null 2>&1 || true
}

# Two fresh namespaces joined by a veth (va in A, vb in B), offloads off, addresses set.
fresh() { # [mtu]
    local mtu="${1:-1500}"
    del_ns
    ip netns add "$NA"
    ip netns add "$NB"
    ina ip link set lo up
    inb ip link set lo up
    ina ip link add va address "$MAC_A" mtu "$mtu" type veth peer name vb address "$MAC_B" mtu "$mtu" netns "$NB"
    nooffload "$NA" va
    nooffload "$NB" vb
}

addr_plain() {
    ina ip addr add 10.77.0.1/24 dev va
    inb ip addr add 10.77.0.2/24 dev vb
    ina ip addr add fd00:77::1/64 dev va nodad
    inb ip addr add fd00:77::2/64 dev vb nodad
    inb ip link set vb up
    ina ip link set va up
    sleep 0.3
}

CAP_PID=
# capture NAME NS DEV MAX FILTER: start tcpdump and wait until it listens.
capture() {
    local name="$1" ns="$2" dev="$3" max="$4" filter="$5"
    rm -f "$TMP/$name.pcap" "$TMP/$name.err"
    ip netns exec "$ns" timeout 60 tcpdump -Z root -U --immediate-mode -s 0 -i "$dev" -c "$max" -w "$TMP/$name.pcap" "$filter" 2>"$TMP/$name.err" &
    CAP_PID=$!
    for _ in $(seq 50); do
        grep -q "listening on" "$TMP/$name.err" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "tcpdump for $name did not start: $(cat "$TMP/$name.err")" >&2
    exit 1
}
# done_capture NAME: stop the capture (if the count did not already) and keep the file.
done_capture() {
    local name="$1"
    sleep 0.5
    kill -INT "$CAP_PID" 2>/dev/null || true
    wait "$CAP_PID" 2>/dev/null || true
    local n
    n=$(grep -o '^[0-9]* packets captured' "$TMP/$name.err" | cut -d' ' -f1)
    [[ -n "$n" && "$n" -gt 0 ]] || { echo "$name: nothing captured: $(cat "$TMP/$name.err")" >&2; exit 1; }
    mv "$TMP/$name.pcap" "$OUT/$name.pcap"
    echo "$name: $n frames ($(grep dropped "$TMP/$name.err" | tr "\n" " "))"
}
# Two captures of the same exchange, one per direction (by source MAC).
capture2() { # NAME NS DEV MAX SRC_A SRC_B FILTER
    local name="$1" ns="$2" dev="$3" max="$4" a="$5" b="$6" filter="$7"
    capture "$name-a2b" "$ns" "$dev" "$max" "ether src $a and ($filter)"
    PID_A2B=$CAP_PID
    capture "$name-b2a" "$ns" "$dev" "$max" "ether src $b and ($filter)"
    PID_B2A=$CAP_PID
}
done_capture2() { # NAME
    CAP_PID=$PID_A2B done_capture "$1-a2b"
    CAP_PID=$PID_B2A done_capture "$1-b2a"
}

g_arp_ping4() {
    fresh
    addr_plain
    ina ip neigh flush dev va
    inb ip neigh flush dev vb
    capture2 arp-ping4 "$NA" va 40 "$MAC_A" "$MAC_B" "arp or icmp or (ip[6:2] & 0x1fff != 0)"
    Ta ping -c 4 -i 0.2 -W 1 10.77.0.2 >/dev/null
    Ta ping -c 2 -i 0.2 -W 1 -s 1472 10.77.0.2 >/dev/null
    Ta ping -c 2 -i 0.2 -W 1 -s 2000 10.77.0.2 >/dev/null
    Ta ping -c 2 -i 0.2 -W 1 -s 0 10.77.0.2 >/dev/null
    done_capture2 arp-ping4
}

g_ping6_nd() {
    fresh
    addr_plain
    sleep 2 # let link-local DAD finish, so the capture holds ND for the ping
    ina ip -6 neigh flush dev va
    inb ip -6 neigh flush dev vb
    capture2 ping6-nd "$NA" va 40 "$MAC_A" "$MAC_B" "icmp6 or (ip6 and ip6[6] == 44)"
    Ta ping -6 -c 4 -i 0.2 -W 1 fd00:77::2 >/dev/null
    Ta ping -6 -c 2 -i 0.2 -W 1 -s 1452 fd00:77::2 >/dev/null
    Ta ping -6 -c 2 -i 0.2 -W 1 -s 2000 fd00:77::2 >/dev/null
    done_capture2 ping6-nd
}

g_ipv6_linkup() {
    fresh
    inb ip link set vb up
    # A's first seconds on a link: DAD for its link-local address, MLD reports, a router
    # solicitation.
    capture ipv6-linkup "$NB" vb 30 "ether src $MAC_A"
    ina ip link set va up
    sleep 3
    done_capture ipv6-linkup
}

g_mcast_join() {
    fresh
    addr_plain
    sleep 2
    capture mld-join "$NA" va 20 "ether src $MAC_A and ip6 and ip6[6] == 0 and (ip6[48] == 143 or ip6[48] == 131 or ip6[48] == 132)"
    Ta python3 "$PY" mcast-join6 ff15::77 va 2.5
    done_capture mld-join
    capture igmp3-join "$NA" va 20 "ether src $MAC_A and igmp"
    Ta python3 "$PY" mcast-join4 239.1.2.3 10.77.0.1 2.5
    done_capture igmp3-join
    ina sysctl -qw net.ipv4.conf.va.force_igmp_version=2
    capture igmp2-join "$NA" va 20 "ether src $MAC_A and igmp"
    Ta python3 "$PY" mcast-join4 239.1.2.4 10.77.0.1 2.5
    done_capture igmp2-join
}

# B's side is a bridge (vb its port) that is IGMP/MLD querier and runs kernel STP.
g_bridge_control() {
    fresh
    ina ip link set va up
    inb ip link add br0 address "$MAC_BRB" type bridge stp_state 1 hello_time 100 forward_delay 200 \
        mcast_snooping 1 mcast_igmp_version 3 mcast_mld_version 2 \
        mcast_startup_query_count 3 mcast_startup_query_interval 100
    inb ip link set vb master br0
    inb ip link set vb up
    capture stp-bpdu "$NA" va 6 "(ether src $MAC_B or ether src $MAC_BRB) and ether dst 01:80:c2:00:00:00"
    capture mcast-querier "$NA" va 12 "ether src $MAC_BRB and (igmp or (ip6 and ip6[6] == 0))"
    Q_PID=$CAP_PID
    inb ip link set br0 up
    # The MLD querier needs the bridge's IPv6 link-local address, which comes once the
    # bridge has carrier (its STP port forwarding, 2 x forward_delay) and DAD is done:
    # turn the querier on after that, so both IGMP and MLD startup queries go out.
    sleep 6
    inb ip link set br0 type bridge mcast_querier 1
    sleep 4
    done_capture stp-bpdu
    CAP_PID=$Q_PID done_capture mcast-querier
}

tcp_flow() { # ns-server ns-client family server-addr mode
    local srv="$1" cli="$2" f="$3" addr="$4" mode="$5"
    case "$mode" in
    bulk)
        timeout 30 ip netns exec "$srv" python3 "$PY" tcp-sink "$f" 5001 0 &
        timeout 30 ip netns exec "$cli" python3 "$PY" tcp-bulk "$f" "$addr" 5001 400000
        ;;
    download)
        timeout 30 ip netns exec "$srv" python3 "$PY" tcp-source-server "$f" 5002 400000 &
        timeout 30 ip netns exec "$cli" python3 "$PY" tcp-download "$f" "$addr" 5002
        ;;
    small)
        timeout 30 ip netns exec "$srv" python3 "$PY" tcp-sink "$f" 5003 1 &
        timeout 30 ip netns exec "$cli" python3 "$PY" tcp-small "$f" "$addr" 5003 30
        ;;
    esac
    wait "$!" || true
}

g_tcp() {
    fresh
    addr_plain
    capture2 tcp-bulk "$NA" va 64 "$MAC_A" "$MAC_B" "tcp"
    tcp_flow "$NB" "$NA" 4 10.77.0.2 bulk
    done_capture2 tcp-bulk
    # The reverse direction: B (the server) sends, A acknowledges.
    capture2 tcp-download "$NA" va 64 "$MAC_A" "$MAC_B" "tcp"
    tcp_flow "$NB" "$NA" 4 10.77.0.2 download
    done_capture2 tcp-download
    capture2 tcp-small "$NA" va 150 "$MAC_A" "$MAC_B" "tcp"
    tcp_flow "$NB" "$NA" 4 10.77.0.2 small
    done_capture2 tcp-small
    capture2 tcp6-small "$NA" va 150 "$MAC_A" "$MAC_B" "ip6 and tcp"
    tcp_flow "$NB" "$NA" 6 fd00:77::2 small
    done_capture2 tcp6-small
    capture2 tcp6-bulk "$NA" va 48 "$MAC_A" "$MAC_B" "ip6 and tcp"
    tcp_flow "$NB" "$NA" 6 fd00:77::2 bulk
    done_capture2 tcp6-bulk
}

g_udp() {
    fresh
    addr_plain
    inb ip neigh replace 10.77.0.1 lladdr "$MAC_A" dev vb
    ina ip neigh replace 10.77.0.2 lladdr "$MAC_B" dev va
    ina ip -6 neigh replace fd00:77::2 lladdr "$MAC_B" dev va
    Tb python3 "$PY" udp-sink 4 6001 3 &
    sink=$!
    capture udp4 "$NA" va 40 "ether src $MAC_A and (udp or (ip[6:2] & 0x1fff != 0))"
    sleep 0.3
    Ta python3 "$PY" udp-send 4 10.77.0.2 6001
    done_capture udp4
    wait $sink || true
    Tb python3 "$PY" udp-sink 6 6002 3 &
    sink=$!
    capture udp6 "$NA" va 40 "ether src $MAC_A and ip6 and (udp or ip6[6] == 44)"
    sleep 0.3
    Ta python3 "$PY" udp-send 6 fd00:77::2 6002
    done_capture udp6
    wait $sink || true
}

g_link_local() {
    fresh
    ina ip link set va up
    inb ip link set vb up
    capture link-local "$NB" vb 20 "ether src $MAC_A and ether[0:4] == 0x0180c200 and ether[4] == 0 and ether[5] & 0xf0 == 0"
    Ta python3 "$PY" link-local va
    done_capture link-local
}

g_padded() {
    fresh
    addr_plain
    ina sysctl -qw net.ipv4.tcp_timestamps=0
    ina ip neigh flush dev va
    # First the kernel's own short frames (ARP 42, ICMP echo -s 0 42, UDP 43, TCP ACKs 54)...
    capture short "$NA" va 30 "ether src $MAC_A and (arp or icmp or udp or (tcp and ip[2:2] <= 46))"
    Ta ping -c 2 -i 0.2 -W 1 -s 0 10.77.0.2 >/dev/null
    Tb python3 "$PY" udp-sink 4 6001 1 &
    Ta python3 "$PY" udp-send 4 10.77.0.2 6001 || true
    wait $! || true
    tcp_flow "$NB" "$NA" 4 10.77.0.2 small
    sleep 0.5
    kill -INT "$CAP_PID" 2>/dev/null || true
    wait "$CAP_PID" 2>/dev/null || true
    # ... then the same frames again, each padded to 60 on the way out as a NIC would.
    # UDP datagrams of 18+ bytes are not short; the capture keeps only the padded ones.
    capture padded-short "$NB" vb 30 "ether src $MAC_A and len == 60"
    Ta python3 "$PY" pad-replay va "$TMP/short.pcap"
    done_capture padded-short
}

# VLAN tags: tc programs (vlan-tag.bpf.c) make each end's kernel tag every frame it sends
# out of va/vb (bpf_skb_vlan_push) and untag what arrives (bpf_skb_vlan_pop).
vlan_tc() { # ns dev egress-section
    ip netns exec "$1" tc qdisc add dev "$2" clsact
    ip netns exec "$1" tc filter add dev "$2" egress bpf da obj "$TMP/vlan-tag.o" sec "tc/$3"
    ip netns exec "$1" tc filter add dev "$2" ingress bpf da obj "$TMP/vlan-tag.o" sec tc/pop
}

build_tagger() {
    local clang
    clang=$(command -v clang-14 || command -v clang || echo /usr/lib/llvm-14/bin/clang)
    "$clang" -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c "$HERE/vlan-tag.bpf.c" -o "$TMP/vlan-tag.o"
}

g_vlan() {
    build_tagger
    fresh
    vlan_tc "$NA" va push1q
    vlan_tc "$NB" vb push1q
    addr_plain
    ina ip neigh flush dev va
    capture2 vlan-8021q "$NA" va 80 "$MAC_A" "$MAC_B" "vlan"
    Ta ping -c 3 -i 0.2 -W 1 10.77.0.2 >/dev/null
    tcp_flow "$NB" "$NA" 4 10.77.0.2 small
    done_capture2 vlan-8021q
}

g_qinq() {
    build_tagger
    fresh
    vlan_tc "$NA" va pushqinq
    vlan_tc "$NB" vb pushqinq
    addr_plain
    ina ip neigh flush dev va
    capture2 qinq "$NA" va 80 "$MAC_A" "$MAC_B" "vlan"
    Ta ping -c 3 -i 0.2 -W 1 10.77.0.2 >/dev/null
    tcp_flow "$NB" "$NA" 4 10.77.0.2 small
    done_capture2 qinq
}

g_vxlan() {
    fresh
    addr_plain
    ina ip link add vx0 address "$MAC_BRA" type vxlan id 42 local 10.77.0.1 remote 10.77.0.2 dstport 4789 dev va
    inb ip link add vx0 address "$MAC_BRB" type vxlan id 42 local 10.77.0.2 remote 10.77.0.1 dstport 4789 dev vb
    ina ip addr add 10.79.0.1/24 dev vx0
    inb ip addr add 10.79.0.2/24 dev vx0
    ina ip link set vx0 up
    inb ip link set vx0 up
    sleep 0.5
    capture2 vxlan "$NA" va 96 "$MAC_A" "$MAC_B" "udp port 4789"
    Ta ping -c 3 -i 0.2 -W 1 10.79.0.2 >/dev/null
    tcp_flow "$NB" "$NA" 4 10.79.0.2 small
    tcp_flow "$NB" "$NA" 4 10.79.0.2 bulk
    done_capture2 vxlan
}

g_jumbo() {
    fresh 9000
    addr_plain
    capture2 jumbo "$NA" va 30 "$MAC_A" "$MAC_B" "icmp or tcp or (ip[6:2] & 0x1fff != 0)"
    Ta ping -c 2 -i 0.2 -W 1 -s 8972 10.77.0.2 >/dev/null
    Ta ping -c 2 -i 0.2 -W 1 -s 12000 10.77.0.2 >/dev/null
    tcp_flow "$NB" "$NA" 4 10.77.0.2 bulk
    done_capture2 jumbo
}

groups=(arp_ping4 ping6_nd ipv6_linkup mcast_join bridge_control tcp udp link_local padded vlan qinq vxlan jumbo)
[[ $# -gt 0 ]] && groups=("$@")
for g in "${groups[@]}"; do
    echo "== $g"
    "g_$g"
done
del_ns
