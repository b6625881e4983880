# SPDX-License-Identifier: BSD-3-Clause
"""Every torch.distributed operation on backend "weft", checked against
answers each rank computes for itself. Run it with torchrun at any world
size; it exits 0 when every check passed and prints each failure."""
import os
import sys

import torch
import torch.distributed as dist

import torch_weft  # noqa: F401  (registers "weft")

failures = []


def check(name, got, want):
    if isinstance(want, torch.Tensor):
        ok = got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
    else:
        ok = got == want
    if not ok:
        failures.append("%s: got %r, want %r" % (name, got, want))


def expect_error(name, fn, words):
    try:
        fn()
    except RuntimeError as e:
        if not all(w in str(e) for w in words):
            failures.append("%s: error %r lacks %r" % (name, str(e), words))
        return
    failures.append("%s: no error" % name)


def data(rank, n, dtype):
    """Rank r's input: small values every dtype holds exactly."""
    if dtype == torch.bool:
        return (torch.arange(n) + rank) % 3 == 0
    if dtype.is_complex:
        return torch.complex(torch.arange(n, dtype=torch.float32) + rank,
                             -torch.arange(n, dtype=torch.float32)).to(dtype)
    return ((torch.arange(n) + rank) % 5 + 1).to(dtype)


def reduce_all(op, tensors):
    acc = tensors[0].clone()
    for t in tensors[1:]:
        if op == dist.ReduceOp.SUM:
            acc = acc | t if acc.dtype == torch.bool else acc + t
        elif op == dist.ReduceOp.PRODUCT:
            acc = acc & t if acc.dtype == torch.bool else acc * t
        elif op == dist.ReduceOp.MIN:
            acc = torch.minimum(acc, t)
        elif op == dist.ReduceOp.MAX:
            acc = torch.maximum(acc, t)
        elif op == dist.ReduceOp.BAND:
            acc = acc & t
        elif op == dist.ReduceOp.BOR:
            acc = acc | t
        elif op == dist.ReduceOp.BXOR:
            acc = acc ^ t
    return acc


