"""What every figure shares: matplotlib set up once, a figure saved only when its
bytes change (so a rebuild leaves the committed PNGs alone), and the cells and
colours the diagrams are drawn with."""

from __future__ import annotations

import io
from pathlib import Path

SIZES = list(range(16, 31, 2))  # log2 n of the benches: 2^16 .. 2^30
DPI = 130
# Figures are drawn for a 16:9 beamer frame (about 5.8 x 2.7 inches under a
# title) and shown there at their natural size; fs() scales the sizes below,
# which were laid out 7.3 inches wide.
SCALE = 5.8 / 7.3


def fs(w: float, h: float) -> tuple[float, float]:
    return (w * SCALE, h * SCALE)


class Canvas:
    def __init__(self, out_dir: Path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import patches

        self.plt, self.patches = plt, patches
        plt.rcParams.update(
            {
                "font.size": 10,
                "axes.titlesize": 11,
                "figure.dpi": DPI,
                "savefig.dpi": DPI,
                "axes.spines.top": False,
                "axes.spines.right": False,
                "svg.hashsalt": "slides",
            }
        )
        self.out = out_dir
        self.out.mkdir(parents=True, exist_ok=True)
        self.written: list[Path] = []

    def save(self, fig, name: str) -> None:
        buf = io.BytesIO()
        fig.savefig(
            buf,
            format="png",
            dpi=DPI,
            metadata={"Software": None},
            bbox_inches="tight",
            pad_inches=0.08,
        )
        self.plt.close(fig)
        path = self.out / name
        data = buf.getvalue()
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        self.written.append(path)

    def thread_colour(self, t: int, T: int):
        cmap = self.plt.get_cmap("tab20" if T > 10 else "tab10")
        return cmap(t % cmap.N)

    def cell(
        self,
        ax,
        x,
        y,
        colour="white",
        text="",
        hatch=None,
        edge="0.5",
        tc="black",
        fs=7,
        w=1.0,
        h=1.0,
    ):
        ax.add_patch(
            self.patches.Rectangle(
                (x, y), w * 0.94, h * 0.86, facecolor=colour, edgecolor=edge, hatch=hatch, lw=0.8
            )
        )
        if text:
            ax.text(
                x + w * 0.47, y + h * 0.43, text, ha="center", va="center", fontsize=fs, color=tc
            )

    def blank(self, ax, xmax, ymax):
        ax.set_xlim(-0.2, xmax)
        ax.set_ylim(ymax, -0.6)
        ax.axis("off")

    def size_axis(self, ax):
        ax.set_xticks(SIZES, [f"$2^{{{k}}}$" for k in SIZES])
        ax.set_xlabel("input size (elements)")
        ax.set_ylabel("GB/s of input read")
        ax.grid(alpha=0.3)
