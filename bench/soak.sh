#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# soak.sh: weft under a long random mix, watching for what grows. It runs
# bench/soak (collectives of random kinds and sizes, nonblocking ones
# overlapped with point-to-point, communicators and meshes created and
# destroyed) at 4 ranks for 10 minutes, sampling every rank's resident
# memory and open descriptors and the entries of /dev/shm once a second,
# and prints the figures. It fails on growth after the warm-up (the first
# fifth of the run): when the highest figure of the last quarter is above
# the highest between the warm-up and half-way, by more than 4 MiB and 5%
# for a rank's memory, at all for its descriptors or the job's /dev/shm
# entries (a descriptor opened once, late, is no leak; one that keeps
# coming is); and when anything is left in /dev/shm or among the
# processes after the job. Run it on an otherwise quiet machine.
#
#   bench/soak.sh [-s SECONDS] [-n RANKS] [-t TRANSPORTS]     (600, 4, default)
set -u

b=$(cd "$(dirname "$0")/.." && pwd)
secs=600 ranks=4 transports=''
while getopts s:n:t: opt; do
    case $opt in
    s) secs=$OPTARG ;;
    n) ranks=$OPTARG ;;
    t) transports=$OPTARG ;;
    *) echo "usage: $0 [-s seconds] [-n ranks] [-t transports]" >&2; exit 2 ;;
    esac
done
[ -x "$b/bench/soak" ] || { echo "soak.sh: build first (make)" >&2; exit 2; }
out=$(mktemp)
export WEFT_PLUGIN_PATH="$b/plugins/shm/.libs:$b/plugins/sockets/.libs"
[ -n "$transports" ] && export WEFT_TRANSPORTS="$transports"
echo "soak.sh: $ranks ranks for $secs s${transports:+ over $transports}"
"$b/tools/weftrun" -n "$ranks" "$b/bench/soak" "$secs" >"$out" 2>&1
rc=$?
status=0
if [ $rc != 0 ]; then
    tail -n 20 "$out"
    echo "soak.sh: FAIL: the job exited with status $rc"
    status=1
fi
# sample <s> ops <n> rss_kib <r0..> fds <f0..> shm <k>
awk -v n="$ranks" -v warm_frac=0.2 '
    $1 == "sample" { s = $2; last = s; ops[s] = $4;
        for (r = 0; r < n; r++) { rss[s, r] = $(6 + r); fds[s, r] = $(7 + n + r) }
        shm[s] = $(8 + 2 * n) }
    END {
        if (last < 7) { print "soak.sh: FAIL: only " last + 1 " samples"; exit 1 }
        w = int((last + 1) * warm_frac);
        printf "%-8s %10s", "second", "ops";
        for (r = 0; r < n; r++) printf " %9s", "rss" r "_KiB";
        for (r = 0; r < n; r++) printf " %5s", "fd" r;
        printf " %4s\n", "shm";
        step = int((last + 1) / 10); if (step < 1) step = 1;
        for (s = 0; s <= last; s++) {
            if (s % step && s != w && s != last) continue;
            printf "%-8d %10d", s, ops[s];
            for (r = 0; r < n; r++) printf " %9d", rss[s, r];
            for (r = 0; r < n; r++) printf " %5d", fds[s, r];
            printf " %4d%s\n", shm[s], s == w ? "   <- end of warm-up" : "";
        }
        bad = 0; half = int((last + 1) / 2); tail = int((last + 1) * 3 / 4);
        for (r = 0; r < n; r++) {
            m1 = 0; m2 = 0; f1 = 0; f2 = 0;
            for (s = w; s < half; s++) {
                if (rss[s, r] > m1) m1 = rss[s, r];
                if (fds[s, r] > f1) f1 = fds[s, r];
            }
            for (s = tail; s <= last; s++) {
                if (rss[s, r] > m2) m2 = rss[s, r];
                if (fds[s, r] > f2) f2 = fds[s, r];
            }
            printf "rank %d: memory at most %d KiB from warm-up to half-way, %d KiB in the " \
                   "last quarter (%+d KiB); descriptors at most %d, then %d\n", r, m1, m2,
                   m2 - m1, f1, f2;
            if (m2 - m1 > 4096 && m2 - m1 > m1 * 0.05) { print "soak.sh: FAIL: rank " r \
                   " memory grew"; bad = 1 }
            if (f2 > f1) { print "soak.sh: FAIL: rank " r " descriptors grew"; bad = 1 }
        }
        s1 = 0; s2 = 0;
        for (s = w; s < half; s++) if (shm[s] > s1) s1 = shm[s];
        for (s = tail; s <= last; s++) if (shm[s] > s2) s2 = shm[s];
        printf "/dev/shm: the job had at most %d entries from warm-up to half-way, %d in the " \
               "last quarter\n", s1, s2;
        if (s2 > s1) { print "soak.sh: FAIL: /dev/shm entries grew"; bad = 1 }
        printf "%d operations in %d s\n", ops[last], last + 1;
        exit bad }' "$out" || status=1
job=$(sed -n 's/^job //p' "$out" | head -n 1)
if [ -n "$job" ]; then
    left=$(ls /dev/shm | grep -c -e "^weft-$job-" -e "^weft-shm-$job-")
    [ "$left" = 0 ] || { echo "soak.sh: FAIL: $left entries of the job left in /dev/shm"; status=1; }
else
    echo "soak.sh: FAIL: the job's id was not printed"; status=1
fi
if pgrep -f "$b/bench/soak" >/dev/null 2>&1; then
    echo "soak.sh: FAIL: soak processes left"; status=1
fi
rm -f "$out"
[ $status = 0 ] && echo "soak.sh: passed"
exit $status
