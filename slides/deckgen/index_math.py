"""The kernels' index arithmetic, in Python: the diagrams are drawn from these,
so a picture shows what the code does, not what a drawing says it does."""

from __future__ import annotations


def tree_interleaved(T: int):
    """Lab 02: for s = 1, 2, ...: if tid % (2*s) == 0: p[tid] += p[tid + s]."""
    s = 1
    while s < T:
        yield s, [(t, t, t + s) for t in range(T) if t % (2 * s) == 0]
        s *= 2


def tree_strided(T: int):
    """Lab 03: index = 2*s*tid; if index < blockDim: p[index] += p[index + s]."""
    s = 1
    while s < T:
        yield s, [(t, 2 * s * t, 2 * s * t + s) for t in range(T) if 2 * s * t < T]
        s *= 2


def tree_sequential(T: int):
    """Lab 04 on: for s = blockDim/2 down to 1: if tid < s: p[tid] += p[tid + s]."""
    s = T // 2
    while s > 0:
        yield s, [(t, t, t + s) for t in range(T) if t < s]
        s //= 2


# A lab's tree shape (labs.toml `tree`) -> who adds what at each step.
TREE_SHAPES = {
    "interleaved": tree_interleaved,
    "strided": tree_strided,
    "sequential": tree_sequential,
}


def warps_issuing(tree, T: int = 256, warp: int = 32) -> list[int]:
    return [len({t // warp for t, _, _ in ops}) for _, ops in tree(T)]


def bank_load(tree, T: int = 256, banks: int = 32, warp: int = 32):
    """Per step: threads of warp 0 per bank (left operand), and the conflict degree."""
    out = []
    for s, ops in tree(T):
        count = [0] * banks
        for t, dst, _ in ops:
            if t < warp:
                count[dst % banks] += 1
        out.append((s, count, max(count)))
    return out


def two_loads(n: int, T: int):
    """Lab 05: i = b*2T + t; in[i] and in[i + T] go to block b's partial[t]."""
    owner = {}
    for b in range((n + 2 * T - 1) // (2 * T)):
        for t in range(T):
            i = b * 2 * T + t
            if i < n:
                owner[i] = (b, t, 0)
            if i + T < n:
                owner[i + T] = (b, t, 1)
    return owner


def grid_stride(n: int, blocks: int, T: int, loads: int = 4):
    """Labs 06-08: i = b*T + t, stride G; steps of four loads, then leftovers."""
    stride = blocks * T
    owner = {}
    for b in range(blocks):
        for t in range(T):
            i, step = b * T + t, 0
            while i + (loads - 1) * stride < n:
                for k in range(loads):
                    owner[i + k * stride] = (b, t, "step", step)
                i += loads * stride
                step += 1
            while i < n:
                owner[i] = (b, t, "leftover", step)
                i += stride
    return owner


def vector_tiles(n: int, misaligned: int, blocks: int, T: int, loads: int):
    """Lab 09: head to the 16-byte boundary, each block a contiguous share of
    whole 4-element vectors read a tile (T*loads vectors) at a time, a tail."""
    head = min(4 - misaligned, n) if misaligned else 0
    vectors = (n - head) // 4
    tail = head + vectors * 4
    tile = T * loads
    tiles_per_block = (((vectors + tile - 1) // tile) + blocks - 1) // blocks
    owner = {}
    for b in range(blocks):
        begin = b * tiles_per_block * tile
        end = min(begin + tiles_per_block * tile, vectors)
        base = begin
        while base + tile <= end:
            for k in range(loads):
                for t in range(T):
                    v = base + k * T + t
                    for e in range(4):
                        owner[head + 4 * v + e] = (b, t, "tile")
            base += tile
        for t in range(T):
            v = base + t
            while v < end:
                for e in range(4):
                    owner[head + 4 * v + e] = (b, t, "rest")
                v += T
        for t in range(T):
            g = b * T + t
            if g < head:
                owner[g] = (b, t, "head")
            if g < n - tail:
                owner[tail + g] = (b, t, "tail")
    return owner, head, tail


def tree_passes(n: int, per_block: int = 256) -> list[int]:
    """Labs 02-05 and 10: blocks of each pass; pass k+1 reduces pass k's partials."""
    out = []
    while True:
        blocks = (n + per_block - 1) // per_block
        out.append(blocks)
        if blocks == 1:
            return out
        n = blocks


def shuffle_steps(lanes: int = 32):
    """warp_reduce: for offset = 16 .. 1: v = op(v, __shfl_down_sync(mask, v, offset))."""
    off = lanes // 2
    while off > 0:
        yield off, [(lane, lane + off) for lane in range(lanes) if lane + off < lanes]
        off //= 2
