#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# campaign.sh: the fault campaign. For each transport, rank count, kind of
# operation and injection, it starts tests/faults/mp_fault under weftrun,
# injects the fault once every rank is running, and checks what every
# surviving rank reports: a named error (WEFT_ERR_PEER_LOST, _TIMEOUT,
# _ABORTED, ...) within WEFT_TIMEOUT plus a bounded slack, never a wrong
# result, a crash, a hang or a success that should not be; weftrun exits
# with the status of the first failure; nothing of the job is left in
# /dev/shm or among the processes. It prints the matrix: injections,
# outcomes, the longest time to a survivor's error, counted from the
# injection or from the start of the operation that failed, whichever is
# later (a rank that lags behind the others first completes the
# operations the victim took part in).
#
#   campaign.sh [-t "shm sockets ibv"] [-n "3 4 8"] [-k "p2p allreduce ..."]
#               [-i "kill stop abort"] [-p POINTS] [-T SECONDS] [-s SEED]
#
# kill: SIGKILL to a random rank at a random moment, POINTS times (20 by
# default) per kind; stop: SIGSTOP to one (a rank that hangs without
# dying: the survivors must time out naming it); abort: a random rank calls
# weft_comm_abort with a nonblocking operation of its own in flight, at a
# random iteration. ibv runs ib-verbs on the software RDMA device of the
# build tree. -T sets WEFT_TIMEOUT (5 s by default). Exit status 0 when
# every run behaved, 1 otherwise.
set -u

b=${abs_top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
transports="shm sockets"
counts="3 4 8"
kinds="p2p barrier broadcast reduce allreduce gather scatter allgather allgatherv reduce_scatter
       alltoall alltoallv scan"
injections="kill stop abort"
points=20
tmo=5
seed=$$
while getopts t:n:k:i:p:T:s: opt; do
    case $opt in
    t) transports=$OPTARG ;;
    n) counts=$OPTARG ;;
    k) kinds=$OPTARG ;;
    i) injections=$OPTARG ;;
    p) points=$OPTARG ;;
    T) tmo=$OPTARG ;;
    s) seed=$OPTARG ;;
    *) echo "usage: $0 [-t transports] [-n counts] [-k kinds] [-i injections] [-p points]" \
            "[-T seconds] [-s seed]" >&2; exit 2 ;;
    esac
done
prog=$b/tests/faults/mp_fault
[ -x "$prog" ] || { echo "campaign.sh: $prog is not built" >&2; exit 2; }
plugins="$b/plugins/shm/.libs:$b/plugins/sockets/.libs:$b/plugins/ib-verbs/.libs"
slack=5                      # seconds past WEFT_TIMEOUT a survivor may take
rand_state=$seed
rand() {                     # rand N: 0 .. N-1, reproducible from the seed
    rand_state=$(( (rand_state * 1103515245 + 12345) % 2147483648 ))
    echo $(( (rand_state / 65536) % $1 ))
}
now_ms() { date +%s%3N; }

status=0
results=$(mktemp)
echo "campaign.sh: seed $seed, WEFT_TIMEOUT $tmo s, $points kill points per kind"

