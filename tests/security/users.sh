#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# users.sh: a job run as an unprivileged user works, and another user of
# the same machine can neither open its files in /dev/shm nor join its
# store. As root, it runs tests/security/mp_hold at 3 ranks as uid 65534
# (nobody) with setpriv, and while the job holds its files and store open,
# a process of uid 65533 tries every /dev/shm/weft-* file of the job's
# (each must be the job user's, mode 0600, and refuse the open) and the
# store (weft_init with the job's address and port and a guessed token
# must fail with "wrong job token"). Then the job finishes, with exit
# status 0, and leaves nothing in /dev/shm. Skipped (77) where not root,
# without setpriv, or where uid 65534 cannot reach the build tree.
set -u

b=${abs_top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
job_uid=65534
other_uid=65533
skip() { echo "users.sh: skipped: $*"; exit 77; }
fail() { echo "users.sh: FAIL: $*"; status=1; }

[ "$(id -u)" = 0 ] || skip "needs root to run processes as other users"
command -v setpriv >/dev/null 2>&1 || skip "setpriv (util-linux) is not installed"
as_job() { setpriv --reuid=$job_uid --regid=$job_uid --clear-groups "$@"; }
as_other() { setpriv --reuid=$other_uid --regid=$other_uid --clear-groups "$@"; }
as_job test -x "$b/tools/weftrun" -a -r "$b/tests/security/mp_hold" ||
    skip "uid $job_uid cannot reach the build tree $b (a parent folder closed to others?)"

status=0
dir=$(mktemp -d /tmp/weft-users.XXXXXX)
chown $job_uid:$job_uid "$dir"
chmod 0755 "$dir"
plugins="$b/plugins/shm/.libs:$b/plugins/sockets/.libs"
before=$(ls /dev/shm | grep -c '^weft-' || true)

as_job env -i PATH="$PATH" HOME=/ WEFT_PLUGIN_PATH="$plugins" WEFT_TEST_DIR="$dir" \
    WEFT_TIMEOUT=60 "$b/tools/weftrun" -n 3 "$b/tests/security/mp_hold" >"$dir.job" 2>&1 &
job=$!

waited=0
while [ ! -s "$dir/port" ]; do
    if ! kill -0 $job 2>/dev/null || [ $waited -ge 300 ]; then
        cat "$dir.job"
        touch "$dir/done"; wait $job
        rm -rf "$dir" "$dir.job"
        echo "users.sh: FAIL: the job as uid $job_uid did not start"
        exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
done
port=$(cat "$dir/port")

# The job's files: each must be the job user's, closed to others, and
# refuse another user's open.
files=$(find /dev/shm -maxdepth 1 -name 'weft-*' -uid $job_uid)
[ -n "$files" ] || fail "the job has no file in /dev/shm: nothing was tried"
nfiles=0
for f in $files; do
    nfiles=$((nfiles + 1))
    mode=$(stat -c %a "$f")
    [ "$mode" = 600 ] || fail "$f has mode $mode, not 600"
    # Read-write, as a peer would: a FIFO opened so does not block.
    if as_other sh -c ': <>"$1"' sh "$f" 2>/dev/null; then
        fail "uid $other_uid opened $f"
    fi
done
echo "users.sh: uid $other_uid was refused each of the job's $nfiles files in /dev/shm"

# The store: a stranger who knows where it is, without the job's token.
out=$(as_other env -i PATH="$PATH" HOME=/ WEFT_PLUGIN_PATH="$plugins" RANK=3 WORLD_SIZE=4 \
      LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
      WEFT_STORE_EXTERNAL=1 WEFT_AUTH_TOKEN=guessed WEFT_TIMEOUT=5 \
      "$b/examples/hello" 2>&1) && fail "a stranger's weft_init joined the job: $out"
case $out in
*"wrong job token"*) echo "users.sh: the store refused a stranger: wrong job token" ;;
*) fail "a stranger's weft_init failed for another reason: $out" ;;
esac

touch "$dir/done"
wait $job
rc=$?
[ $rc = 0 ] || { cat "$dir.job"; fail "the job as uid $job_uid exited with status $rc"; }
[ $rc = 0 ] && echo "users.sh: the job as uid $job_uid passed"
left=$(find /dev/shm -maxdepth 1 -name 'weft-*' -uid $job_uid)
[ -z "$left" ] || fail "left in /dev/shm: $left"
rm -rf "$dir" "$dir.job"
exit $status
