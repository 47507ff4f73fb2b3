#!/usr/bin/env bash
# Writes nflog.pcap: run as root from sim/src/pcap/testdata as `unshare -n bash make-nflog.sh`
# (a private network namespace: lo and a veth pair of its own, nft rules logging every
# IPv4/IPv6 and ARP output packet to NFLOG group 5, tcpdump -i nflog:5).
set -e
ip link set lo up
ip link add v0 type veth peer name v1
sysctl -qw net.ipv6.conf.v0.disable_ipv6=1 net.ipv6.conf.v1.disable_ipv6=1
ip addr add 10.9.0.1/24 dev v0; ip link set v0 up; ip link set v1 up
nft -f - <<'NFT'
table inet t {
  chain o { type filter hook output priority 0; log group 5; }
}
table arp a {
  chain o { type filter hook output priority 0; log group 5; }
}
NFT
tcpdump -i nflog:5 -w nflog.pcap -U 2>/dev/null &
T=$!
sleep 1
ping -c 2 -s 100 -i 0.2 127.0.0.1 >/dev/null
ping -6 -c 2 -i 0.2 ::1 >/dev/null
ping -c 1 -W 1 10.9.0.2 >/dev/null || true
python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x'*10, ('127.0.0.1', 9))"
sleep 1
kill $T; wait $T || true
