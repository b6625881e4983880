#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# file:///PATH: rank 0 publishes its store's address in a file the others
# read; a path of its own for each run. Then a second job through the same
# path: the first job's leftover must not mislead it.
. "$(dirname "$0")/lib.sh"

rdv=$tmp/rendezvous
for job in 1 2; do
    forget
    for r in 1 2 0; do
        start "r$r" WEFT_TIMEOUT=30 -- --method "file://$rdv" --rank "$r" --size 3
        sleep 0.2
    done
    finish
    show_outputs
    for r in 0 1 2; do
        expect_ok "r$r" "$r" 3
    done
    echo "file://$rdv, job $job: ok"
done
