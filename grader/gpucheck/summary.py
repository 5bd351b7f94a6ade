"""The short table gpucheck prints last, from a GpuCheck record: one row a lab,
then CUB, the studies, the suites and the script parts in a line each. Read
from the record alone, so that `gpucheck --merge` prints it for runs made
elsewhere, and apart from the driver that makes them."""

from __future__ import annotations

from .. import labmeta
from ..infra.evidence import GpuCheck
from .bench import floor_lines
from .scripts import PART_FIELDS, SCRIPT_PARTS


def course_beats_cub(lab_id: str) -> bool:
    try:
        return labmeta.load().lab(lab_id).beats_cub
    except KeyError:
        return False


def summary_table(ev: GpuCheck) -> str:
    lines = [
        f"GPU: {'; '.join(ev.machine.nvidia_smi)}  commit {ev.machine.commit}"
        f"  parts {','.join(ev.parts or [])}"
    ]
    labs = ev.labs or {}
    if labs:
        lines.append(
            f"{'lab':28} {'solution':>10} {'skeleton':>16} {'fraction':>9} "
            f"{'thresh':>7} {'sanitizer':>10} {'2^28 GB/s':>10} {'anchor':>7}"
        )
    for lab_id, e in labs.items():
        cells = []
        if e.solutions and e.labs:
            sol, skel = e.solutions.score, e.labs.score
            hint = skel.first_failure.hint if skel.first_failure else ""
            cells += [
                f"{sol.tests_passed}/{sol.tests_passed + sol.tests_failed}",
                f"fails:{hint}" if skel.tests_failed else "PASSES?!",
                "-" if sol.fraction is None else f"{sol.fraction:.3f}",
                f"{sol.threshold:.3f}",
            ]
        else:
            cells += ["", "", "", ""]
        cells.append(f"{e.sanitizer.seconds:.0f} s" if e.sanitizer else "")
        r = e.anchors.sizes.get(28) if e.anchors else None
        cells += [f"{r.gbps:.0f}" if r else "-", f"{r.anchor:.0f}" if r else "-"]
        lines.append(
            f"{lab_id:28} "
            + " ".join(f"{c:>{w}}" for c, w in zip(cells, (10, 16, 9, 7, 10, 10, 7)))
        )
    for lab_id, e in labs.items():
        for name, v in e.vs_cub.items():
            if course_beats_cub(lab_id):
                lines.append(
                    f"{name}: lowest ratio to CUB {v.lowest_ratio}, at or above CUB "
                    f"at every size: {v.at_or_above_cub_at_every_size}"
                    + (
                        ""
                        if e.bench[name].contract == "sum"
                        else " (float max: reported, not required)"
                    )
                )
    lines += floor_lines({n: b for e in labs.values() for n, b in e.bench.items()})
    for name, st in (ev.studies or {}).items():
        lines.append(
            f"{name}: exit {st.exit_code}; " + (st.output.strip().splitlines() or [""])[-1]
        )
    if ev.meson_suites:
        s = ev.meson_suites
        lines.append(
            f"meson suites skeletons/mutants/peers/harness: {len(s.passed)} passed, "
            f"{len(s.failed)} failed, {len(s.skipped)} skipped"
            + (f" (failed: {', '.join(s.failed)})" if s.failed else "")
        )
    for part in SCRIPT_PARTS:
        run = getattr(ev, PART_FIELDS.get(part, part))
        if run:
            lines.append(
                f"{part}: exit {run.exit_code} in {run.seconds:.0f} s; "
                + (run.output.strip().splitlines() or [""])[-1]
            )
    return "\n".join(lines)
