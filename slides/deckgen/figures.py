"""Every figure of the decks, drawn in one pass (make_figures.py calls `all`)."""

from __future__ import annotations

from .diagrams_loads import LoadDiagrams
from .diagrams_trees import TreeDiagrams
from .measured import MeasuredPlots
from .view import Evidence


class Figures(MeasuredPlots, TreeDiagrams, LoadDiagrams):
    def all(self, ev: Evidence) -> None:
        self.reduction_tree()
        self.parallelism()
        self.memory(ev)
        self.pairwise()
        for meta in ev.course.labs:
            if meta.tree:  # labs 02-04: one block's tree, drawn from its shape
                self.who_tree(meta)
                self.activity(meta)
                self.banks(meta)
        self.who_two_loads()
        self.who_grid_stride()
        self.atomic_timeline()
        self.identity_trees()
        self.passes()
        self.shuffle()
        self.vector_layout()
        self.overview(ev)
        for lab in ev.labs:
            if not lab.present:
                continue
            if lab.kind == "cpu_sum":
                self.host_plot(ev, lab)
                continue
            for b in lab.benches:
                self.bench_plot(ev, lab, b)
            if lab.kind == "gpu_float_sum":
                self.accuracy_plot(ev, lab)
                self.sort_first_plot(ev)
            if lab.fraction is not None:
                self.ceiling_plot(ev, lab)
        # Measured figures of labs this run does not have would be stale.
        for p in self.out.glob("*.png"):
            if p.name.startswith(("bw_", "ceiling_", "accuracy_")) and p not in self.written:
                p.unlink()
