#!/usr/bin/env bash
# Rebuild the XDP objects under scenarios/xdp (and scenarios/xdp/rejected, programs the
# kernel's verifier refuses, for the load-time check's tests) and the socket filter
# objects under scenarios/sockfilter (tun's steering and filter programs) from their C
# sources; with
# --check, rebuild into a temporary directory and fail if any committed object differs.
# Needs clang-14 and libbpf-dev (ci/install.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
clang=$(command -v clang-14 || echo /usr/lib/llvm-14/bin/clang)
check=0
[ "${1:-}" = "--check" ] && check=1
out=scenarios
[ $check = 1 ] && out=$(mktemp -d)
mkdir -p "$out/xdp/rejected" "$out/sockfilter"
status=0
for src in scenarios/xdp/*.c scenarios/xdp/rejected/*.c scenarios/sockfilter/*.c; do
  name=${src#scenarios/}
  name=${name%.c}
  # -fdebug-prefix-map keeps the absolute checkout path out of the object.
  "$clang" -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
    -fdebug-prefix-map="$PWD"=. -c "$src" -o "$out/$name.o"
  if [ $check = 1 ] && ! cmp -s "$out/$name.o" "scenarios/$name.o"; then
    echo "build-xdp: scenarios/$name.o differs from what $src builds (run ci/build-xdp.sh)" >&2
    status=1
  fi
done
[ $check = 1 ] && rm -rf "$out"
exit $status
