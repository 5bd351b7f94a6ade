"""The measured plots: each lab's bench against CUB, each lab against the copy
ceiling, lab 01 on the host, lab 11's accuracy and sort-first study, and the
two overviews. Every number comes from the evidence (view.Evidence)."""

from __future__ import annotations

from .canvas import Canvas, fs
from .float_sum import (
    ACCURACY_LIMIT,
    FLOAT_INPUTS,
    FLOAT_METHODS,
    JUDGED_METHODS,
    ORDERS,
    accuracy_of_run,
    sort_study,
)
from .view import (
    CONTRACT_WORDS,
    CUB_NAMES,
    Bench,
    Evidence,
    Lab,
    as_float,
    gb,
    lab_name,
    previous_bench,
)

LINE_STYLES = {"sum": "-", "max": "-.", "float sum": ":"}  # the overview plot, by contract


class MeasuredPlots(Canvas):
    def bench_plot(self, ev: Evidence, lab: Lab, b: Bench) -> None:
        plt = self.plt
        fig, ax = plt.subplots(figsize=fs(7.2, 3.5))
        xs = [s.log2n for s in b.sizes]
        prev = previous_bench(ev, lab, b)
        if prev:
            ax.plot(
                [s.log2n for s in prev[1].sizes],
                [s.gbps for s in prev[1].sizes],
                "-",
                color="0.65",
                marker=".",
                label=f"{lab_name(prev[0].id)}: {prev[0].short}",
            )
        ax.plot(
            xs,
            [s.cub_gbps for s in b.sizes],
            "--s",
            color="tab:orange",
            ms=4,
            label=CUB_NAMES.get(b.contract, "CUB").replace("`", "").replace(" DeviceReduce::", " "),
        )
        ax.plot(
            xs,
            [s.gbps for s in b.sizes],
            "-o",
            color="tab:blue",
            ms=5,
            lw=2,
            label=f"{lab_name(lab.id)}: {lab.short}",
        )
        if any(s.floor_gbps for s in b.sizes):
            ax.plot(
                xs,
                [s.floor_gbps for s in b.sizes],
                ":",
                color="tab:red",
                lw=1.2,
                label="the floor as GB/s: the larger of an empty launch and the bytes at peak speed",
            )
        if b.ceiling_gbps:
            ax.axhline(b.ceiling_gbps, color="tab:green", ls=":", lw=1.5)
            ax.text(
                16,
                b.ceiling_gbps,
                f"copy ceiling {gb(b.ceiling_gbps)}",
                va="bottom",
                fontsize=8,
                color="tab:green",
            )
        if b.theoretical_gbps:
            ax.axhline(b.theoretical_gbps, color="0.4", ls=":", lw=1)
            ax.text(
                16,
                b.theoretical_gbps,
                f"theoretical {gb(b.theoretical_gbps)}",
                va="bottom",
                fontsize=8,
                color="0.4",
            )
        last = b.sizes[-1]
        if last.gbps:
            ax.annotate(
                gb(last.gbps),
                (last.log2n, last.gbps),
                textcoords="offset points",
                xytext=(-8, 6),
                ha="right",
                fontsize=8,
                color="tab:blue",
            )
        top = max(
            [b.theoretical_gbps or 0, b.ceiling_gbps or 0]
            + [s.gbps or 0 for s in b.sizes]
            + [s.cub_gbps or 0 for s in b.sizes]
        )
        ax.set_ylim(0, top * 1.12)
        self.size_axis(ax)
        what = CONTRACT_WORDS.get(b.contract, b.contract)
        ax.set_title(f"{lab_name(lab.id)} ({what}) on the {ev.gpu}")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.8), frameon=False)
        self.save(fig, f"bw_{b.slug}.png")

    def ceiling_plot(self, ev: Evidence, lab: Lab) -> None:
        plt = self.plt
        upto = [x for x in ev.labs if x.present and x.kind != "cpu_sum" and x.fraction is not None]
        upto = [x for x in upto if x.num <= lab.num]
        fig, ax = plt.subplots(figsize=fs(7.2, 0.3 * len(upto) + 0.9))
        names = [f"{x.num} {x.title}" for x in upto]
        fr = [float(x.fraction or 0) for x in upto]
        cols = ["tab:blue" if x.id == lab.id else "0.75" for x in upto]
        ys = range(len(upto))
        ax.barh(ys, fr, color=cols, height=0.6)
        for y, x, f in zip(ys, upto, fr):
            ax.text(
                f + 0.01,
                y,
                f"{f:.3f}  ({gb(x.score.gbps if x.score else None)} GB/s)",
                va="center",
                fontsize=8,
            )
            ax.plot([x.threshold] * 2, [y - 0.38, y + 0.38], color="tab:red", lw=2)
        ax.axvline(1.0, color="tab:green", ls=":")
        ax.text(1.0, -0.8, " copy ceiling", color="tab:green", fontsize=8, va="center")
        ax.set_yticks(list(ys), names, fontsize=8)
        ax.set_ylim(len(upto) - 0.5, -1.1)
        ax.set_xlim(0, 1.35)
        ax.set_xlabel("bandwidth test: fraction of a device-to-device copy (red: threshold)")
        ax.set_title(f"{lab_name(lab.id)} and the labs before it, {ev.gpu}")
        self.save(fig, f"ceiling_{lab.id}.png")

    def host_plot(self, ev: Evidence, lab: Lab) -> None:
        plt = self.plt
        case = lab.cases[0] if lab.cases else {}
        ceil = as_float(case.get("ceiling_gbps")) or 1.0
        threads = case.get("host_threads", "?")
        names = [
            "sum_sequential\n(one loop)",
            "sum_pairwise\n(halving)",
            f"sum_threads\n({threads} threads)",
        ]
        vals = [as_float(case.get(k)) or 0 for k in ("sequential_gbps", "pairwise_gbps", "gbps")]
        fig, ax = plt.subplots(figsize=fs(7.2, 2.6))
        ax.barh(range(3), vals, color=["0.7", "0.7", "tab:blue"], height=0.6)
        for y, v in enumerate(vals):
            ax.text(
                v + ceil * 0.01,
                y,
                f"{v:.1f} GB/s ({v / ceil:.2f} of the copy)",
                va="center",
                fontsize=8,
            )
        ax.axvline(ceil, color="tab:green", ls=":")
        ax.text(ceil, 0.5, f" memcpy {ceil:.1f} GB/s", color="tab:green", fontsize=8, va="center")
        ax.axvline(lab.threshold * ceil, color="tab:red", lw=1.5)
        ax.text(
            lab.threshold * ceil,
            1.5,
            f" threshold {lab.threshold:g}",
            color="tab:red",
            fontsize=8,
            va="center",
        )
        ax.set_yticks(range(3), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, max(vals + [ceil]) * 1.45)
        ax.set_xlabel("GB/s of input read, $2^{26}$ ints")
        ax.set_title(f"Lab 01 on the host of the {ev.gpu} machine")
        self.save(fig, f"ceiling_{lab.id}.png")

    def accuracy_plot(self, ev: Evidence, lab: Lab) -> None:
        acc = accuracy_of_run(lab)
        if not acc:
            return
        plt = self.plt
        fig, ax = plt.subplots(figsize=fs(7.2, 3.3))
        colours = dict(zip(FLOAT_METHODS, ("tab:gray", "tab:orange", "tab:blue", "tab:green")))
        ax.axhspan(2, 4, color="tab:red", alpha=0.12, lw=0)
        ax.text(
            2.62,
            2.8,
            "limit of kahan and double:\n$2^{-22}$ relative = 2 to 4 ulps",
            fontsize=7,
            color="tab:red",
            va="center",
            ha="right",
        )
        ax.axhline(0.5, color="0.4", ls=":", lw=1)
        ax.text(
            2.62,
            0.42,
            "below 0.5: correctly rounded",
            fontsize=7,
            color="0.35",
            va="top",
            ha="right",
        )
        values = []
        for g, inp in enumerate(FLOAT_INPUTS):
            for j, m in enumerate(FLOAT_METHODS):
                u, r = acc.errors.get((m, inp), (None, None))
                u = as_float(u)
                if u is None:
                    continue
                u = max(u, 1e-3)
                values.append(u)
                over = m in JUDGED_METHODS and r is not None and r > ACCURACY_LIMIT
                ax.plot(
                    [g + (j - 1.5) * 0.17],
                    [u],
                    "o",
                    color=colours[m],
                    ms=6,
                    mec="tab:red" if over else "white",
                    mew=1.5 if over else 0.5,
                )
        ax.set_yscale("log")
        ax.set_ylim(min(values + [0.01]) / 2, max(values + [4]) * 2.5)
        ax.set_xlim(-0.5, 2.65)
        ax.set_xticks(range(len(FLOAT_INPUTS)), FLOAT_INPUTS)
        ax.set_ylabel("error, ulps of the exact sum")
        ax.grid(alpha=0.3, axis="y")
        handles = [
            plt.Line2D([], [], ls="", marker="o", color=colours[m], label=m) for m in FLOAT_METHODS
        ]
        ax.legend(
            handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False
        )
        ax.set_title(f"{lab_name(lab.id)}: $2^{{24}}$ elements per input, {ev.gpu}", fontsize=10)
        self.save(fig, f"accuracy_{lab.id}.png")

    def sort_first_plot(self, ev: Evidence) -> None:
        st = sort_study(ev)
        if not st:
            return
        plt = self.plt
        fig, ax = plt.subplots(figsize=fs(7.2, 3.1))
        colours = dict(zip(ORDERS, ("tab:orange", "tab:blue")))
        ax.axhline(0.5, color="0.4", ls=":", lw=1)
        values = []
        for j, m in enumerate(FLOAT_METHODS):
            for k, order in enumerate(ORDERS):
                us = [max(float(r[f"{order}_ulps"][m]), 1e-3) for r in st["accuracy"]]
                values += us
                xs = [j + (k - 0.5) * 0.3 + (i - (len(us) - 1) / 2) * 0.025 for i in range(len(us))]
                ax.plot(xs, us, "o", color=colours[order], ms=4.5, mec="white", mew=0.4)
            for r in st["accuracy"]:  # each seed: shuffled -> sorted
                a, b = (max(float(r[f"{o}_ulps"][m]), 1e-3) for o in ORDERS)
                ax.plot([j - 0.15, j + 0.15], [a, b], color="0.6", lw=0.5, zorder=0)
        ax.set_yscale("log")
        ax.set_ylim(min(values + [0.01]) / 2, max(values + [4]) * 2)
        ax.set_xticks(range(len(FLOAT_METHODS)), FLOAT_METHODS)
        ax.set_xlim(-0.5, 3.5)
        ax.set_ylabel("error, ulps of the exact sum")
        ax.grid(alpha=0.3, axis="y")
        handles = [
            plt.Line2D(
                [],
                [],
                ls="",
                marker="o",
                color=colours[o],
                label=f"{o}{' by magnitude' if o == 'sorted' else ''}",
            )
            for o in ORDERS
        ]
        handles.append(
            plt.Line2D([], [], ls=":", color="0.4", label="0.5: correctly rounded below")
        )
        ax.legend(handles=handles, fontsize=7, loc="upper right", frameon=False)
        ax.set_title(
            f"Same $2^{{24}}$ floats in two orders, {len(st['accuracy'])} seeds, {ev.gpu}",
            fontsize=10,
        )
        self.save(fig, "accuracy_sort_first.png")

    def overview(self, ev: Evidence) -> None:
        plt = self.plt
        fig, ax = plt.subplots(figsize=fs(7.4, 3.7))
        palette = [
            "tab:blue",
            "tab:green",
            "tab:red",
            "tab:purple",
            "tab:brown",
            "tab:pink",
            "tab:gray",
            "tab:olive",
            "tab:cyan",
            "black",
        ]
        gpu = [x for x in ev.labs if x.benches]
        cub = None
        for i, lab in enumerate(gpu):
            for b in lab.benches:
                ls = LINE_STYLES.get(b.contract, "-.")
                ax.plot(
                    [s.log2n for s in b.sizes],
                    [s.gbps for s in b.sizes],
                    ls,
                    marker=".",
                    color=palette[i % len(palette)],
                    label=f"{lab.num} {lab.short if lab.meta and lab.meta.short else lab.title[:20]}"
                    + (" (max)" if b.contract == "max" and lab.kind != "gpu_max" else ""),
                )
                if b.contract == "sum" and cub is None:
                    cub = b
        if cub:
            ax.plot(
                [s.log2n for s in cub.sizes],
                [s.cub_gbps for s in cub.sizes],
                "--",
                color="tab:orange",
                lw=2,
                label="CUB (int sum)",
            )
        self.size_axis(ax)
        ax.legend(
            fontsize=7,
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            frameon=False,
            handlelength=1.8,
        )
        styled = {b.contract for x in gpu for b in x.benches} - {"sum"}
        ax.set_title(
            f"Reference solutions on the {ev.gpu}"
            + (
                " ("
                + ", ".join(
                    f"{'dash-dot' if c == 'max' else 'dotted'}: {CONTRACT_WORDS.get(c, c)}"
                    for c in sorted(styled)
                )
                + ")"
                if styled
                else ""
            )
        )
        self.save(fig, "overview_bw.png")

        labs = [x for x in ev.labs if x.present and x.fraction is not None]
        fig, ax = plt.subplots(figsize=fs(7.4, 0.26 * len(labs) + 0.8))
        ys = range(len(labs))
        fr = [float(x.fraction or 0) for x in labs]
        ax.barh(
            ys,
            fr,
            height=0.6,
            color=["tab:gray" if x.kind == "cpu_sum" else "tab:blue" for x in labs],
        )
        for y, x, f in zip(ys, labs, fr):
            ax.plot([x.threshold] * 2, [y - 0.38, y + 0.38], color="tab:red", lw=2)
            ax.text(f + 0.01, y, f"{f:.3f}", va="center", fontsize=8)
        ax.axvline(1.0, color="tab:green", ls=":")
        ax.set_yticks(list(ys), [f"{x.num} {x.title}" for x in labs], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.3)
        ax.set_xlabel("fraction of the copy ceiling (lab 01: host memcpy); red: threshold")
        ax.set_title("The bandwidth test of every lab")
        self.save(fig, "overview_fraction.png")

    # ---- diagrams (no measurements) ----