def main():
    dist.init_process_group("weft")
    rank, size = dist.get_rank(), dist.get_world_size()
    check("backend", dist.get_backend(), "weft")
    n = 7
    ints = [torch.int8, torch.uint8, torch.int32, torch.int64]
    floats = [torch.float16, torch.bfloat16, torch.float32, torch.float64]

    # all_reduce and reduce: every operator on every dtype that has it.
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    bitwise = [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
    for dtype in ints + floats + [torch.bool]:
        for op in ops + (bitwise if not dtype.is_floating_point else []):
            want = reduce_all(op, [data(r, n, dtype) for r in range(size)])
            t = data(rank, n, dtype)
            dist.all_reduce(t, op=op)
            check("all_reduce %s %s" % (op, dtype), t, want)
            root = size - 1
            t = data(rank, n, dtype)
            dist.reduce(t, root, op=op)
            check("reduce %s %s" % (op, dtype), t, want if rank == root else data(rank, n, dtype))
    for dtype in ints + floats:
        t = data(rank, n, dtype)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        total = sum(data(r, n, torch.float64) for r in range(size))
        want = (total / size).to(dtype) if dtype.is_floating_point else \
            torch.div(total, size, rounding_mode="trunc").to(dtype)
        check("all_reduce AVG %s" % dtype, t, want)
    for dtype in [torch.float32, torch.float64]:
        t = data(rank, n, dtype)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
        check("all_reduce PREMUL_SUM %s" % dtype, t,
              sum(data(r, n, dtype) * 0.5 for r in range(size)))
    for dtype in [torch.complex64, torch.complex128]:
        t = data(rank, n, dtype)
        dist.all_reduce(t)
        check("all_reduce SUM %s" % dtype, t, sum(data(r, n, dtype) for r in range(size)))

    # A column of a matrix: not contiguous, written back in place.
    m = torch.arange(12, dtype=torch.float32).view(4, 3) + rank
    dist.all_reduce(m[:, 1])
    want = torch.arange(12, dtype=torch.float32).view(4, 3) + rank
    want[:, 1] = sum(torch.arange(12, dtype=torch.float32).view(4, 3)[:, 1] + r
                     for r in range(size))
    check("all_reduce of a column", m, want)

    # async_op: a work object whose wait() completes it, and its future.
    t = data(rank, n, torch.float32)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    work.wait()
    check("async all_reduce completed", work.is_completed(), True)
    check("async all_reduce", t, sum(data(r, n, torch.float32) for r in range(size)))
    check("async all_reduce future", fut.wait()[0], t)
    t = data(rank, n, torch.float32)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    check("future chained", fut.wait(), 2 * sum(data(r, n, torch.float32) for r in range(size)))

    # A callback that runs another collective and waits for it, as
    # communication hooks may: it runs on the thread that completed the
    # first, which must leave the queue free for the second.
    def again(f):
        x = f.value()[0]
        dist.all_reduce(x)
        return x
    t = data(rank, n, torch.float32)
    fut = dist.all_reduce(t, async_op=True).get_future().then(again)
    check("collective inside a callback", fut.wait(),
          size * sum(data(r, n, torch.float32) for r in range(size)))

    # all_reduce_coalesced
    ts = [data(rank, 3, torch.int64), data(rank, 5, torch.int64)]
    dist.all_reduce_coalesced(ts)
    check("all_reduce_coalesced", ts[1], sum(data(r, 5, torch.int64) for r in range(size)))

    # broadcast from every root, a column included.
    for root in range(size):
        t = data(rank, n, torch.int32)
        dist.broadcast(t, root)
        check("broadcast from %d" % root, t, data(root, n, torch.int32))
    m = torch.zeros(3, 4, dtype=torch.int16) + rank
    dist.broadcast(m[:, 2], 0)
    want = torch.zeros(3, 4, dtype=torch.int16) + rank
    want[:, 2] = 0
    check("broadcast of an int16 column", m, want)

    # all_gather, list and flat forms; uneven outputs; a view as input.
    outs = [torch.zeros(n, dtype=torch.float16) for _ in range(size)]
    dist.all_gather(outs, data(rank, n, torch.float16))
    for r in range(size):
        check("all_gather block %d" % r, outs[r], data(r, n, torch.float16))
    outs = [torch.zeros(r + 1, dtype=torch.int64) for r in range(size)]
    dist.all_gather(outs, torch.full((rank + 1,), rank, dtype=torch.int64))
    for r in range(size):
        check("uneven all_gather block %d" % r, outs[r], torch.full((r + 1,), r, dtype=torch.int64))
    whole = torch.zeros(size * n, dtype=torch.int32)
    dist.all_gather(list(whole.split(n)), data(rank, n, torch.int32))
    check("all_gather into the pieces of one tensor", whole,
          torch.cat([data(r, n, torch.int32) for r in range(size)]))
    whole = torch.zeros(size * n, dtype=torch.int32)
    pieces = list(whole.split(n))
    pieces[rank].copy_(data(rank, n, torch.int32))
    dist.all_gather(pieces, pieces[rank])
    check("all_gather in place", whole, torch.cat([data(r, n, torch.int32) for r in range(size)]))
    flat = torch.zeros(size * n, dtype=torch.bfloat16)
    dist.all_gather_into_tensor(flat, data(rank, n, torch.bfloat16))
    check("all_gather_into_tensor", flat, torch.cat([data(r, n, torch.bfloat16) for r in range(size)]))
    outs = [torch.zeros(2, dtype=torch.int8) for _ in range(size)]
    dist.all_gather(outs, torch.tensor([[rank, 0], [rank, 1]], dtype=torch.int8)[:, 0])
    check("all_gather of a column", outs[size - 1], torch.tensor([size - 1, size - 1], dtype=torch.int8))

    # gather and scatter at the last rank.
    root = size - 1
    gl = [torch.zeros(n, dtype=torch.float64) for _ in range(size)] if rank == root else None
    dist.gather(data(rank, n, torch.float64), gl, dst=root)
    if rank == root:
        for r in range(size):
            check("gather block %d" % r, gl[r], data(r, n, torch.float64))
    out = torch.zeros(n, dtype=torch.int64)
    sl = [data(r, n, torch.int64) * 10 for r in range(size)] if rank == root else None
    dist.scatter(out, sl, src=root)
    check("scatter", out, data(rank, n, torch.int64) * 10)

    # reduce_scatter, list and flat forms, and uneven blocks.
    out = torch.zeros(n, dtype=torch.float32)
    dist.reduce_scatter(out, [data(rank, n, torch.float32) + 100 * j for j in range(size)])
    check("reduce_scatter", out, sum(data(r, n, torch.float32) + 100 * rank for r in range(size)))
    out = torch.zeros(rank + 1, dtype=torch.int32)
    dist.reduce_scatter(out, [torch.full((j + 1,), rank + j, dtype=torch.int32) for j in range(size)])
    check("uneven reduce_scatter", out,
          torch.full((rank + 1,), sum(r + rank for r in range(size)), dtype=torch.int32))
    out = torch.zeros(n, dtype=torch.float64)
    dist.reduce_scatter_tensor(out, torch.cat([data(rank, n, torch.float64) * (j + 1) for j in range(size)]),
                               op=dist.ReduceOp.MAX)
    check("reduce_scatter_tensor MAX", out,
          reduce_all(dist.ReduceOp.MAX, [data(r, n, torch.float64) * (rank + 1) for r in range(size)]))

    # all_to_all_single, even and with uneven splits; all_to_all lists.
    inp = torch.arange(size * 2, dtype=torch.int64) + 100 * rank
    out = torch.zeros(size * 2, dtype=torch.int64)
    dist.all_to_all_single(out, inp)
    check("all_to_all_single", out,
          torch.cat([torch.arange(2 * rank, 2 * rank + 2) + 100 * r for r in range(size)]))
    # rank r sends j+1 rows to rank j; each row is 3 wide.
    in_splits = [j + 1 for j in range(size)]
    out_splits = [rank + 1] * size
    inp = torch.cat([torch.full((j + 1, 3), 10 * rank + j, dtype=torch.float32) for j in range(size)])
    out = torch.zeros(sum(out_splits), 3)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    check("uneven all_to_all_single", out,
          torch.cat([torch.full((rank + 1, 3), 10 * r + rank, dtype=torch.float32) for r in range(size)]))
    ins = [torch.full((j + 1,), 10 * rank + j, dtype=torch.uint8) for j in range(size)]
    outs = [torch.zeros(rank + 1, dtype=torch.uint8) for _ in range(size)]
    dist.all_to_all(outs, ins)
    for r in range(size):
        check("all_to_all from %d" % r, outs[r], torch.full((rank + 1,), 10 * r + rank, dtype=torch.uint8))

    # Point to point: a ring, blocking and not, and a batch.
    right, left = (rank + 1) % size, (rank - 1) % size
    if size > 1:
        buf = torch.zeros(n, dtype=torch.float32)
        if rank % 2 == 0:
            dist.send(data(rank, n, torch.float32), right, tag=3)
            dist.recv(buf, left, tag=3)
        else:
            dist.recv(buf, left, tag=3)
            dist.send(data(rank, n, torch.float32), right, tag=3)
        check("send/recv ring", buf, data(left, n, torch.float32))
        buf = torch.zeros(n, dtype=torch.int64)
        reqs = [dist.isend(data(rank, n, torch.int64), right), dist.irecv(buf, left)]
        for q in reqs:
            q.wait()
        check("isend/irecv ring", buf, data(left, n, torch.int64))
        buf = torch.zeros(n, dtype=torch.int32)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, data(rank, n, torch.int32), right),
                                       dist.P2POp(dist.irecv, buf, left)])
        for q in reqs:
            q.wait()
        check("batch_isend_irecv", buf, data(left, n, torch.int32))
        if rank == 0:
            got = set()
            for _ in range(size - 1):
                b = torch.zeros(1, dtype=torch.int64)
                got.add(dist.recv(b, tag=7))  # any source: returns the sender
                check("recv from any source", b.item() in range(1, size), True)
            check("senders to any source", got, set(range(1, size)))
        else:
            dist.send(torch.tensor([rank]), 0, tag=7)
        col = torch.zeros(4, 2)
        if rank == 0:
            dist.send(torch.arange(4.), 1)
        elif rank == 1:
            dist.recv(col[:, 1], 0)
            check("recv into a column", col[:, 1], torch.arange(4.))
        # A message shorter than the tensor is an error, as with gloo.
        short = dist.isend(torch.zeros(3), right, tag=9)
        expect_error("recv of the wrong size", lambda: dist.recv(torch.zeros(5), left, tag=9),
                     ["recv", "12 bytes to a tensor of 20"])
        short.wait()

    # Object collectives, built on the ones above.
    objs = [None] * size
    dist.all_gather_object(objs, {"rank": rank, "s": "x" * rank})
    check("all_gather_object", objs, [{"rank": r, "s": "x" * r} for r in range(size)])
    lst = [rank, "a"] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, 0)
    check("broadcast_object_list", lst, [0, "a"])
    got = [None] if rank == root else None
    gathered = [None] * size if rank == root else None
    dist.gather_object(("r", rank), gathered, dst=root)
    if rank == root:
        check("gather_object", gathered, [("r", r) for r in range(size)])
    got = [None]
    dist.scatter_object_list(got, [{"to": r} for r in range(size)] if rank == 0 else None, src=0)
    check("scatter_object_list", got[0], {"to": rank})

    # new_group: a sub-group of the even ranks, and one listed in reverse
    # order (torch sorts a group's ranks).
    evens = list(range(0, size, 2))
    g = dist.new_group(evens)
    rev = dist.new_group(list(reversed(range(size))))
    if rank in evens:
        t = torch.tensor([rank])
        dist.all_reduce(t, group=g)
        check("all_reduce in the even group", t.item(), sum(evens))
        check("even group size", dist.get_world_size(g), len(evens))
    t = torch.tensor([rank])
    dist.broadcast(t, src=size - 1, group=rev)
    check("broadcast in the reversed group", t.item(), size - 1)
    check("reversed group rank", dist.get_rank(rev), rank)

    # What weft refuses, with a reason.
    expect_error("BAND on float", lambda: dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND),
                 ["BAND", "integer"])
    expect_error("int16 sum", lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)),
                 ["cannot reduce", "Short"])
    expect_error("sparse tensor", lambda: dist.all_reduce(torch.ones(2).to_sparse()),
                 ["sparse"])
    expect_error("broadcast root", lambda: dist.broadcast(torch.ones(2), size),
                 ["root", str(size)])
    expect_error("all_gather_into_tensor size",
                 lambda: dist.all_gather_into_tensor(torch.zeros(size * 3 + 1), torch.ones(3)),
                 ["all_gather_into_tensor", "elements"])

    dist.barrier()
    # Every rank reports, so that one rank's failure is never hidden.
    for f in failures:
        print("rank %d: FAIL %s" % (rank, f), flush=True)
    print("rank %d: %d failures" % (rank, len(failures)), flush=True)
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
