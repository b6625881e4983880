# SPDX-License-Identifier: BSD-3-Clause
# bench-tune.awk: checks the output of weft-bench --tune against itself:
# its measured rows against its predicted table, and its marks and
# summaries against its measured rows. Prints a FAIL line per problem and
# exits 1 after any; bench-tune.sh runs it.
#
#   awk -v sizes="8 32 ..." -f bench-tune.awk OUTPUT
#
# sizes: the table sizes that -b, -e and -f select; allreduce must have
# been measured at each of them, every operation at no other.
#
# The table (before "# measured against predicted") has per operation a
# header "OP bytes ALGO ... -> choice" and rows "SIZE T|- ... -> ALGO",
# SIZE as 8, 1K, 32M. The measured part has per operation "# OP", then
# rows "BYTES COUNT ALGO PREDICTED MEASURED RATIO WRONG [pick] [fastest]",
# "# miss: OP ..." lines, and "# OP: tuner's pick ... at K of N sizes".

function bytes_of(s) {
    if (s ~ /K$/) return (s + 0) * 1024
    if (s ~ /M$/) return (s + 0) * 1048576
    if (s ~ /G$/) return (s + 0) * 1073741824
    return s + 0
}

# The tuner's size bucket: the power of two at or above b.
function bucket(b,    t) {
    for (t = 1; t < b; t *= 2)
        ;
    return t
}

function bad(msg) {
    print "FAIL: " msg
    failed = 1
}

BEGIN {
    table_name["broadcast"] = "bcast" # WEFT_ALGO's name of it
    nwant = split(sizes, want, " ")
}

/^# measured against predicted/ { measured = 1; next }

!measured && / -> choice$/ {
    top = $1
    for (i = 3; i <= NF - 2; i++)
        algo_at[top, i - 2] = $i
    nalgos[top] = NF - 4
    next
}

!measured && $1 ~ /^[0-9]/ && $(NF - 1) == "->" {
    b = bytes_of($1)
    for (i = 2; i <= NF - 2; i++)
        if ($i != "-")
            pred[top, b, algo_at[top, i - 1]] = $i
    choice[top, b] = $NF
    next
}

measured && /^# [a-z_]+$/ {
    op = $2
    top = op in table_name ? table_name[op] : op
    ops[op] = top
    next
}

measured && /^ +[0-9]/ {
    bytes = $1; algo = $3; p = $4; m = $5; r = $6; w = $7
    b = bucket(bytes)
    where = op " " bytes " B " algo
    if (!((op, b) in nrows)) {
        op_sizes[op] = op_sizes[op] " " b
        nsizes[op]++
    }
    nrows[op, b]++
    seen[op, b, algo] = 1
    if (p !~ /^[0-9.]+$/ || m !~ /^[0-9.]+$/ || r !~ /^[0-9.]+$/)
        bad(where ": not a measured row: " $0)
    if (w != "0")
        bad(where ": " w " wrong elements")
    if (!((top, b, algo) in pred))
        bad(where ": measured, but the table predicts nothing for " top " at " b)
    else if (bytes == b && p != pred[top, b, algo])
        bad(where ": predicted " p ", the table says " pred[top, b, algo])
    # Both times are rounded to 0.1 us: only large enough ones divide well;
    # the ratio to 0.01, which is more than 2% of one under 0.25 (a probe
    # that ran while the machine was busy predicts 10 times the measured).
    tol = 0.02 * r
    if (tol < 0.006)
        tol = 0.006
    if (p >= 10 && m >= 10 && (r - m / p > tol || m / p - r > tol))
        bad(where ": ratio " r " is not " m " / " p)
    if ($0 ~ / pick/) {
        npick[op, b]++
        pick[op, b] = algo
        pick_t[op, b] = m
    }
    if ($0 ~ / fastest/) {
        nfast[op, b]++
        fast_t[op, b] = m
    }
    if (!((op, b) in min_t) || m + 0 < min_t[op, b])
        min_t[op, b] = m + 0
    next
}

measured && /^# miss: / {
    misses[$3]++
    ratio = $NF
    gsub(/[()x]/, "", ratio)
    # Printed to two decimals: a miss just past 10% (1.1003) reads 1.10.
    if (ratio + 0 < 1.095)
        bad("a miss within 10%: " $0)
    next
}

measured && /tuner's pick within 10% of the fastest measured at [0-9]+ of [0-9]+ sizes$/ {
    op = $2
    sub(/:$/, "", op)
    summary_k[op] = $(NF - 3)
    summary_n[op] = $(NF - 1)
    next
}

END {
    if (!measured)
        bad("no measured part")
    for (op in ops) {
        top = ops[op]
        if (!(op in op_sizes)) {
            bad(op ": no measured rows")
            continue
        }
        n = split(op_sizes[op], got, " ")
        for (i = 1; i <= n; i++) {
            b = got[i]
            ok = 0
            for (j = 1; j <= nwant; j++)
                ok = ok || bytes_of(want[j]) == b
            if (!ok)
                bad(op ": measured at " b " B, not a size asked for")
            # Every algorithm the table predicts at this size was measured.
            for (j = 1; j <= nalgos[top]; j++) {
                a = algo_at[top, j]
                if ((top, b, a) in pred && !((op, b, a) in seen))
                    bad(op " " b " B: " a " has a prediction but no measured row")
            }
            if (npick[op, b] != 1)
                bad(op " " b " B: " npick[op, b] + 0 " rows marked pick")
            else if (pick[op, b] != choice[top, b])
                bad(op " " b " B: pick " pick[op, b] ", the table chose " choice[top, b])
            if (nfast[op, b] != 1)
                bad(op " " b " B: " nfast[op, b] + 0 " rows marked fastest")
            else if (fast_t[op, b] + 0 != min_t[op, b])
                bad(op " " b " B: fastest at " fast_t[op, b] " us, a row took " min_t[op, b])
        }
        if (op == "allreduce" && n != nwant)
            bad("allreduce measured at " n " sizes, not " nwant)
        if (!(op in summary_n))
            bad(op ": no summary line")
        else if (summary_n[op] != n || summary_k[op] != n - misses[op])
            bad(op ": summary " summary_k[op] " of " summary_n[op] " for " n " sizes and " \
                misses[op] + 0 " misses")
        else
            printf "ok: %s: %d sizes, every predicted algorithm measured, pick within 10%% at %d\n",
                   op, n, summary_k[op]
    }
    exit failed
}
