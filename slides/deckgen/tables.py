"""The results blocks the decks show between their markers, from the evidence:
each lab's bench by size, the "why" counters of its profile, its bandwidth test,
and the introduction's table of every lab; and the splice into a deck."""

from __future__ import annotations

import re

from . import float_sum
from .floor import floor_slide, over_floor
from .multi_gpu import lab12_block
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
    provenance,
    ratio,
    rel,
)

BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"
INTRO = "00_intro"


def bench_table(ev: Evidence, lab: Lab, bench: Bench) -> list[str]:
    prev = previous_bench(ev, lab, bench)
    me = lab_name(lab.id)
    head = ["elements", f"{me} GB/s", "CUB GB/s", f"{me} / CUB"]
    if prev:
        head.append(f"{me} / {lab_name(prev[0].id)}")
    head.append("time / floor")
    rows = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for s in bench.sizes:
        cells = [
            f"$2^{{{s.log2n}}}$",
            gb(s.gbps) if s.gbps is not None else s.status,
            gb(s.cub_gbps),
            ratio(s.gbps, s.cub_gbps),
        ]
        if prev:
            p = prev[1].at(s.log2n)
            cells.append(ratio(s.gbps, p.gbps if p else None))
        cells.append(over_floor(s))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def profile_lines(ev: Evidence, lab: Lab) -> list[str]:
    """Why, measured: the counters `grader profile` shows for this lab, this lab's
    reference beside the previous one's, from the committed profile run."""
    run = ev.profile.profiles if ev.profile else {}
    if not run or not ev.profile:
        return []
    from grader.commands import profile as gp

    course = ev.course
    glab = course.lab(lab.id)
    keys = ["time_us", "dram_pct"] + [k for k in glab.profile if k not in ("time_us", "dram_pct")]
    out = []
    for name in gp.bench_names(glab):
        mine = run.get(name)
        if not mine or not mine.get("metrics"):
            continue
        prev = gp.previous_bench(
            course,
            glab,
            lambda b: gp.contract_of(course, b),
            lambda i: gp.bench_names(course.lab(i)),
            name,
        )
        other = run.get(prev) if prev else None
        cols = [(lab_name(lab.id) + (f" {name.rsplit('-', 1)[1]}" if name != lab.id else ""), mine)]
        if other and other.get("metrics"):
            cols.append(
                (lab_name(prev) + (f" {prev.rsplit('-', 1)[1]}" if prev.count("-") else ""), other)
            )
        log2n = ev.profile.log2n
        out += [
            f"## Measured: why (Nsight Compute{', ' + name.rsplit('-', 1)[1] if name != lab.id else ''})",
            "",
            f"One call on $2^{{{log2n}}}$ elements under `ncu`, reference solutions; "
            f"`python3 -m grader profile {lab.id.split('_', 1)[0]}` puts yours beside them. "
            f"{ev.profile.machine.gpu}, commit `{ev.profile.machine.commit[:7]}`.",
            "",
            "| counter | " + " | ".join(t for t, _ in cols) + " |",
            "| --- |" + " ---: |" * len(cols),
        ]
        for k in keys:
            m = gp.METRICS[k]
            cells = []
            for _, p in cols:
                v = p["metrics"].get(k)
                cells.append("-" if v is None else f"{v:,.{m.digits}f}")
            out.append(f"| {m.label} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def test_case_lines(lab: Lab) -> list[str]:
    sc = lab.score
    lines = []
    cases = lab.cases or [{}]
    n = int(cases[0]["n"]) if cases[0].get("n") else None
    if n:
        k = n.bit_length() - 1
        size = f"$2^{{{k}}}$" if n == 1 << k else f"{n:,}"
        lines.append(
            f"- Input: {size} elements ({n:,}; {n * 4 / 2**20:,.0f} MiB), each call reads it once"
        )
    for case in cases:
        name = case.get("_name", "")
        what = (
            (
                "int sum: "
                if name.startswith("Sum")
                else "float max: "
                if name.startswith("Max")
                else ""
            )
            if len(cases) > 1
            else ""
        )
        g = as_float(case.get("gbps")) or (sc.gbps if sc else None)
        ceil = as_float(case.get("ceiling_gbps")) or (sc.ceiling_gbps if sc else None)
        theo = as_float(case.get("theoretical_gbps"))
        frac = as_float(case.get("fraction")) or lab.fraction
        line = f"- {what.capitalize()}**{gb(g)} GB/s**; copy in the same process {gb(ceil)} GB/s"
        if frac is not None:
            line += f"; fraction **{frac:.3f}**"
        if theo and g:
            line += f"; {100 * g / theo:.1f}% of the theoretical {gb(theo)} GB/s"
        lines.append(line)
    frac = lab.fraction
    if frac is not None:
        verdict = "meets" if frac >= lab.threshold else "misses"
        lines.append(
            f"- Graded fraction {frac:.3f}{' (the lower of the two)' if len(cases) > 1 else ''}"
            f": it {verdict} the threshold {lab.threshold:g} (floor {lab.floor:g})"
        )
    if sc:
        lines.append(
            f"- Correctness: {sc.tests_passed} of {sc.tests_passed + sc.tests_failed} tests passed"
        )
    return lines


def missing_block(ev: Evidence, lab: Lab) -> str:
    if lab.meta.spans_gpus:
        # Lab 12 spans GPUs: gpucheck (one GPU) does not run it.
        return "\n".join(lab12_block())
    return "\n".join(
        [
            f"## Measured on the {ev.gpu}",
            "",
            f"The evidence file `{rel(ev.path)}` (commit `{ev.commit}`, {ev.date}) has no "
            f"run of {lab_name(lab.id)}: it was recorded before this lab was added, or the lab "
            "did not run. To fill in this slide, on a GPU machine:",
            "",
            "```",
            "python3 -m grader gpucheck --out DIR",
            "python3 slides/make_figures.py DIR/gpucheck.json",
            "```",
        ]
    )


def host_block(ev: Evidence, lab: Lab) -> str:
    case = lab.cases[0] if lab.cases else {}
    ceil = as_float(case.get("ceiling_gbps"))
    threads = case.get("host_threads", "?")
    rows = ["| function | GB/s | of the memcpy |", "| --- | ---: | ---: |"]
    for key, what in (
        ("sequential", "`sum_sequential` (one loop)"),
        ("pairwise", "`sum_pairwise` (halving)"),
        ("", f"`sum_threads` ({threads} threads)"),
    ):
        g = as_float(case.get(f"{key}_gbps" if key else "gbps"))
        rows.append(
            f"| {what} | {gb(g) if g is None or g >= 100 else f'{g:.1f}'} | {ratio(g, ceil)} |"
        )
    n = int(case.get("n", 0))
    passed, failed = (lab.score.tests_passed, lab.score.tests_failed) if lab.score else (0, 0)
    return "\n".join(
        [
            f"## Measured on the host of the {ev.gpu} machine",
            "",
            f"{int(n):,} ints ({n * 4 / 2**20:,.0f} MiB); a {threads}-thread `memcpy` of the "
            f"same size reaches {ceil:.1f} GB/s (bytes read + written). {provenance(ev)}",
            "",
            *rows,
            "",
            f"The threshold applies to `sum_threads`: {lab.threshold:g} of the memcpy "
            f"(floor {lab.floor:g}). Correctness: {passed} of {passed + failed} tests passed.",
            "",
            "## Measured: the three functions against the copy",
            "",
            f"![GB/s of the three CPU sums against a multithreaded memcpy]"
            f"(figures/ceiling_{lab.id}.png)",
        ]
    )


def lab_block(ev: Evidence, lab: Lab) -> str:
    if not lab.present:
        return missing_block(ev, lab)
    if lab.kind == "cpu_sum":
        return host_block(ev, lab)
    out = []
    for b in lab.benches:
        what = CONTRACT_WORDS.get(b.contract, b.contract)
        cub = CUB_NAMES.get(b.contract, "CUB")
        where = (
            "in the same process" if b.cub_same_process else "by the CUB peer bench of the same run"
        )
        extra = f", {what}" if len(lab.benches) > 1 else ""
        who = " (compensated method)" if lab.kind == "gpu_float_sum" else ""
        out += [
            f"## Measured{extra}: GB/s by input size",
            "",
            f"Reference solution{who} on the {provenance(ev)} GB/s of input read; {cub} "
            f"measured {where}; time / floor: the lab's time over the least a call can cost "
            "(deck 00).",
            "",
            *bench_table(ev, lab, b),
            "",
        ]
        out += [
            f"## Measured{extra}: against CUB",
            "",
            f"![{lab_name(lab.id)} and CUB, GB/s against input size](figures/bw_{b.slug}.png)",
            "",
        ]
    if not lab.benches:
        out += [f"## Measured on the {ev.gpu}", "", "This run has no bench of this lab.", ""]
    if lab.kind == "gpu_float_sum":
        out += float_sum.float_sum_block(ev, lab)
    out += profile_lines(ev, lab)
    out += [
        "## Measured: the bandwidth test",
        "",
        *test_case_lines(lab),
        "",
        "## Measured: against the copy ceiling",
        "",
        f"![{lab_name(lab.id)} and the labs before it, as a fraction of the copy ceiling]"
        f"(figures/ceiling_{lab.id}.png)",
    ]
    return "\n".join(out).rstrip()


STEP_SIZES = (16, 20, 24, 28)


def first_gpu_lab(ev: Evidence) -> str:
    """The lab every step is multiplied back to: the course's first GPU lab, which
    builds on none (labs.toml's order and builds_on say which; lab 02 today)."""
    return next(
        (lab.id for lab in ev.labs if lab.meta.needs_gpu and not lab.meta.builds_on), ev.labs[0].id
    )


def steps_table(ev: Evidence) -> list[str]:
    """What each lab bought over the lab it builds on (builds_on), by size, from
    the bench (both in one process per lab, three rounds in turn); the last
    column multiplies the steps back to the first GPU lab's int sum."""
    benches = {(lab.id, b.contract): b for lab in ev.labs for b in lab.benches}
    first = first_gpu_lab(ev)
    base = benches.get((first, "sum"))
    head = " | ".join(f"$2^{{{k}}}$" for k in STEP_SIZES)
    rows = [
        f"| lab | over | {head} | over {lab_name(first)}, $2^{{28}}$ |",
        "| --- | --- |" + " ---: |" * (len(STEP_SIZES) + 1),
    ]

    def ratio(a: Bench | None, b: Bench | None, k: int) -> str:
        x, y = (a.at(k) if a else None), (b.at(k) if b else None)
        return f"{x.gbps / y.gbps:.2f}" if x and y and x.gbps and y.gbps else "-"

    for lab in ev.labs:
        for b in lab.benches:
            prev_id = lab.previous(b.contract)
            if not prev_id:
                continue
            prev = benches.get((prev_id, b.contract)) or next(
                (x for (i, _), x in benches.items() if i == prev_id), None
            )
            name = f"{lab.num}" + (f" {b.contract}" if len(lab.benches) > 1 else "")
            cells = " | ".join(ratio(b, prev, k) for k in STEP_SIZES)
            rows.append(f"| {name} | {prev_id[:2]} | {cells} | {ratio(b, base, 28)} |")
    return rows


def graded_case_words(lab: Lab) -> str:
    """A lab graded on two bandwidth tests (lab 09: int sum and float max)
    shows the lower one's figures: say which, so that a title such as "beat
    CUB" is not read as the sum's figure when it is the max's. Empty for a
    lab with one test."""
    cases = [c for c in lab.cases if as_float(c.get("fraction")) is not None]
    if len(cases) < 2:
        return ""
    low = min(cases, key=lambda c: as_float(c.get("fraction")) or 0.0)
    what = "float max" if str(low.get("_name", "")).startswith("Max") else "int sum"
    return (
        f"Lab {lab.num}: the figures of its {what}, the lower of its {len(cases)} "
        f"bandwidth tests (deck {lab.num} has both)."
    )


def intro_block(ev: Evidence) -> str:
    rows = [
        "| lab | technique | GB/s | of the copy | threshold | of theoretical |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    n = None
    for lab in ev.labs:
        sc = lab.score
        if lab.meta.spans_gpus:
            continue  # lab 12: no one-GPU bandwidth test; its deck says where its figures are
        if not lab.present:
            rows.append(f"| {lab.num} | {lab.title} | not in this run | | {lab.threshold:g} | |")
            continue
        case = lab.cases[0] if lab.cases else {}
        theo = as_float(case.get("theoretical_gbps"))
        g = sc.gbps if sc else None
        if lab.kind != "cpu_sum" and case.get("n"):
            n = int(case["n"])
        frac = lab.fraction
        rows.append(
            f"| {lab.num} | {lab.title}{' (CPU)' if lab.kind == 'cpu_sum' else ''} | "
            f"{gb(g)} | {'-' if frac is None else f'{frac:.3f}'} | {lab.threshold:g} | "
            f"{'-' if not theo or g is None else f'{100 * g / theo:.1f}%'} |"
        )
    size = f"{n:,} elements ({n * 4 / 2**20:,.0f} MiB of 4-byte values)" if n else "the test size"
    return "\n".join(
        [
            f"## Measured: every lab on the {ev.gpu}",
            "",
            f"The bandwidth test of each reference solution, {size}. {provenance(ev)}",
            "",
            *rows,
            "",
            *[w + "\n" for w in (graded_case_words(lab) for lab in ev.labs if lab.present) if w],
            "## Measured: what each step bought",
            "",
            "GB/s of each lab over the lab it builds on, by input size, from the bench "
            "(in one process, three rounds in turn); the last column multiplies the steps "
            f"back to {lab_name(first_gpu_lab(ev))}. Below 1: the step costs at that size.",
            "",
            *steps_table(ev),
            "",
            *floor_slide(ev),
            "## Measured: bandwidth against input size",
            "",
            "![Every GPU lab and CUB, GB/s against input size](figures/overview_bw.png)",
            "",
            "## Measured: fraction of the copy ceiling",
            "",
            "![Every lab as a fraction of the copy ceiling, with its threshold]"
            "(figures/overview_fraction.png)",
        ]
    )


def blocks(ev: Evidence) -> dict[str, str]:
    """Deck stem -> the text that belongs between the markers."""
    out = {INTRO: intro_block(ev)}
    for lab in ev.labs:
        out[lab.id] = lab_block(ev, lab)
    return out


def splice(text: str, block: str) -> str:
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"needs exactly one {BEGIN} ... {END}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{block}\n\n{END}{tail}"


FIGURE_RE = re.compile(r"!\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^)\s]+)\)")  # alt text may hold [..]


def figures_named(text: str) -> list[str]:
    return FIGURE_RE.findall(text)
