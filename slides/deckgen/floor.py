"""How close each reference comes to the floor of a call, from the evidence: the
column of each lab's bench table and the introduction's slide. A claim such as
"within 1.10x of the floor" is computed from the run, with the sizes it holds
at, and a floor that a timed call beats is shown as beaten, never hidden."""

from __future__ import annotations

from .view import Bench, Evidence, Point, lab_name, ratio

NEAR = 1.10  # near the floor: a call within this factor of the least it can cost
FLOOR_WORDS = (
    "the larger of an empty kernel's launch, timed with the calls in the same "
    "batches, and the input read once at the theoretical bandwidth"
)


def over_floor(s: Point) -> str:
    """A call's time over its floor ('-' where there is no figure)."""
    return ratio(s.floor_gbps, s.gbps)  # GB/s are bytes over time: time / floor


def _times(b: Bench) -> list[tuple[int, float]]:
    return [(s.log2n, s.floor_gbps / s.gbps) for s in b.sizes if s.floor_gbps and s.gbps]


def _sizes(ks: list[int]) -> str:
    return ", ".join(f"$2^{{{k}}}$" for k in ks) or "no size"


def beaten(ev: Evidence) -> list[str]:
    """'lab 09 sum at 2^20 (lab)' for every size where a timed call beat the floor."""
    out = []
    for lab in ev.labs:
        for b in lab.benches:
            for k, who in sorted((b.run.floor_check() or {}).items()):
                if who:
                    out.append(f"{b.label} at $2^{{{k}}}$ ({' and '.join(who)})")
    return out


def floor_slide(ev: Evidence) -> list[str]:
    """The introduction's slide: each bench's least and most time over the floor,
    and the sizes where it is within NEAR of it."""
    rows = [
        f"| reference | least | at | most | at | within {NEAR:.2f}x at |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for lab in ev.labs:
        for b in lab.benches:
            times = _times(b)
            if not times:
                continue
            lo, hi = min(times, key=lambda t: t[1]), max(times, key=lambda t: t[1])
            name = lab_name(lab.id) + (f" {b.contract}" if len(lab.benches) > 1 else "")
            near = _sizes([k for k, t in times if t <= NEAR])
            rows.append(
                f"| {name} | {lo[1]:.2f} | $2^{{{lo[0]}}}$ | {hi[1]:.2f} | $2^{{{hi[0]}}}$ "
                f"| {near} |"
            )
    if len(rows) == 2:
        return []
    broken = beaten(ev)
    verdict = (
        f"The floor is beaten, so it is no lower bound there: {'; '.join(broken)}."
        if broken
        else "No timed call of this run, reference or CUB, is below its floor."
    )
    if any(b.run.floor_below_all is None for lab in ev.labs for b in lab.benches if _times(b)):
        verdict += (
            " This run is older than that rule: its floor is re-read from its own launch and"
            " bytes figures, its empty kernel timed in batches of its own length."
        )
    return [
        "## Measured: how close to the floor",
        "",
        f"A call's time over its floor, the least a call can cost: {FLOOR_WORDS}. {verdict}",
        "",
        *rows,
        "",
    ]
