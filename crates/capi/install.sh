#!/bin/sh
# Installs the C library: libbpflog.so (SONAME libbpflog.so.N, N the ABI version), libbpflog.a,
# include/bpflog.h and the pkg-config file bpflog.pc.
#
#   crates/capi/install.sh                 build (cargo build --release -p bpflog-capi), install
#   PREFIX=$HOME/.local crates/capi/install.sh
#   DESTDIR=/tmp/stage crates/capi/install.sh    staged, for packaging
#
# PREFIX (default /usr/local), LIBDIR ($PREFIX/lib), INCLUDEDIR ($PREFIX/include), PKGCONFIGDIR
# ($LIBDIR/pkgconfig); BUILD_DIR, the directory the libraries are taken from (default
# target/release, or $CARGO_TARGET_DIR/release), built first unless NO_BUILD=1.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PREFIX=${PREFIX:-/usr/local}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
PKGCONFIGDIR=${PKGCONFIGDIR:-$LIBDIR/pkgconfig}
BUILD_DIR=${BUILD_DIR:-${CARGO_TARGET_DIR:-$root/target}/release}
DESTDIR=${DESTDIR:-}

if [ "${NO_BUILD:-0}" != 1 ]; then
	cargo build --release --locked -p bpflog-capi --manifest-path "$root/Cargo.toml"
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
abi=$(sed -n 's/^pub const BPFLOG_ABI_VERSION: u32 = \([0-9]*\);$/\1/p' "$here/src/lib.rs")
# What `rustc --print native-static-libs` lists for a Rust static library on Linux.
libs_private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

install -d "$DESTDIR$LIBDIR" "$DESTDIR$INCLUDEDIR" "$DESTDIR$PKGCONFIGDIR"
install -m 0755 "$BUILD_DIR/libbpflog.so" "$DESTDIR$LIBDIR/libbpflog.so.$abi"
ln -sf "libbpflog.so.$abi" "$DESTDIR$LIBDIR/libbpflog.so"
install -m 0644 "$BUILD_DIR/libbpflog.a" "$DESTDIR$LIBDIR/libbpflog.a"
install -m 0644 "$here/include/bpflog.h" "$DESTDIR$INCLUDEDIR/bpflog.h"
sed -e "s|@PREFIX@|$PREFIX|" -e "s|@LIBDIR@|$LIBDIR|" -e "s|@INCLUDEDIR@|$INCLUDEDIR|" \
	-e "s|@VERSION@|$version|" -e "s|@LIBS_PRIVATE@|$libs_private|" \
	"$here/bpflog.pc.in" >"$DESTDIR$PKGCONFIGDIR/bpflog.pc"
chmod 0644 "$DESTDIR$PKGCONFIGDIR/bpflog.pc"
echo "installed bpflog $version (ABI $abi) under $DESTDIR$PREFIX"
