#!/bin/sh
# Writes and compiles a BPF object of about a million instructions, for `cargo bench --bench load`:
# an XDP program calling 34 subprograms of 10,000 source lines each (3 instructions a line),
# compiled as the fixtures are (clang -g -O2 -target bpfel). Takes clang-19 about 9 minutes and
# 1.1 GB; the object is about 20 MB.
#
#   benches/big-object.sh target/tmp/big1m.o [SUBPROGRAMS [LINES]]
set -eu
out=${1:?usage: benches/big-object.sh OUT.o [SUBPROGRAMS [LINES]]}
funcs=${2:-34}
lines=${3:-10000}
CLANG=${CLANG:-clang-19}
src=${out%.o}.c
{
	printf 'typedef unsigned long long u64;\nstruct xdp_md { unsigned int data, data_end; };\n'
	k=0
	while [ "$k" -lt "$funcs" ]; do
		printf 'static __attribute__((noinline)) u64 part%d(u64 seed)\n{\n\tvolatile u64 acc = seed;\n' "$k"
		awk -v n="$lines" -v k="$k" 'BEGIN { for (i = 0; i < n; i++) printf "\tacc += %d;\n", i * 7 + k }'
		printf '\treturn acc;\n}\n'
		k=$((k + 1))
	done
	printf '__attribute__((section("xdp"), used)) int big(struct xdp_md *ctx)\n{\n\tu64 acc = ctx->data;\n'
	k=0
	while [ "$k" -lt "$funcs" ]; do
		printf '\tacc = part%d(acc);\n' "$k"
		k=$((k + 1))
	done
	printf '\treturn acc & 3;\n}\nchar _license[] __attribute__((section("license"), used)) = "GPL";\n'
} > "$src"
"$CLANG" -g -O2 -target bpfel -c "$src" -o "$out"