one_run() {         # transport ranks kind injection
    t=$1 n=$2 kind=$3 inj=$4
    dir=$(mktemp -d /tmp/weft-fault.XXXXXX)
    victim=$(rand "$n")
    set -- WEFT_PLUGIN_PATH="$plugins" FAULT_DIR="$dir" WEFT_TIMEOUT="$tmo" FAULT_SECONDS=60
    case $t in
    sockets) set -- "$@" WEFT_TRANSPORTS=sockets ;;
    ibv) set -- "$@" WEFT_TRANSPORTS=ib-verbs \
             WEFT_IBVERBS_LIB="$b/tests/swrdma/.libs/libibverbs.so.1" \
             WEFT_SWRDMA_REGISTRY="weft-fault-$$" ;;
    esac
    [ "$inj" = abort ] && set -- "$@" FAULT_VICTIM="$victim" FAULT_ABORT_AT=$(( 1 + $(rand 40) ))
    env "$@" "$b/tools/weftrun" --kill-grace $((tmo + slack + 5)) -n "$n" "$prog" "$kind" \
        >"$dir/job.out" 2>&1 &
    job=$!
    t_inj=''
    waited=0
    while [ ! -e "$dir/ready" ] && kill -0 $job 2>/dev/null && [ $waited -lt 300 ]; do
        sleep 0.05; waited=$((waited + 1))
    done
    # The job's id, from a file of its ranks in /dev/shm (a doorbell or a
    # shm segment carries its rank's pid), to tell its leftovers from
    # those of other jobs on the machine.
    jobid=''
    for f in "$dir"/shmname.*; do
        name=$(cat "$f" 2>/dev/null) || continue
        case $name in
        weft-shm-*) jobid=${name#weft-shm-}; jobid=${jobid%-*-*} ;;
        weft-*-bell-*) jobid=${name#weft-}; jobid=${jobid%-bell-*} ;;
        esac
        [ -n "$jobid" ] && break
    done
    if [ "$inj" != abort ]; then
        # A random moment among the operations: 0 to 300 ms in.
        sleep "0.$(printf %03d $(rand 300))"
        vpid=$(cat "$dir/pid.$victim" 2>/dev/null)
        t_inj=$(now_ms)
        if [ -n "$vpid" ]; then
            [ "$inj" = kill ] && kill -KILL "$vpid" 2>/dev/null
            [ "$inj" = stop ] && kill -STOP "$vpid" 2>/dev/null
        fi
    else
        t_inj=$(now_ms)
    fi
    # Survivors have WEFT_TIMEOUT and the slack; then the stopped rank goes.
    deadline=$(( $(now_ms) + (tmo + slack) * 1000 ))
    while kill -0 $job 2>/dev/null && [ "$(now_ms)" -lt $deadline ]; do
        left=0
        for r in $(seq 0 $((n - 1))); do
            [ "$inj" != abort ] && [ $r = "$victim" ] && continue
            [ -e "$dir/out.$r" ] || left=$((left + 1))
        done
        [ $left = 0 ] && break
        sleep 0.05
    done
    [ "$inj" = stop ] && [ -n "${vpid:-}" ] && kill -KILL "$vpid" 2>/dev/null
    # weftrun stops the rest after its grace; a job still there is a hang.
    hard=$(( $(now_ms) + (tmo + slack + 15) * 1000 ))
    while kill -0 $job 2>/dev/null && [ "$(now_ms)" -lt $hard ]; do sleep 0.1; done
    hung=0
    if kill -0 $job 2>/dev/null; then
        hung=1
        for f in "$dir"/pid.*; do kill -KILL "$(cat "$f")" 2>/dev/null; done
        kill -KILL $job 2>/dev/null
    fi
    wait $job
    rc=$?
    # An abort happens when the victim calls it: its own record's time.
    if [ "$inj" = abort ] && [ -e "$dir/out.$victim" ]; then
        read -r what t_inj started detail <"$dir/out.$victim"
    fi
    # Each rank's outcome.
    outcome="" longest=0 bad=""
    for r in $(seq 0 $((n - 1))); do
        if [ "$inj" != abort ] && [ $r = "$victim" ]; then continue; fi
        if [ ! -e "$dir/out.$r" ]; then
            what=NOREPORT
        else
            read -r what at started detail <"$dir/out.$r"
            # From the injection, or from the start of the operation the
            # rank failed in when it reached that later: a rank that lags
            # finishes the operations the victim took part in first.
            from=$t_inj
            [ "$started" -gt "$from" ] && from=$started
            d=$((at - from))
            [ $d -gt $longest ] && longest=$d
            [ $d -gt $(( (tmo + slack) * 1000 )) ] && bad="$bad rank $r late ($d ms);"
        fi
        case $what in
        WEFT_ERR_*) ;;
        *) bad="$bad rank $r: $what;" ;;
        esac
        case $what in
        WEFT_ERR_TIMEOUT)
            # A stopped rank is named by those that wait on it directly.
            case $detail in *"rank $victim"*) what=TIMEOUT-names-victim ;; esac ;;
        esac
        outcome="$outcome ${what#WEFT_ERR_}"
    done
    # weftrun's status is the first failure's: the killed rank's 137, or
    # a survivor's 3 (or the stopped rank's 137, killed last).
    case $inj:$rc in
    kill:137 | kill:3 | stop:3 | stop:137 | abort:3) ;;
    *) bad="$bad weftrun exited $rc;" ;;
    esac
    [ $hung = 1 ] && bad="$bad the job hung;"
    [ -n "$jobid" ] || bad="$bad none of its files seen in /dev/shm;"
    shm_left=0
    [ -n "$jobid" ] && shm_left=$(find /dev/shm -maxdepth 1 \( -name "weft-$jobid-*" -o \
                                  -name "weft-shm-$jobid-*" \) 2>/dev/null | wc -l)
    [ "$shm_left" = 0 ] || bad="$bad $shm_left left in /dev/shm;"
    procs=0
    for f in "$dir"/pid.*; do
        p=$(cat "$f" 2>/dev/null) && kill -0 "$p" 2>/dev/null && procs=$((procs + 1))
    done
    [ $procs = 0 ] || bad="$bad $procs processes left;"
    echo "$t $n $kind $inj $victim $longest |$outcome |${bad:- ok}" >>"$results"
    if [ -n "$bad" ]; then
        status=1
        echo "campaign.sh: $t $n $kind $inj (victim $victim):$bad" >&2
        sed 's/^/    /' "$dir/job.out" | tail -n 8 >&2
        [ -n "$jobid" ] && find /dev/shm -maxdepth 1 \( -name "weft-$jobid-*" -o \
                                 -name "weft-shm-$jobid-*" \) -delete 2>/dev/null
    fi
    rm -rf "$dir"
}

