#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# slurm.sh: weft jobs under a real Slurm. As root, it starts munged, a
# slurmctld and two slurmd (two "nodes" of this machine, the second named
# after it with -b, both at 127.0.0.1) from a state folder of its own,
# then runs examples/hello:
#   srun -n 4                 weft reads Slurm's variables
#   srun -N 2 -n 4            the ranks on both nodes
#   srun --mpi=pmix -n 4      where this Slurm has the PMIx plugin
#   sbatch -N 2               a batch script running weftrun on each node
#                             (one srun task per node), 2 ranks each
# and checks that every rank of each job reports. It stops everything it
# started. Skipped, with the reason, where slurm-wlm or munge is absent,
# without root, or where the daemons do not come up (their logs shown).
set -u
top=${abs_top_builddir:?}
hello=$top/examples/hello
weftrun=$top/tools/weftrun
me=slurm.sh

skip() { echo "SKIP: $*"; exit 77; }
for c in slurmctld slurmd srun sbatch sinfo scontrol munged; do
    command -v $c >/dev/null 2>&1 || skip "$c not found (install slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || skip "starting Slurm's daemons needs root"
[ -x "$hello" ] && [ -x "$weftrun" ] || { echo "$me: build first (make)"; exit 99; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/weft-slurm.XXXXXX") || exit 99
chmod 755 "$dir"
host=$(hostname)
conf=$dir/slurm.conf
# Ports of this run's own, so that a Slurm of the machine is left alone.
base=$((20000 + $$ % 20000))
SLURM_CONF=$conf
export SLURM_CONF
WEFT_PLUGIN_PATH=$top/plugins/sockets/.libs:$top/plugins/shm/.libs
WEFT_TIMEOUT=60
export WEFT_PLUGIN_PATH WEFT_TIMEOUT

stop_all() {
    scontrol shutdown >/dev/null 2>&1
    sleep 1
    for f in "$dir"/*.pid; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
    sleep 0.5
    for f in "$dir"/*.pid; do
        [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
    done
    rm -rf "$dir"
}
trap stop_all EXIT
trap 'exit 1' INT TERM HUP

logs() {
    for f in "$dir"/log/*.log "$dir"/munged.log; do
        [ -f "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }
    done
}

mkdir -p "$dir/state" "$dir/log" "$dir/spool/$host" "$dir/spool/$host-b"
# A key of this run's own for munged (as root it must be told --force).
head -c 1024 /dev/urandom >"$dir/munge.key" && chmod 600 "$dir/munge.key"
munged --force -S "$dir/munge.socket" --key-file="$dir/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
    --seed-file="$dir/munge.seed" >/dev/null 2>&1 || { logs; skip "munged did not start"; }

cat >"$conf" <<EOF
ClusterName=weft
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$base
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 Port=$((base + 1)) CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
NodeName=$host-b NodeHostname=$host-b NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
PartitionName=weft Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF

slurmctld -f "$conf" -i >/dev/null 2>&1 || { logs; skip "slurmctld did not start"; }
slurmd -f "$conf" -N "$host" >/dev/null 2>&1 || { logs; skip "slurmd ($host) did not start"; }
slurmd -f "$conf" -N "$host-b" >/dev/null 2>&1 || { logs; skip "slurmd ($host-b) did not start"; }
waited=0
until [ "$(sinfo -h -o '%t %D' 2>/dev/null)" = "idle 2" ]; do
    waited=$((waited + 1))
    [ $waited -lt 60 ] || { sinfo; logs; skip "the two nodes did not become idle in 30 s"; }
    sleep 0.5
done
echo "$me: Slurm $(slurmctld -V | sed 's/slurm-wlm //') up: nodes $host and $host-b"

fail=0
# expect_ranks WHAT N FILE: every rank of N reported in FILE.
expect_ranks() {
    got=$(grep -c "^rank [0-9]* of $2 received" "$3")
    if [ "$got" = "$2" ]; then
        echo "ok: $1: $2 ranks"
    else
        echo "FAIL: $1: $got of $2 ranks reported:"
        sed 's/^/    /' "$3"
        fail=1
    fi
}

cd "$dir" || exit 99
timeout 120 srun -n 4 --overcommit "$hello" >srun1.out 2>&1
expect_ranks "srun -n 4" 4 srun1.out
timeout 120 srun -N 2 -n 4 --overcommit "$hello" >srun2.out 2>&1
expect_ranks "srun -N 2 -n 4" 4 srun2.out
if srun --mpi=list 2>&1 | grep -q pmix; then
    timeout 120 srun --mpi=pmix -n 4 --overcommit "$hello" >pmix.out 2>&1
    expect_ranks "srun --mpi=pmix -n 4" 4 pmix.out
else
    echo "skipped: srun --mpi=pmix (this Slurm has no PMIx plugin)"
fi

# The batch script of README and weftrun(1): one weftrun per node, node 0
# (the first of the allocation) hosts the store.
cat >job.sh <<EOF
#!/bin/sh
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH -o $dir/batch.out
first=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | head -n 1)
export WEFT_AUTH_TOKEN=\$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
srun sh -c 'exec "$weftrun" --nnodes "\$SLURM_NNODES" --node-rank "\$SLURM_NODEID" \\
    --master-addr "'"\$first"'" --master-port $((base + 3)) -n 2 "$hello"'
EOF
timeout 180 sbatch --wait job.sh >sbatch.out 2>&1 || { cat sbatch.out; echo "FAIL: sbatch --wait"; fail=1; }
[ -f batch.out ] && expect_ranks "sbatch -N 2, weftrun on each node" 4 batch.out
exit $fail
