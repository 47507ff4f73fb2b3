#!/bin/sh
# wireguard-go (Debian's, unmodified) as peer A, with its device either a real tun
# (ARM=real) or the simulated one under `skbsim exec` as nobody (ARM=exec, SKBSIM=path),
# and a second wireguard-go on a real tun as peer B. Run as root in a fresh network and
# mount namespace (`unshare -nm`, tools/skbsim/tests/exec_clients.rs); WORK is a directory
# nobody can write. A is in a child network namespace joined to B's by a veth pair
# (192.168.9.2 and .1; UDP 51820 and 51821). A's far side holds 10.0.0.2: the kernel's
# stack on the real tun (10.0.0.2/24), the stack far side under exec (--far-addr). B is
# 10.0.0.3 and pings 10.0.0.2 through its tunnel: B's packets go in A's device and the
# answers come out of it. Prints B's ping lines and what A said (A.log).
# Keys: the X25519 test vectors of RFC 7748 section 6.1 (Alice: A, Bob: B).
set -eu
: "${ARM:?real or exec}" "${WORK:?}"
KA=77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a
PA=8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a
KB=5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb
PB=de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f
cd "$WORK"
echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6
ip link set lo up
mount -t tmpfs tmpfs /run
mkdir -m 1777 /run/wireguard

# uapi NAME LINES: wireguard-go's configuration protocol on its UAPI socket.
uapi='until [ -S /run/wireguard/$1.sock ]; do sleep 0.05; done
printf "set=1\n$2\n\n" | socat - UNIX-CONNECT:/run/wireguard/$1.sock | grep -qx errno=0'

# Peer A, in its own network namespace: the veth end, then wireguard-go on wga until
# B's side is done.
a_peer="uapi() { $uapi
}
LOG_LEVEL=debug wireguard-go -f wga >A.log 2>&1 &
wg=\$!
uapi wga 'private_key=$KA\nlisten_port=51820\npublic_key=$PB\nallowed_ip=10.0.0.3/32\nendpoint=192.168.9.1:51821'
if [ $ARM = real ]; then ip addr add 10.0.0.2/24 dev wga; fi
ip link set wga up
echo up >a-up
until [ -e b-done ]; do sleep 0.05; done
kill \$wg
wait \$wg || true"
unshare -n sh -c "
  echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6
  touch m-netns
  until ip link show va >/dev/null 2>&1; do sleep 0.05; done
  ip link set lo up && ip addr add 192.168.9.2/24 dev va && ip link set va up
  if [ $ARM = real ]; then sh -c \"\$0\"; else
    setpriv --reuid=65534 --regid=65534 --clear-groups ${SKBSIM:-} exec -- sh -c \"\$0\"; fi
" "$a_peer" >a.out 2>&1 &
a=$!
# Only once A's shell is in its own namespace does `netns $a` name that one.
until [ -e m-netns ]; do sleep 0.05; done
ip link add vb type veth peer name va netns $a
ip addr add 192.168.9.1/24 dev vb && ip link set vb up

# Peer B, here, on a real tun.
eval "uapi() { $uapi
}"
wireguard-go -f wgb >B.log 2>&1 &
wg=$!
uapi wgb "private_key=$KB\nlisten_port=51821\npublic_key=$PA\nallowed_ip=10.0.0.0/24\nendpoint=192.168.9.2:51820"
ip addr add 10.0.0.3/32 dev wgb && ip link set wgb up && ip route add 10.0.0.0/24 dev wgb
until [ -e a-up ]; do sleep 0.05; done
ping -n -c 3 -i 0.3 -W 5 10.0.0.2 >ping.out || true
touch b-done
wait $a || { echo "peer A failed:"; cat a.out; }
kill $wg
wait $wg || true
cat ping.out
echo "--- A.log"
cat A.log