for t in $transports; do
    if [ "$t" = ibv ] && [ ! -e "$b/tests/swrdma/.libs/libibverbs.so.1" ]; then
        echo "campaign.sh: ibv skipped: the software RDMA device is not built"; continue
    fi
    for n in $counts; do
        for kind in $kinds; do
            for inj in $injections; do
                times=1
                [ "$inj" = kill ] && times=$points
                i=0
                while [ $i -lt $times ]; do one_run "$t" "$n" "$kind" "$inj"; i=$((i + 1)); done
            done
        done
    done
done

# The matrix: one row per transport, ranks and injection.
echo
printf '%-8s %5s %-6s %5s  %-52s %s\n' transport ranks fault runs "outcomes (per surviving rank)" \
    "longest ms"
awk -F'|' '{ split($1, a, " "); key = a[1] " " a[2] " " a[4]; runs[key]++;
             if (a[6] > longest[key]) longest[key] = a[6];
             n = split($2, oc, " ");
             for (i = 1; i <= n; i++) { cnt[key, oc[i]]++; kinds[oc[i]] = 1 }
             if ($3 != " ok") badruns[key]++ }
     END { for (k in runs) { s = "";
             for (w in kinds) if (cnt[k, w]) s = s w "=" cnt[k, w] " ";
             split(k, a, " ");
             printf "%-8s %5s %-6s %5d  %-52s %s%s\n", a[1], a[2], a[3], runs[k], s, longest[k],
                    badruns[k] ? "  FAILED " badruns[k] : "" } }' "$results" | sort
total=$(wc -l <"$results")
failed=$(grep -vc '| ok$' "$results")
echo "campaign.sh: $total injections, $failed misbehaved"
rm -f "$results"
exit $status
