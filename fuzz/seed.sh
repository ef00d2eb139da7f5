#!/usr/bin/env bash
# Seeds fuzz/corpus/<target>/ from the committed fixtures (tests/fixtures): the real clang objects
# for object/dwarf, a few real kernel logs for classify, and object+log pairs joined by the
# separator of bpflog_fuzz::LOG_SEPARATOR for annotate. Idempotent; corpus/ is not committed.
set -euo pipefail
cd "$(dirname "$0")"
fixtures=../tests/fixtures
sep=$'\n==BPFLOG-LOG==\n'

for target in object dwarf classify annotate profile source; do mkdir -p "corpus/$target"; done

for obj in "$fixtures"/obj/*.o; do
    name=$(basename "$obj" .o)
    cp "$obj" "corpus/object/seed-$name.o"
    cp "$obj" "corpus/dwarf/seed-$name.o"
done

# Without -max_len, libFuzzer takes the largest input of the corpus as its size limit, and a
# large seed makes every mutation large and slow; with it, a longer seed is cut. The seeds are
# made to fit the limit the README gives (MAX_LEN, 16 KiB) whole.
max_len=16384
sep_len=${#sep}

# The first lines of the log $1 that fit in $2 bytes (at most 200 lines).
fit() {
    head -n 200 "$1" | LC_ALL=C awk -v room="$2" '{ n += length($0) + 1; if (n > room) exit; print }'
}

# Logs: one program per kind of log (level 1 and 2, rejected and accepted, global functions,
# callbacks, CO-RE), cut to their first 200 lines or MAX_LEN, whichever is shorter.
pairs=(
    "reject_subprog xdp_reject_subprog l2"
    "reject_global xdp_reject_global l2"
    "loop_callback loop_sum l1"
    "core_read kprobe_nanosleep l2"
    "xdp_subprogs xdp_parse l1"
    "reject_nested xdp_reject_nested l2"
)
for pair in "${pairs[@]}"; do
    read -r obj prog level <<<"$pair"
    log="$fixtures/logs/$obj.$prog.$level.log"
    fit "$log" "$max_len" >"corpus/classify/seed-$obj.$level.log"
    room=$((max_len - $(wc -c <"$fixtures/obj/$obj.o") - sep_len))
    { cat "$fixtures/obj/$obj.o"; printf '%s' "$sep"; fit "$log" "$room"; } \
        >"corpus/annotate/seed-$obj.$level"
    cp "corpus/annotate/seed-$obj.$level" "corpus/profile/seed-$obj.$level"
done
# A seed past MAX_LEN (an object grown past it) is left out, so that the corpus does not raise the
# limit of a run without -max_len.
find corpus -type f -name 'seed-*' -size +"$max_len"c -print | while read -r big; do
    echo "left out: $big ($(wc -c <"$big") bytes, past $max_len)"
    rm -- "$big"
done

# source: names, a --source-dir, maps and limits, as bpflog_fuzz::source_in reads them.
printf '\001\000\n\000a.c\n\000@/inside/link.c\n\000../outside/secret.c\n\002./=\000\n\000./sub//b.c\n' \
    >corpus/source/seed-names
printf '\001\001\n\003\002\377\n\000deep/c.c\n\000@/inside/dirlink/secret.c\n\000/proc/self/environ\n' \
    >corpus/source/seed-limits
for target in object dwarf classify annotate profile source; do
    echo "corpus/$target: $(ls "corpus/$target" | wc -l) seeds, $(du -sh "corpus/$target" | cut -f1)"
done
