"""The diagrams of the first labs (no measurements): a reduction tree, how
parallelism shrinks, the memory hierarchy, and for labs 02-04 who adds what,
which warps are busy and which shared-memory banks collide; lab 01's halving."""

from __future__ import annotations

from .canvas import Canvas, fs
from .index_math import TREE_SHAPES, bank_load, warps_issuing
from grader import labmeta

from .view import Evidence, lab_name


class TreeDiagrams(Canvas):
    def reduction_tree(self) -> None:
        plt = self.plt
        N = 16
        fig, ax = plt.subplots(figsize=fs(7.2, 3.3))
        vals = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]
        level = [(i + 0.5, v) for i, v in enumerate(vals)]
        y = 0
        for x, v in level:
            ax.add_patch(self.patches.Circle((x, y), 0.32, facecolor="0.92", edgecolor="0.4"))
            ax.text(x, y, str(v), ha="center", va="center", fontsize=8)
        step = 0
        while len(level) > 1:
            step += 1
            nxt = []
            for j in range(0, len(level), 2):
                (xa, va), (xb, vb) = level[j], level[j + 1]
                x = (xa + xb) / 2
                nxt.append((x, va + vb))
                for xc in (xa, xb):
                    ax.plot([xc, x], [y + 0.32, y + 1 - 0.34], color="0.5", lw=0.8)
                ax.add_patch(
                    self.patches.Circle(
                        (x, y + 1),
                        0.34,
                        facecolor="tab:blue",
                        edgecolor="none",
                        alpha=0.25 + 0.15 * step,
                    )
                )
                ax.text(x, y + 1, str(va + vb), ha="center", va="center", fontsize=8)
            y += 1
            ax.text(
                N + 0.4,
                y,
                f"step {step}: {len(nxt)} addition{'s' if len(nxt) > 1 else ''}",
                va="center",
                fontsize=9,
            )
            level = nxt
        ax.text(N + 0.4, 0, "16 inputs", va="center", fontsize=9)
        ax.set_xlim(0, N + 3.6)
        ax.set_ylim(-0.6, y + 0.6)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(f"A reduction tree: {N - 1} additions in log2({N}) = {step} steps")
        self.save(fig, "tree.png")

    def parallelism(self) -> None:
        plt = self.plt
        k = 20
        N = 1 << k
        ops = [N >> s for s in range(1, k + 1)]
        fig, ax = plt.subplots(figsize=fs(7.2, 3.0))
        ax.bar(range(1, k + 1), ops, color="tab:blue")
        ax.set_yscale("log", base=2)
        avg = (N - 1) / k
        ax.axhline(avg, color="tab:red", ls="--")
        ax.text(
            k + 0.4,
            avg * 1.5,
            f"average (N-1)/log2 N = {avg:,.0f}",
            color="tab:red",
            va="bottom",
            ha="right",
            fontsize=8,
        )
        ax.text(1.6, ops[0], f"peak N/2 = {ops[0]:,}", fontsize=8, va="center")
        ax.set_xlim(0, k + 1)
        ax.set_xticks(range(1, k + 1, 1), [str(i) for i in range(1, k + 1)], fontsize=8)
        ax.set_xlabel("step")
        ax.set_ylabel("additions in the step")
        ax.set_title(f"N = $2^{{{k}}}$ inputs: {N - 1:,} additions in {k} steps")
        self.save(fig, "parallelism.png")

    def memory(self, ev: Evidence) -> None:
        plt = self.plt
        fig, ax = plt.subplots(figsize=fs(7.4, 3.1))
        P = self.patches
        # Two SMs, each with registers, shared memory and L1; one L2; HBM.
        for i, x0 in enumerate((0.2, 4.0)):
            ax.add_patch(
                P.FancyBboxPatch(
                    (x0, 1.3),
                    3.4,
                    2.5,
                    boxstyle="round,pad=0.05",
                    facecolor="0.96",
                    edgecolor="0.5",
                )
            )
            ax.text(
                x0 + 0.1,
                3.6,
                "SM 0" if i == 0 else "SM 1, 2, ... (all alike)",
                fontsize=7,
                va="center",
            )
            ax.add_patch(
                P.Rectangle((x0 + 0.15, 2.55), 3.1, 0.8, facecolor="#cfe3f7", edgecolor="0.4")
            )
            ax.text(x0 + 1.7, 2.95, "registers: per thread", ha="center", va="center", fontsize=7)
            ax.add_patch(
                P.Rectangle((x0 + 0.15, 1.45), 1.5, 0.95, facecolor="#fde2c4", edgecolor="0.4")
            )
            ax.text(
                x0 + 0.9,
                1.92,
                "shared mem.\nper block\n32 banks",
                ha="center",
                va="center",
                fontsize=6.5,
            )
            ax.add_patch(
                P.Rectangle((x0 + 1.75, 1.45), 1.5, 0.95, facecolor="#e6e6e6", edgecolor="0.4")
            )
            ax.text(x0 + 2.5, 1.92, "L1 cache\nautomatic", ha="center", va="center", fontsize=6.5)
        ax.add_patch(P.Rectangle((0.2, 0.55), 7.2, 0.55, facecolor="#d9d9d9", edgecolor="0.4"))
        ax.text(
            3.8,
            0.82,
            "L2 cache: whole GPU, automatic (60 MiB on the H200)",
            ha="center",
            va="center",
            fontsize=7,
        )
        mem = ev.memory if ev.memory != "?" else ""
        ax.add_patch(P.Rectangle((0.2, -0.3), 7.2, 0.6, facecolor="#c7e9c0", edgecolor="0.4"))
        ax.text(
            3.8,
            0.0,
            "global memory (HBM" + (f", {mem}" if mem else "") + "): every thread, every block",
            ha="center",
            va="center",
            fontsize=7,
        )
        ax.annotate(
            "", xy=(8.0, 3.6), xytext=(8.0, -0.2), arrowprops=dict(arrowstyle="<->", color="0.3")
        )
        ax.text(8.1, 3.3, "faster,\nsmaller,\ncloser", fontsize=7, va="top")
        ax.text(8.1, 0.3, "slower,\nlarger,\nshared", fontsize=7, va="bottom")
        ax.set_xlim(0, 9.0)
        ax.set_ylim(-0.45, 3.95)
        ax.axis("off")
        self.save(fig, "memory.png")

    def who_tree(self, lab: labmeta.Lab) -> None:
        plt = self.plt
        lab_id, name, tree = lab.id, lab.title.lower(), TREE_SHAPES[lab.tree]
        T = 16
        steps = list(tree(T))
        fig, ax = plt.subplots(figsize=fs(7.2, 0.62 * len(steps) + 1.0))
        for r, (s, ops) in enumerate(steps):
            y = r * 1.4
            ax.text(-0.3, y + 0.43, f"s = {s}", ha="right", va="center", fontsize=8)
            dst = {d: t for t, d, _ in ops}
            src = {sr: t for t, _, sr in ops}
            for e in range(T):
                if e in dst:
                    self.cell(ax, e, y, self.thread_colour(dst[e], T), f"t{dst[e]}", tc="black")
                elif e in src:
                    self.cell(
                        ax, e, y, "white", "", hatch="///", edge=self.thread_colour(src[e], T)
                    )
                else:
                    self.cell(ax, e, y, "0.93", "", edge="0.8")
            for t, d, sr in ops:
                ax.annotate(
                    "",
                    xy=(d + 0.47, y - 0.02),
                    xytext=(sr + 0.47, y - 0.02),
                    arrowprops=dict(
                        arrowstyle="->",
                        color=self.thread_colour(t, T),
                        lw=1.1,
                        connectionstyle="arc3,rad=0.35",
                    ),
                )
        for e in range(T):
            ax.text(
                e + 0.47,
                (len(steps) - 1) * 1.4 + 1.3,
                str(e),
                ha="center",
                va="top",
                fontsize=7,
                color="0.4",
            )
        ax.text(
            T / 2,
            len(steps) * 1.4 + 0.55,
            "partial[ ] index  (filled: thread that adds and writes; hatched: element it reads)",
            ha="center",
            va="top",
            fontsize=8,
        )
        ax.set_xlim(-1.6, T + 0.2)
        ax.set_ylim(len(steps) * 1.4 + 1.2, -1.7 if lab.tree == "sequential" else -0.9)
        ax.axis("off")
        ax.set_title(f"{lab_name(lab_id).capitalize()}, {name}: one block of {T} threads")
        self.save(fig, f"who_{lab_id}.png")

    def activity(self, lab: labmeta.Lab) -> None:
        plt = self.plt
        import numpy as np

        lab_id, tree = lab.id, TREE_SHAPES[lab.tree]
        T, W = 256, 32
        steps = list(tree(T))
        img = np.zeros((len(steps), T))
        for r, (_, ops) in enumerate(steps):
            for t, _, _ in ops:
                img[r, t] = 1
        fig, ax = plt.subplots(figsize=fs(7.4, 2.5))
        ax.imshow(img, aspect="auto", cmap="Blues", vmin=0, vmax=1.3, interpolation="nearest")
        for w in range(0, T + 1, W):
            ax.axvline(w - 0.5, color="0.3", lw=0.8)
        warps = warps_issuing(tree, T, W)
        ax.set_yticks(range(len(steps)), [f"s = {s}" for s, _ in steps], fontsize=8)
        ax.set_xticks(
            [w * W + W / 2 for w in range(T // W)], [f"warp {w}" for w in range(T // W)], fontsize=8
        )
        ax.tick_params(length=0)
        for r, k in enumerate(warps):
            ax.text(T + 3, r, f"{k} warp{'s' if k != 1 else ''}", va="center", fontsize=8)
        ax.set_xlim(-0.5, T + 40)
        ax.set_title(
            f"{lab_name(lab_id).capitalize()}: busy threads (blue) of a 256-thread block"
            f"\nand the warps that issue the add: {sum(warps)} warp-steps in all",
            fontsize=10,
        )
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        self.save(fig, f"activity_{lab_id}.png")

    def banks(self, lab: labmeta.Lab) -> None:
        plt = self.plt
        import numpy as np

        lab_id, tree = lab.id, TREE_SHAPES[lab.tree]
        rows = bank_load(tree)
        img = np.array([c for _, c, _ in rows], dtype=float)
        fig, ax = plt.subplots(figsize=fs(7.4, 2.6))
        ax.imshow(img, aspect="auto", cmap="Reds", vmin=0, vmax=10, interpolation="nearest")
        for r, (_, c, _) in enumerate(rows):
            for b, k in enumerate(c):
                if k:
                    ax.text(b, r, str(k), ha="center", va="center", fontsize=7)
        for r, (_, _, deg) in enumerate(rows):
            ax.text(
                32.2,
                r,
                f"{deg}-way" if deg > 1 else ("conflict-free" if deg else "idle"),
                va="center",
                fontsize=8,
                color="tab:red" if deg > 1 else "black",
            )
        ax.set_yticks(range(len(rows)), [f"s = {s}" for s, _, _ in rows], fontsize=8)
        ax.set_xticks(range(0, 32, 4), [str(b) for b in range(0, 32, 4)], fontsize=8)
        ax.set_xlabel("shared-memory bank (word % 32)")
        ax.set_xlim(-0.5, 37)
        ax.set_title(f"{lab_name(lab_id).capitalize()}: threads of warp 0 per bank, each step")
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        self.save(fig, f"banks_{lab_id}.png")

    def pairwise(self) -> None:
        plt = self.plt
        data = [5, 2, 7, 1, 3, 4, 6]
        fig, ax = plt.subplots(figsize=fs(7.2, 2.4))
        size, r = len(data), 0
        d = list(data)
        while True:
            for i in range(size):
                self.cell(ax, i, r * 1.3, "#cfe3f7", str(d[i]), fs=8)
            ax.text(-0.4, r * 1.3 + 0.43, f"size {size}", ha="right", va="center", fontsize=8)
            if size == 1:
                break
            half = size // 2
            for i in range(half):
                ax.annotate(
                    "",
                    xy=(i + 0.47, r * 1.3 + 1.25),
                    xytext=(i + half + 0.47, r * 1.3 + 0.9),
                    arrowprops=dict(arrowstyle="->", color="tab:blue", lw=0.8),
                )
                d[i] += d[i + half]
            if size % 2:
                ax.annotate(
                    "",
                    xy=(0.3, r * 1.3 + 1.25),
                    xytext=(size - 1 + 0.47, r * 1.3 + 0.9),
                    arrowprops=dict(arrowstyle="->", color="tab:red", lw=1.0),
                )
                d[0] += d[size - 1]
            size = half
            r += 1
        ax.text(
            len(data) + 0.5,
            1.0,
            "data[i] += data[i + size/2]\nred: an odd size carries "
            "its last\nelement over (or loses it)",
            fontsize=8,
            va="center",
        )
        self.blank(ax, len(data) + 5, r * 1.3 + 1.0)
        ax.set_xlim(-2.0, len(data) + 5)
        ax.set_title(f"halve_in_place on {len(data)} ints: sum {sum(data)}")
        self.save(fig, "who_01_cpu_baseline.png")
