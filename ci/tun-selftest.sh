#!/usr/bin/env bash
# The kernel's own tun selftest (tools/testing/selftests/net/tun.c with its kselftest
# harness, from Debian's linux-source-SERIES) built statically as a new user would
# (`gcc -static -I.. tun.c`: only libc and the installed linux uapi headers), then run
#   - on the real kernel, as root in a private network namespace (`unshare -n`), and
#   - under `skbsim exec --far-side loopback --profile P` as `nobody`, for each profile P,
# and every test's TAP verdict ("ok N name" / "not ok N name") compared: any difference,
# or a test missing on one side, fails (exit 1); a setup problem exits 2.
#
# The sources come from the lab's cache (`skbsim lab`, tools/skbsim-kernel/src/lab:
# $SKBSIM_LAB_CACHE, else $XDG_CACHE_HOME/skbsim-lab, else ~/.cache/skbsim-lab):
# src/<version>/linux-source-SERIES.tar.xz, fetched with `apt-get download` as the lab
# does when no version is cached. Nothing is installed and no kernel source is committed.
#
# Usage: ci/tun-selftest.sh [SERIES [PROFILE...]]   (default: 6.12 linux-6.12 linux-6.18)
# SKBSIM: the skbsim binary (default: cargo run --release).
set -euo pipefail
cd "$(dirname "$0")/.."
series=${1:-6.12}
shift || true
profiles=("$@")
[ ${#profiles[@]} -gt 0 ] || profiles=(linux-6.12 linux-6.18)
die() { echo "ci/tun-selftest.sh: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (the real arm's namespace, and dropping to nobody)"
for t in gcc tar unshare setpriv; do command -v "$t" >/dev/null || die "$t is missing"; done
if [ -z "${SKBSIM:-}" ]; then
  cargo build --quiet --release --locked -p skbsim
  SKBSIM=$PWD/target/release/skbsim
fi

cache=${SKBSIM_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skbsim-lab}
pkg=linux-source-$series
tarball=$(ls -1 "$cache"/src/*/"$pkg.tar.xz" 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$tarball" ]; then
  # As tools/skbsim-kernel/src/lab/patch.rs: source_dirs: apt-get download, then only the
  # tarball out of the .deb.
  dl=$(mktemp -d)
  trap 'rm -rf "$dl"' EXIT
  (cd "$dl" && apt-get download -q -o APT::Sandbox::User=root "$pkg") >&2 ||
    die "apt-get download $pkg failed (apt-get update first?)"
  deb=$(ls "$dl"/*.deb)
  version=$(dpkg-deb -f "$deb" Version | tr '~:' '__')
  mkdir -p "$cache/src/$version"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dl" "./usr/src/$pkg.tar.xz"
  mv "$dl/usr/src/$pkg.tar.xz" "$cache/src/$version/$pkg.tar.xz"
  tarball=$cache/src/$version/$pkg.tar.xz
fi

work=$(mktemp -d)
trap 'rm -rf "$work" ${dl:+"$dl"}' EXIT
st=$pkg/tools/testing/selftests
tar -xJf "$tarball" -C "$work" "$st/net/tun.c" "$st/kselftest_harness.h" "$st/kselftest.h" ||
  die "$tarball: no $st/net/tun.c"
(cd "$work/$st/net" && gcc -static -I.. -o "$work/tun" tun.c) || die "gcc -static tun.c failed"
chmod 755 "$work"

# "name verdict" per TAP line of the kselftest harness.
verdicts() { sed -nE 's/^(ok|not ok) [0-9]+ ([^ #]+).*/\2 \1/p'; }
echo "== tun selftest from $(basename "$(dirname "$tarball")")/$pkg"
real=$(cd "$work" && unshare -n ./tun 2>&1 | verdicts)
[ -n "$real" ] || die "the real kernel's run printed no TAP verdicts"
status=0
for p in "${profiles[@]}"; do
  sim=$(cd "$work" && setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$SKBSIM" exec --far-side loopback --profile "$p" -- ./tun 2>&1 | verdicts)
  echo "-- real kernel $(uname -r) | skbsim exec --profile $p"
  if ! join -a1 -a2 -e missing -o 0,1.2,2.2 <(sort <<<"$real") <(sort <<<"$sim") |
    awk '{ d = ($2 == $3) ? "" : "   DIFFERENT"; printf "%-28s %-8s %-8s%s\n", $1, $2, $3, d; if (d != "") bad = 1 } END { exit bad }'; then
    status=1
  fi
done
exit $status
