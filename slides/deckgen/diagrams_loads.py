"""The diagrams of labs 05-10 (no measurements): which thread loads which
element (two loads, grid stride, 16-byte vectors), the launches of labs 06 and
07, lab 10's passes, lab 08's identity and lab 09's shuffles."""

from __future__ import annotations

from .canvas import Canvas, fs
from .index_math import (
    grid_stride,
    shuffle_steps,
    tree_passes,
    tree_sequential,
    two_loads,
    vector_tiles,
)


class LoadDiagrams(Canvas):
    def who_two_loads(self) -> None:
        plt = self.plt
        T, n = 4, 13
        owner = two_loads(n, T)
        nb = (n + 2 * T - 1) // (2 * T)
        fig, ax = plt.subplots(figsize=fs(7.4, 2.8))
        for i in range(nb * 2 * T):
            if i in owner:
                b, t, k = owner[i]
                self.cell(
                    ax, i, 0, self.thread_colour(t, T), f"t{t}", hatch=None if k == 0 else ".."
                )
            else:
                self.cell(ax, i, 0, "white", "", hatch="xx", edge="0.7")
            ax.text(i + 0.47, -0.35, str(i), ha="center", fontsize=7, color="0.4")
        for b in range(nb):
            ax.plot([b * 2 * T - 0.03] * 2, [-0.2, 1.0], color="black", lw=1.5)
            ax.text(
                b * 2 * T + T,
                -0.75,
                f"block {b}: in[{b * 2 * T} .. {b * 2 * T + 2 * T})",
                ha="center",
                fontsize=8,
            )
            for t in range(T):
                px = b * 2 * T + T / 2 + t
                for k in (0, 1):
                    i = b * 2 * T + t + k * T
                    if i < n:
                        ax.plot(
                            [i + 0.47, px + 0.47],
                            [0.86, 2.45],
                            color=self.thread_colour(t, T),
                            lw=0.8,
                            alpha=0.7,
                        )
                has = b * 2 * T + t < n
                self.cell(
                    ax,
                    px,
                    2.45,
                    self.thread_colour(t, T) if has else "white",
                    f"t{t}" if has else "0",
                    fs=7,
                )
        ax.text(-0.4, 0.43, "in", ha="right", va="center", fontsize=8)
        ax.text(-0.4, 2.88, "partial[t]", ha="right", va="center", fontsize=8)
        ax.text(
            0,
            3.75,
            f"n = {n}; plain: first load, dotted: second load (t + {T}), crossed: past the end",
            ha="left",
            fontsize=8,
        )
        self.blank(ax, nb * 2 * T + 0.2, 4.0)
        ax.set_ylim(4.0, -1.1)
        ax.set_xlim(-2.6, nb * 2 * T + 0.2)
        ax.set_title(f"Blocks of {T} threads: thread t adds in[i] and in[i + {T}]", fontsize=10)
        self.save(fig, "who_05_two_loads_per_thread.png")

    def who_grid_stride(self) -> None:
        plt = self.plt
        blocks, T, n = 2, 8, 100
        G = blocks * T
        owner = grid_stride(n, blocks, T)
        rows = (n + G - 1) // G
        fig, ax = plt.subplots(figsize=fs(7.4, 0.32 * rows + 1.0))
        for i in range(rows * G):
            r, c = divmod(i, G)
            x = c + (0.4 if c >= T else 0)
            if i < n:
                b, t, kind, step = owner[i]
                self.cell(
                    ax,
                    x,
                    r,
                    self.thread_colour(b * T + t, G),
                    f"{i}",
                    fs=6.5,
                    hatch=None if kind == "step" else "..",
                )
            else:
                self.cell(ax, x, r, "white", "", edge="0.85")
        steps = max(v[3] for v in owner.values() if v[2] == "step") + 1
        for s in range(steps):
            ax.annotate(
                "",
                xy=(G + 0.7, s * 4 - 0.05),
                xytext=(G + 0.7, s * 4 + 3.9),
                arrowprops=dict(arrowstyle="-", color="0.3"),
            )
            ax.text(
                G + 0.9,
                s * 4 + 1.9,
                "one step: 4 loads\nin flight, then 4 adds",
                va="center",
                fontsize=8,
            )
        ax.text(
            G + 0.9,
            steps * 4 + (rows - steps * 4) / 2 - 0.1,
            "leftovers:\none at a time",
            va="center",
            fontsize=8,
        )
        for c in range(G):
            ax.text(
                c + (0.4 if c >= T else 0) + 0.47,
                -0.3,
                f"t{c % T}",
                ha="center",
                fontsize=7,
                color="0.3",
            )
        ax.text(T / 2, -0.85, "block 0", ha="center", fontsize=8)
        ax.text(T + 0.4 + T / 2, -0.85, "block 1", ha="center", fontsize=8)
        ax.set_xlim(-0.3, G + 4.5)
        ax.set_ylim(rows + 0.9, -1.3)
        ax.text(
            G / 2,
            rows + 0.1,
            "numbers: element index; colour: the thread that loads it; dotted: leftover loads",
            ha="center",
            va="top",
            fontsize=8,
        )
        ax.axis("off")
        ax.set_title(
            f"Grid-stride loop: {blocks} blocks x {T} threads (G = {G}), n = {n}", fontsize=10
        )
        self.save(fig, "who_06_grid_stride_shared.png")

    def atomic_timeline(self) -> None:
        plt = self.plt
        P = self.patches
        fig, ax = plt.subplots(figsize=fs(7.4, 2.6))

        def box(x, y, w, text, colour):
            ax.add_patch(P.Rectangle((x, y), w, 0.75, facecolor=colour, edgecolor="0.3"))
            ax.text(x + w / 2, y + 0.375, text, ha="center", va="center", fontsize=7)

        ax.text(-0.15, 2.07, "lab 06", ha="right", va="center", fontsize=8)
        box(
            0, 1.7, 5.0, "launch 1: the grid over the input\nblock b writes workspace[b]", "#cfe3f7"
        )
        box(5.3, 1.7, 3.0, "launch 2: one block\nworkspace -> *out", "#fde2c4")
        ax.text(-0.15, 0.47, "lab 07", ha="right", va="center", fontsize=8)
        box(0, 0.1, 1.5, "memset\n*out = 0", "#e6e6e6")
        box(
            1.8,
            0.1,
            5.0,
            "one launch: the grid over the input\nblock b: atomicAdd(out, total)",
            "#cfe3f7",
        )
        ax.annotate(
            "", xy=(8.3, 1.25), xytext=(0.0, 1.25), arrowprops=dict(arrowstyle="->", color="0.5")
        )
        ax.text(8.3, 1.0, "time on the stream", ha="right", va="center", fontsize=7, color="0.4")
        ax.set_xlim(-1.2, 8.5)
        ax.set_ylim(0.0, 2.6)
        ax.axis("off")
        ax.set_title("Two launches and a workspace, or a reset and one launch", fontsize=9)
        self.save(fig, "atomic_07_atomic_finish.png")

    def passes(self) -> None:
        plt = self.plt
        P = self.patches
        k = 27
        chain = tree_passes(1 << k)
        fig, ax = plt.subplots(figsize=fs(7.4, 2.3))
        w, gap = 2.2, 0.5
        m = 1 << k
        for j, blocks in enumerate(chain):
            x = j * (w + gap)
            last = blocks == 1
            ax.add_patch(
                P.FancyBboxPatch(
                    (x, 0),
                    w,
                    1.1,
                    boxstyle="round,pad=0.04",
                    facecolor="#fde2c4" if last else "#cfe3f7",
                    edgecolor="0.4",
                )
            )
            who = "host launch" if j == 0 else "tail launch\nby block 0"
            size = f"$2^{{{k}}}$" if m == 1 << k else f"{m:,}"
            ax.text(
                x + w / 2,
                0.55,
                f"pass {j + 1}: {size} in\n{blocks:,} block"
                f"{'s' if blocks > 1 else ''}\n"
                + ("writes *out" if last else f"{blocks:,} partials out"),
                ha="center",
                va="center",
                fontsize=7,
            )
            ax.text(x + w / 2, 1.3, who, ha="center", va="bottom", fontsize=7.5, color="0.3")
            if j:
                ax.annotate(
                    "",
                    xy=(x - 0.02, 0.55),
                    xytext=(x - gap + 0.02, 0.55),
                    arrowprops=dict(arrowstyle="->", color="0.3"),
                )
            m = blocks
        ax.set_xlim(-0.1, len(chain) * (w + gap))
        ax.set_ylim(-0.2, 2.0)
        ax.axis("off")
        ax.set_title(
            f"$2^{{{k}}}$ ints, 256 per block: {len(chain)} passes; only the first is "
            "launched by the host",
            fontsize=10,
        )
        self.save(fig, "passes_10_nested_dynamic.png")

    def identity_trees(self) -> None:
        plt = self.plt
        vals = [-3.0, -1.0, -2.0, -7.0, -5.0]
        T = 8

        def fmt(v):
            return "-inf" if v == float("-inf") else f"{v:g}"

        fig, axes = plt.subplots(1, 2, figsize=fs(7.4, 3.0))
        for ax, ident, good in ((axes[0], float("-inf"), True), (axes[1], 0.0, False)):
            for t in range(T):
                self.cell(ax, t, 0, "0.93", fmt(vals[t]) if t < len(vals) else "-", fs=7)
            # each thread: m = identity; then m = max(m, x) over its elements
            level = [max(ident, vals[t]) if t < len(vals) else ident for t in range(T)]
            rows = [level]
            for s, ops in tree_sequential(T):
                nxt = list(rows[-1])
                for t, d, sr in ops:
                    nxt[d] = max(nxt[d], nxt[sr])
                rows.append(nxt[:s])
            for r, row in enumerate(rows, start=1):
                for t, v in enumerate(row):
                    missing = r == 1 and t >= len(vals)
                    self.cell(
                        ax, t, r * 1.1 + 0.2, "#fde2c4" if missing else "#cfe3f7", fmt(v), fs=7
                    )
            ax.text(-0.2, -0.25, "input, then each thread's m", fontsize=8, va="bottom")
            res = rows[-1][0]
            ax.text(
                0,
                len(rows) * 1.1 + 1.3,
                f"max = {fmt(res)}  " + ("(right)" if good else "(wrong: 0 is not in the input)"),
                ha="left",
                va="top",
                fontsize=9,
                color="black" if good else "tab:red",
            )
            ax.set_title(
                f"float m = {'-INFINITY' if ident == float('-inf') else '0.0f'};",
                fontsize=10,
                family="monospace",
            )
            self.blank(ax, T, len(rows) * 1.1 + 1.5)
            ax.set_ylim(len(rows) * 1.1 + 1.5, -0.9)
        fig.suptitle(
            f"Max of {len(vals)} negative floats by {T} threads; threads "
            f"{len(vals)}-{T - 1} get no element (orange)",
            fontsize=10,
            y=1.04,
        )
        self.save(fig, "identity_08_max_reduction.png")

    def shuffle(self) -> None:
        plt = self.plt
        steps = list(shuffle_steps())
        fig, ax = plt.subplots(figsize=fs(7.4, 3.4))
        H = 1.5  # row pitch
        for lane in range(32):
            self.cell(ax, lane, 0, "tab:blue", str(lane), fs=6, tc="white")
        ax.text(-0.6, 0.4, "values", ha="right", va="center", fontsize=8)
        for r, (off, pairs) in enumerate(steps, start=1):
            y = r * H
            ax.text(-0.6, y + 0.4, f"offset {off}", ha="right", va="center", fontsize=8)
            for lane in range(32):
                on = lane < off
                self.cell(
                    ax,
                    lane,
                    y,
                    "tab:blue" if on else "0.93",
                    str(lane),
                    fs=6.5,
                    tc="white" if on else "0.55",
                )
            for d, src in pairs:
                if d < off:
                    ax.plot(
                        [src + 0.47, d + 0.47],
                        [y - H + 0.88, y - 0.02],
                        color="tab:blue",
                        lw=0.6,
                        alpha=0.8,
                    )
        ax.set_xlim(-3.6, 32.2)
        ax.set_ylim(len(steps) * H + 1.0, -0.4)
        ax.axis("off")
        ax.set_title(
            "Lane l adds lane l + offset; blue: lanes whose result reaches lane 0", fontsize=9
        )
        self.save(fig, "shuffle_09.png")

    def vector_layout(self) -> None:
        plt = self.plt
        P = self.patches
        T, loads, blocks, mis = 4, 2, 2, 1
        n = 3 + 4 * 20 + 2
        owner, head, tail = vector_tiles(n, mis, blocks, T, loads)
        tile_ints = 4 * T * loads
        lines = [("head", [None] * mis + list(range(head)))]
        tiles = {}
        for start in range(head, tail, tile_ints):
            idx = list(range(start, min(start + tile_ints, tail)))
            b, _, kind = owner[idx[0]]
            what = f"tile {tiles.setdefault(b, 0)}" if kind == "tile" else "rest"
            tiles[b] = tiles.get(b, 0) + 1
            lines.append((f"block {b}, {what}", idx))
        lines.append(("tail", list(range(tail, n))))
        fig, ax = plt.subplots(figsize=fs(7.4, 0.36 * len(lines) + 0.9))

        def colour(b, t):
            return plt.get_cmap("Blues" if b == 0 else "Oranges")(0.3 + 0.17 * t)

        for r, (label, idx) in enumerate(lines):
            y = r * 1.2
            ax.text(-0.6, y + 0.45, label, ha="right", va="center", fontsize=8)
            vector_row = label.startswith("block")
            c = 0
            while c < len(idx):
                x = c + 0.35 * (c // 4)
                i = idx[c]
                if i is None:
                    self.cell(ax, x, y, "white", "", edge="0.8")
                    c += 1
                elif vector_row:  # one 16-byte load: 4 ints, one thread
                    b, t, _ = owner[i]
                    ax.add_patch(
                        P.Rectangle(
                            (x, y), 3.94, 0.9, facecolor=colour(b, t), edgecolor="0.3", lw=0.8
                        )
                    )
                    for k in range(1, 4):  # the four ints of the vector: ticks
                        for y0, y1 in ((y, y + 0.18), (y + 0.72, y + 0.9)):
                            ax.plot([x + k] * 2, [y0, y1], color="white", lw=0.8)
                    ax.text(
                        x + 1.97,
                        y + 0.45,
                        f"t{t}",
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if t >= 2 else "black",
                    )
                    c += 4
                else:  # head or tail: one element per thread
                    b, t, _ = owner[i]
                    self.cell(ax, x, y, colour(b, t), f"{t}", hatch="xx", fs=7)
                    c += 1
            real = [i for i in idx if i is not None]
            end = len(idx) + 0.35 * ((len(idx) - 1) // 4) + 0.3
            ax.text(
                end, y + 0.45, f"in[{real[0]}..{real[-1]}]", va="center", fontsize=7, color="0.35"
            )
        ax.text(
            -0.6,
            len(lines) * 1.2 + 0.1,
            f"{T} threads per block, {loads} int4 loads each "
            f"in flight: a tile is {tile_ints} ints. Crossed: one element per thread.",
            ha="left",
            va="top",
            fontsize=8,
        )
        ax.set_xlim(-5.5, tile_ints + 0.35 * 7 + 4.5)
        ax.set_ylim(len(lines) * 1.2 + 0.8, -0.3)
        ax.axis("off")
        ax.set_title(
            f"Toy sizes: n = {n}, input starting {mis} element past a 16-byte "
            f"boundary; blue: block 0, orange: block 1",
            fontsize=9,
        )
        self.save(fig, "vectors_09.png")
