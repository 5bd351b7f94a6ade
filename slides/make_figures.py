#!/usr/bin/env python3
"""Figures and results tables of the slides, from one gpucheck run.

    python3 slides/make_figures.py [GPUCHECK_JSON]        figures + tables
    python3 slides/make_figures.py [GPUCHECK_JSON] --tables-only
    python3 slides/make_figures.py [GPUCHECK_JSON] --check

GPUCHECK_JSON defaults to tests/gpu_runs/h200/gpucheck.json (what
`python3 -m grader gpucheck --out DIR` writes). Point it at another GPU's run
and every measured number in the decks follows.

What it writes:
  - slides/figures/*.png: bandwidth against input size per lab with CUB beside
    it (bw_*), each lab against the copy ceiling (ceiling_*), two overview
    plots (overview_*), lab 11's accuracy by method and input (accuracy_*:
    the run's accuracy tests, and the run's sort-first study), and diagrams
    drawn from the kernels' index arithmetic (tree, parallelism, memory,
    who_*, activity_*, banks_*, shuffle, ...). The
    diagrams do not depend on the JSON.
  - in every deck (slides/NN_name.md), the text between
    `<!-- results:begin -->` and `<!-- results:end -->`, and nothing else.

--tables-only rewrites the tables without matplotlib. --check rewrites
nothing: it exits 1 if a deck's tables differ from what the JSON gives, or a
deck names a figure that does not exist.
"""
from __future__ import annotations

import argparse
import io
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

SLIDES = Path(__file__).resolve().parent
REPO = SLIDES.parent
sys.path.insert(0, str(REPO))
from grader import labmeta  # noqa: E402  (the course file's one reader)

DEFAULT_JSON = REPO / "tests" / "gpu_runs" / "h200" / "gpucheck.json"
LABS_TOML = REPO / "grader" / "labs.toml"

BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"
INTRO = "00_intro"
SIZES = list(range(16, 31, 2))  # log2 n of the benches: 2^16 .. 2^30
DPI = 130
# Figures are drawn for a 16:9 beamer frame (about 5.8 x 2.7 inches under a
# title) and shown there at their natural size; fs() scales the sizes below,
# which were laid out 7.3 inches wide.
SCALE = 5.8 / 7.3


def fs(w: float, h: float) -> tuple[float, float]:
    return (w * SCALE, h * SCALE)


CONTRACT_WORDS = {"sum": "int sum", "max": "float max", "float sum": "float sum"}
CUB_NAMES = {"sum": "CUB `DeviceReduce::Sum`", "max": "CUB `DeviceReduce::Max`",
             "float sum": "CUB `DeviceReduce::Sum` (float)"}
LINE_STYLES = {"sum": "-", "max": "-.", "float sum": ":"}  # the overview plot, by contract

# Lab 11 (kind gpu_float_sum): four methods of one contract. The run records
# each method's bandwidth test and the accuracy tests on hard inputs
# (Hard/FloatSumAccuracy.*: ulps and relative error), and the run's studies
# hold the sort-first study (tests/tuning/sort_first_study.cu): the same
# values shuffled and sorted by magnitude, over several seeds, and the sort's
# time beside each method's sum.
FLOAT_METHODS = ("naive", "pairwise", "kahan", "double")
FLOAT_INPUTS = ("wide_sorted", "wide_shuffled", "cancellation")
JUDGED_METHODS = ("kahan", "double")  # the others' errors are recorded, not judged
ACCURACY_LIMIT = 2.0 ** -22           # relative error allowed to the judged methods
SORT_STUDY = "sort-first-study"
ORDERS = ("shuffled", "sorted")


# --------------------------------------------------------------------------
# The evidence: gpucheck.json read into plain records. Two layouts exist:
# labs.<id>.bench is one bench ({"name", "sizes": [...]}; CUB then comes from
# peers.cub_<contract>) or a dict of bench name -> bench, each size with its
# own "cub_gbps" measured in the same process.
# --------------------------------------------------------------------------

@dataclass
class Size:
    log2n: int
    n: int
    status: str
    gbps: float | None
    cub_gbps: float | None
    # The launch floor as GB/s: n elements over one empty kernel plus the bytes
    # at theoretical speed (bench's floor_us); no call can read faster.
    floor_gbps: float | None = None


@dataclass
class Bench:
    key: str            # "bench-02_interleaved", "bench-09_shuffle_vector_loads-sum"
    label: str          # "02_interleaved", "09_shuffle_vector_loads-sum"
    contract: str       # "sum" | "max"
    sizes: list[Size]
    ceiling_gbps: float | None
    theoretical_gbps: float | None
    cub_same_process: bool

    def at(self, log2n: int) -> Size | None:
        return next((s for s in self.sizes if s.log2n == log2n), None)

    @property
    def slug(self) -> str:
        return self.label


@dataclass
class Lab:
    id: str
    title: str
    kind: str
    threshold: float
    floor: float
    present: bool = False
    score: dict = field(default_factory=dict)
    cases: list[dict] = field(default_factory=list)   # bandwidth cases' properties (+ "_name")
    all_cases: list[dict] = field(default_factory=list)  # every case's properties (+ "_name")
    run: dict = field(default_factory=dict)            # the solution run's own properties (seed)
    benches: list[Bench] = field(default_factory=list)
    meta: labmeta.Lab | None = None                    # labs.toml's entry (short, builds_on)

    def previous(self, contract: str) -> str | None:
        return self.meta.previous(contract) if self.meta else None

    @property
    def short(self) -> str:
        return self.meta.short if self.meta and self.meta.short else self.title

    @property
    def num(self) -> str:
        return self.id.split("_", 1)[0]

    def bench(self, contract: str) -> Bench | None:
        return next((b for b in self.benches if b.contract == contract), None)


@dataclass
class Evidence:
    path: Path
    gpu: str
    driver: str
    memory: str
    cuda: str
    commit: str
    date: str
    labs: list[Lab]
    studies: dict = field(default_factory=dict)  # name -> the study's JSON (gpucheck "studies")
    profile: dict = field(default_factory=dict)  # `grader profile --references`, beside the JSON
    toml_path: Path = LABS_TOML

    def lab(self, lab_id: str) -> Lab | None:
        return next((lab for lab in self.labs if lab.id == lab_id), None)


def _float(x) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def load(json_path: Path, toml_path: Path = LABS_TOML) -> Evidence:
    data = json.loads(Path(json_path).read_text())
    course = labmeta.load(Path(toml_path))
    m = data.get("machine", {})
    smi = (m.get("nvidia_smi") or [""])[0].split(", ")
    cuda = re.search(r"cuda_(\d+(?:\.\d+)*)", m.get("nvcc", ""))
    peers = data.get("peers", {})
    labs = []
    for meta in course.labs:
        lab_id = meta.id
        lab = Lab(lab_id, meta.title, meta.kind, meta.threshold, meta.floor,
                  meta=meta)
        entry = data.get("labs", {}).get(lab_id)
        if entry:
            lab.present = True
            sol = entry.get("solutions", {})
            lab.score = sol.get("score", {})
            lab.all_cases = [dict(c.get("properties", {}), _name=c.get("name", ""))
                             for c in sol.get("run", {}).get("cases", [])]
            lab.cases = [c for c in lab.all_cases if "gbps" in c]
            lab.run = sol.get("run", {}).get("properties", {})
            raw = entry.get("bench") or {}
            if isinstance(raw.get("sizes"), list):  # one bench, the older layout
                raw = {"bench-" + raw.get("name", lab_id): raw}
            for key, b in raw.items():
                if not isinstance(b, dict) or not b.get("sizes"):
                    continue
                contract = b.get("contract") or ("max" if "max" in lab.kind else "sum")
                peer = {s["log2n"]: s.get("gbps") for s in
                        peers.get(f"cub_{contract}", {}).get("bench", {}).get("sizes", [])
                        if s.get("status", "ok") == "ok"}
                same = any("cub_gbps" in s for s in b["sizes"])
                sizes = []
                for s in b["sizes"]:
                    ok = s.get("status") == "ok"
                    cub = s.get("cub_gbps") if same else peer.get(s["log2n"])
                    n = int(s.get("n", 1 << s["log2n"]))
                    floor_us = _float(s.get("floor_us"))
                    sizes.append(Size(int(s["log2n"]), n,
                                      s.get("status", "?"), _float(s.get("gbps")) if ok else None,
                                      _float(cub) if ok or not same else None,
                                      4 * n / (floor_us * 1e3) if floor_us else None))
                label = key.removeprefix("bench-")
                lab.benches.append(Bench(key, label, contract, sizes, _float(b.get("ceiling_gbps")),
                                         _float(b.get("theoretical_gbps")), same))
        lab.benches.sort(key=lambda b: (b.contract != "sum", b.key))  # the int sum first
        labs.append(lab)
    return Evidence(Path(json_path), smi[0] if smi else "unknown GPU",
                    smi[1] if len(smi) > 1 else "?", smi[2] if len(smi) > 2 else "?",
                    cuda.group(1) if cuda else "?", m.get("commit", "")[:7] or "unknown",
                    m.get("date", "")[:10], labs, data.get("studies", {}),
                    _profile_run(Path(json_path).parent / "profile.json"), Path(toml_path))


def _profile_run(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


# --------------------------------------------------------------------------
# Text: the results blocks
# --------------------------------------------------------------------------

def gb(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}"


def lab_name(lab_id: str) -> str:
    return "lab " + lab_id.split("_", 1)[0]


def rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def provenance(ev: Evidence) -> str:
    return (f"{ev.gpu} (driver {ev.driver}, CUDA {ev.cuda}); `{rel(ev.path)}`, "
            f"commit `{ev.commit}`, {ev.date}.")


def previous_bench(ev: Evidence, lab: Lab, bench: Bench) -> tuple[Lab, Bench] | None:
    prev_id = lab.previous(bench.contract)
    prev = ev.lab(prev_id) if prev_id else None
    if prev and prev.benches:  # same contract if it has one (lab 08, a max, compares with 06)
        return prev, prev.bench(bench.contract) or prev.benches[0]
    return None


def bench_table(ev: Evidence, lab: Lab, bench: Bench) -> list[str]:
    prev = previous_bench(ev, lab, bench)
    me = lab_name(lab.id)
    head = ["elements", f"{me} GB/s", "CUB GB/s", f"{me} / CUB"]
    if prev:
        head.append(f"{me} / {lab_name(prev[0].id)}")
    rows = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for s in bench.sizes:
        cells = [f"$2^{{{s.log2n}}}$", gb(s.gbps) if s.gbps is not None else s.status,
                 gb(s.cub_gbps), ratio(s.gbps, s.cub_gbps)]
        if prev:
            p = prev[1].at(s.log2n)
            cells.append(ratio(s.gbps, p.gbps if p else None))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def profile_lines(ev: Evidence, lab: Lab) -> list[str]:
    """Why, measured: the counters `grader profile` shows for this lab, this lab's
    reference beside the previous one's, from the committed profile run."""
    run = ev.profile.get("profiles", {})
    if not run:
        return []
    from grader.commands import profile as gp
    course = labmeta.load(ev.toml_path)
    glab = course.lab(lab.id)
    keys = ["time_us", "dram_pct"] + [k for k in glab.profile if k not in ("time_us", "dram_pct")]
    out = []
    for name in gp.bench_names(glab):
        mine = run.get(name)
        if not mine or not mine.get("metrics"):
            continue
        prev = gp.previous_bench(course, glab, lambda b: gp.contract_of(course, b),
                                 lambda i: gp.bench_names(course.lab(i)), name)
        other = run.get(prev) if prev else None
        cols = [(lab_name(lab.id) + (f" {name.rsplit('-', 1)[1]}" if name != lab.id else ""),
                 mine)]
        if other and other.get("metrics"):
            cols.append((lab_name(prev) + (f" {prev.rsplit('-', 1)[1]}"
                                           if prev.count("-") else ""), other))
        log2n = ev.profile.get("log2n", 25)
        out += [f"## Measured: why (Nsight Compute{', ' + name.rsplit('-', 1)[1] if name != lab.id else ''})",
                "",
                f"One call on $2^{{{log2n}}}$ elements under `ncu`, reference solutions; "
                f"`python3 -m grader profile {lab.id.split('_', 1)[0]}` puts yours beside them. "
                f"{ev.profile.get('machine', {}).get('gpu', '')}, commit "
                f"`{ev.profile.get('machine', {}).get('commit', '')[:7]}`.",
                "",
                "| counter | " + " | ".join(t for t, _ in cols) + " |",
                "| --- |" + " ---: |" * len(cols)]
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
        lines.append(f"- Input: {size} elements ({n:,}; {n * 4 / 2**20:,.0f} MiB), "
                     f"each call reads it once")
    for case in cases:
        name = case.get("_name", "")
        what = ("int sum: " if name.startswith("Sum") else "float max: " if
                name.startswith("Max") else "") if len(cases) > 1 else ""
        g = _float(case.get("gbps")) or _float(sc.get("gbps"))
        ceil = _float(case.get("ceiling_gbps")) or _float(sc.get("ceiling_gbps"))
        theo = _float(case.get("theoretical_gbps"))
        frac = _float(case.get("fraction")) or _float(sc.get("fraction"))
        line = f"- {what.capitalize()}**{gb(g)} GB/s**; copy in the same process {gb(ceil)} GB/s"
        if frac is not None:
            line += f"; fraction **{frac:.3f}**"
        if theo and g:
            line += f"; {100 * g / theo:.1f}% of the theoretical {gb(theo)} GB/s"
        lines.append(line)
    frac = _float(sc.get("fraction"))
    if frac is not None:
        verdict = "meets" if frac >= lab.threshold else "misses"
        lines.append(f"- Graded fraction {frac:.3f}{' (the lower of the two)' if len(cases) > 1 else ''}"
                     f": it {verdict} the threshold {lab.threshold:g} (floor {lab.floor:g})")
    passed, failed = sc.get("tests_passed"), sc.get("tests_failed")
    if passed is not None:
        lines.append(f"- Correctness: {passed} of {passed + (failed or 0)} tests passed")
    return lines


def missing_block(ev: Evidence, lab: Lab) -> str:
    return "\n".join([
        f"## Measured on the {ev.gpu}", "",
        f"The evidence file `{rel(ev.path)}` (commit `{ev.commit}`, {ev.date}) has no "
        f"run of {lab_name(lab.id)}: it was recorded before this lab was added, or the lab "
        "did not run. To fill in this slide, on a GPU machine:", "",
        "```",
        "python3 -m grader gpucheck --out DIR",
        "python3 slides/make_figures.py DIR/gpucheck.json",
        "```",
    ])


def host_block(ev: Evidence, lab: Lab) -> str:
    case = lab.cases[0] if lab.cases else {}
    ceil = _float(case.get("ceiling_gbps"))
    threads = case.get("host_threads", "?")
    rows = ["| function | GB/s | of the memcpy |", "| --- | ---: | ---: |"]
    for key, what in (("sequential", "`sum_sequential` (one loop)"),
                      ("pairwise", "`sum_pairwise` (halving)"),
                      ("", f"`sum_threads` ({threads} threads)")):
        g = _float(case.get(f"{key}_gbps" if key else "gbps"))
        rows.append(f"| {what} | {gb(g) if g is None or g >= 100 else f'{g:.1f}'} | "
                    f"{ratio(g, ceil)} |")
    n = int(case.get("n", 0))
    return "\n".join([
        f"## Measured on the host of the {ev.gpu} machine", "",
        f"{int(n):,} ints ({n * 4 / 2**20:,.0f} MiB); a {threads}-thread `memcpy` of the "
        f"same size reaches {ceil:.1f} GB/s (bytes read + written). {provenance(ev)}", "",
        *rows, "",
        f"The threshold applies to `sum_threads`: {lab.threshold:g} of the memcpy "
        f"(floor {lab.floor:g}). Correctness: {lab.score.get('tests_passed')} of "
        f"{lab.score.get('tests_passed', 0) + lab.score.get('tests_failed', 0)} tests passed.",
        "",
        "## Measured: the three functions against the copy", "",
        f"![GB/s of the three CPU sums against a multithreaded memcpy]"
        f"(figures/ceiling_{lab.id}.png)",
    ])


def lab_block(ev: Evidence, lab: Lab) -> str:
    if not lab.present:
        return missing_block(ev, lab)
    if lab.kind == "cpu_sum":
        return host_block(ev, lab)
    out = []
    for b in lab.benches:
        what = CONTRACT_WORDS.get(b.contract, b.contract)
        cub = CUB_NAMES.get(b.contract, "CUB")
        where = "in the same process" if b.cub_same_process else "by the CUB peer bench of the same run"
        extra = f", {what}" if len(lab.benches) > 1 else ""
        who = " (compensated method)" if lab.kind == "gpu_float_sum" else ""
        out += [f"## Measured{extra}: GB/s by input size", "",
                f"Reference solution{who} on the {provenance(ev)} GB/s of input read; {cub} "
                f"measured {where}.", "", *bench_table(ev, lab, b), ""]
        out += [f"## Measured{extra}: against CUB", "",
                f"![{lab_name(lab.id)} and CUB, GB/s against input size]"
                f"(figures/bw_{b.slug}.png)", ""]
    if not lab.benches:
        out += [f"## Measured on the {ev.gpu}", "", "This run has no bench of this lab.", ""]
    if lab.kind == "gpu_float_sum":
        out += float_sum_block(ev, lab)
    out += profile_lines(ev, lab)
    out += ["## Measured: the bandwidth test", "", *test_case_lines(lab), "",
            "## Measured: against the copy ceiling", "",
            f"![{lab_name(lab.id)} and the labs before it, as a fraction of the copy ceiling]"
            f"(figures/ceiling_{lab.id}.png)"]
    return "\n".join(out).rstrip()


@dataclass
class Accuracy:
    """One run's accuracy tests: (method, input) -> (ulps, relative error) as recorded."""
    where: str
    errors: dict[tuple[str, str], tuple[str, float | None]]

    def limit_ulps(self, inp: str) -> float | None:
        """The judged methods' limit, 2^-22 relative, in ulps of this input's
        exact sum: 2 just above a power of two, 4 just below the next."""
        for (m, i), (u, r) in self.errors.items():  # |sum| / ulp = ulps / relative
            if i == inp and r and _float(u):
                return ACCURACY_LIMIT * _float(u) / r
        return None


def accuracy_of_run(lab: Lab) -> Accuracy | None:
    errors = {(c["method"], c["input"]): (c["ulps"], _float(c.get("relative_error")))
              for c in lab.all_cases if "ulps" in c and "method" in c and "input" in c}
    if not errors:
        return None
    seed = lab.run.get("seed")
    return Accuracy(f"the run of the tables above{f' (seed {seed})' if seed else ''}", errors)


def sort_study(ev: Evidence) -> dict | None:
    """The sort-first study of this run, if it ran and finished."""
    st = ev.studies.get(SORT_STUDY)
    return st if st and st.get("exit_code") == 0 and st.get("accuracy") else None


def sort_study_block(st: dict) -> list[str]:
    rows_in = st["accuracy"]
    k = len(rows_in)
    rows = ["| method | shuffled: median | max | sorted: median | max | sorting: better, worse |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for m in FLOAT_METHODS:
        sh = [r["shuffled_ulps"][m] for r in rows_in]
        so = [r["sorted_ulps"][m] for r in rows_in]
        # By more than half an ulp: 1.497 and 1.503 are the same distance on two sides.
        better = sum(b < a - 0.5 for a, b in zip(sh, so))
        worse = sum(b > a + 0.5 for a, b in zip(sh, so))
        rows.append(f"| {m} | {median(sh):.3g} | {max(sh):.3g} | {median(so):.3g} | "
                    f"{max(so):.3g} | {better}, {worse} of {k} |")
    n = int(st["n_timing"])
    sort_ms = _float(st.get("sort_ms"))
    sums = st.get("sum_ms", {})
    cost = (f"Sorting {n:,} floats by magnitude (CUB radix sort) took {sort_ms:.2f} ms; the "
            f"sums of the same size took {', '.join(f'{m} {_float(v):.3f}' for m, v in sums.items())} "
            f"ms (median, same process)")
    ref = _float(sums.get("kahan"))  # the study's own sum: the same process as its sort
    if ref and sort_ms:
        cost += f": the sort alone is {sort_ms / ref:.0f} times the compensated sum."
    return ["## Measured: sort first? Same values, two orders", "",
            f"Error in ulps of the exact sum, $2^{{24}}$ `wide_shuffled` floats and the same "
            f"floats sorted by magnitude on the GPU, {k} seeds (`tests/tuning/sort_first_study.cu`, "
            "same run). Better or worse: by more than half an ulp.", "", *rows, "", cost, "",
            "## Measured: sort first? Each draw", "",
            "![Each seed's error, shuffled and sorted, by method](figures/"
            "accuracy_sort_first.png)", ""]


def accuracy_table(acc: Accuracy) -> list[str]:
    inputs = [i for i in FLOAT_INPUTS if any(k[1] == i for k in acc.errors)]
    head = ["input"] + list(FLOAT_METHODS) + ["limit"]
    rows = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for inp in inputs:
        cells = [f"`{inp}`"]
        for m in FLOAT_METHODS:
            u, r = acc.errors.get((m, inp), ("-", None))
            over = m in JUDGED_METHODS and r is not None and r > ACCURACY_LIMIT
            cells.append(f"**{u} (over)**" if over else u)
        limit = acc.limit_ulps(inp)
        cells.append("-" if limit is None else f"{limit:.1f}")
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def method_bandwidth(lab: Lab) -> list[tuple[str, dict]]:
    """(method, {gbps, fraction, median_ms, n, ceiling_gbps}) from the bandwidth tests."""
    out = []
    for m in FLOAT_METHODS:
        for c in lab.all_cases:
            if not c["_name"].lower().startswith(m + "sumbandwidth"):
                continue
            pre = "" if "gbps" in c else f"{m}_"
            if f"{pre}gbps" in c:
                out.append((m, {k: _float(c.get(pre + k)) for k in
                                ("gbps", "fraction", "median_ms", "n", "ceiling_gbps")}))
    return out


def float_sum_block(ev: Evidence, lab: Lab) -> list[str]:
    out = []
    methods = method_bandwidth(lab)
    if methods:
        graded = dict(methods).get("kahan", {})
        n = graded.get("n") or next((v["n"] for _, v in methods if v.get("n")), None)
        rows = ["| method | GB/s | of the copy | median ms |", "| --- | ---: | ---: | ---: |"]
        for m, v in methods:
            frac, ms = v.get("fraction"), v.get("median_ms")
            rows.append(f"| {m}{' (graded)' if m == 'kahan' else ''} | {gb(v.get('gbps'))} | "
                        f"{'-' if frac is None else f'{frac:.3f}'} | "
                        f"{'-' if ms is None else f'{ms:.3f}'} |")
        out += ["## Measured: four methods, the same bytes", "",
                f"The bandwidth test of each method, {int(n):,} floats ({n * 4 / 2**20:,.0f} MiB), "
                f"same run.", "", *rows, ""]
    acc = accuracy_of_run(lab)
    if acc:
        out += ["## Measured: accuracy", "",
                f"Error in ulps of the exact sum (the float spacing there), $2^{{24}}$ elements; "
                f"{acc.where}. At most 0.5: the correctly rounded float. Kahan and double must "
                "stay within $2^{-22}$ relative: the last column, in ulps.", "",
                *accuracy_table(acc), "",
                "## Measured: accuracy by method", "",
                "![Error in ulps of the exact sum, by method and input](figures/"
                f"accuracy_{lab.id}.png)", ""]
    st = sort_study(ev)
    if st:
        out += sort_study_block(st)
    return out


STEP_SIZES = (16, 20, 24, 28)


def steps_table(ev: Evidence) -> list[str]:
    """What each lab bought over the lab it builds on (builds_on), by size, from
    the bench (both in one process per lab, three rounds in turn); the last
    column multiplies the steps back to lab 02's int sum."""
    benches = {(lab.id, b.contract): b for lab in ev.labs for b in lab.benches}
    base = benches.get(("02_interleaved", "sum"))
    head = " | ".join(f"$2^{{{k}}}$" for k in STEP_SIZES)
    rows = [f"| lab | over | {head} | over lab 02, $2^{{28}}$ |",
            "| --- | --- |" + " ---: |" * (len(STEP_SIZES) + 1)]

    def ratio(a: Bench | None, b: Bench | None, k: int) -> str:
        x, y = (a.at(k) if a else None), (b.at(k) if b else None)
        return f"{x.gbps / y.gbps:.2f}" if x and y and x.gbps and y.gbps else "-"

    for lab in ev.labs:
        for b in lab.benches:
            prev_id = lab.previous(b.contract)
            if not prev_id:
                continue
            prev = benches.get((prev_id, b.contract)) or next(
                (x for (i, _), x in benches.items() if i == prev_id), None)
            name = f"{lab.num}" + (f" {b.contract}" if len(lab.benches) > 1 else "")
            cells = " | ".join(ratio(b, prev, k) for k in STEP_SIZES)
            rows.append(f"| {name} | {prev_id[:2]} | {cells} | {ratio(b, base, 28)} |")
    return rows


def intro_block(ev: Evidence) -> str:
    rows = ["| lab | technique | GB/s | of the copy | threshold | of theoretical |",
            "| --- | --- | ---: | ---: | ---: | ---: |"]
    n = None
    for lab in ev.labs:
        sc = lab.score
        if not lab.present:
            rows.append(f"| {lab.num} | {lab.title} | not in this run | | {lab.threshold:g} | |")
            continue
        case = lab.cases[0] if lab.cases else {}
        theo = _float(case.get("theoretical_gbps"))
        g = _float(sc.get("gbps"))
        if lab.kind != "cpu_sum" and case.get("n"):
            n = int(case["n"])
        frac = _float(sc.get("fraction"))
        rows.append(f"| {lab.num} | {lab.title}{' (CPU)' if lab.kind == 'cpu_sum' else ''} | "
                    f"{gb(g)} | {'-' if frac is None else f'{frac:.3f}'} | {lab.threshold:g} | "
                    f"{'-' if not theo or g is None else f'{100 * g / theo:.1f}%'} |")
    size = f"{n:,} elements ({n * 4 / 2**20:,.0f} MiB of 4-byte values)" if n else "the test size"
    return "\n".join([
        f"## Measured: every lab on the {ev.gpu}", "",
        f"The bandwidth test of each reference solution, {size}. {provenance(ev)}", "",
        *rows, "",
        "## Measured: what each step bought", "",
        "GB/s of each lab over the lab it builds on, by input size, from the bench "
        "(in one process, three rounds in turn); the last column multiplies the steps "
        "back to lab 02. Below 1: the step costs at that size.", "",
        *steps_table(ev), "",
        "## Measured: bandwidth against input size", "",
        "![Every GPU lab and CUB, GB/s against input size](figures/overview_bw.png)", "",
        "## Measured: fraction of the copy ceiling", "",
        "![Every lab as a fraction of the copy ceiling, with its threshold]"
        "(figures/overview_fraction.png)",
    ])


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


# --------------------------------------------------------------------------
# The kernels' index arithmetic, in Python: the diagrams are drawn from these.
# --------------------------------------------------------------------------

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


TREES = {"02_interleaved": ("interleaved addressing", tree_interleaved),
         "03_strided_index": ("strided index", tree_strided),
         "04_sequential_addressing": ("sequential addressing", tree_sequential)}


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


# --------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------

class Figures:
    def __init__(self, out_dir: Path):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import patches
        self.plt, self.patches = plt, patches
        plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "figure.dpi": DPI,
                             "savefig.dpi": DPI, "axes.spines.top": False,
                             "axes.spines.right": False, "svg.hashsalt": "slides"})
        self.out = out_dir
        self.out.mkdir(parents=True, exist_ok=True)
        self.written: list[Path] = []

    def save(self, fig, name: str) -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None},
                    bbox_inches="tight", pad_inches=0.08)
        self.plt.close(fig)
        path = self.out / name
        data = buf.getvalue()
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        self.written.append(path)

    def thread_colour(self, t: int, T: int):
        cmap = self.plt.get_cmap("tab20" if T > 10 else "tab10")
        return cmap(t % cmap.N)

    # ---- measured ----

    def size_axis(self, ax):
        ax.set_xticks(SIZES, [f"$2^{{{k}}}$" for k in SIZES])
        ax.set_xlabel("input size (elements)")
        ax.set_ylabel("GB/s of input read")
        ax.grid(alpha=0.3)

    def bench_plot(self, ev: Evidence, lab: Lab, b: Bench) -> None:
        plt = self.plt
        fig, ax = plt.subplots(figsize=fs(7.2, 3.5))
        xs = [s.log2n for s in b.sizes]
        prev = previous_bench(ev, lab, b)
        if prev:
            ax.plot([s.log2n for s in prev[1].sizes], [s.gbps for s in prev[1].sizes], "-",
                    color="0.65", marker=".",
                    label=f"{lab_name(prev[0].id)}: {prev[0].short}")
        ax.plot(xs, [s.cub_gbps for s in b.sizes], "--s", color="tab:orange", ms=4,
                label=CUB_NAMES.get(b.contract, "CUB").replace("`", "").replace(" DeviceReduce::", " "))
        ax.plot(xs, [s.gbps for s in b.sizes], "-o", color="tab:blue", ms=5, lw=2,
                label=f"{lab_name(lab.id)}: {lab.short}")
        if any(s.floor_gbps for s in b.sizes):
            ax.plot(xs, [s.floor_gbps for s in b.sizes], ":", color="tab:red", lw=1.2,
                    label="the floor as GB/s: one empty launch + the bytes at peak speed")
        if b.ceiling_gbps:
            ax.axhline(b.ceiling_gbps, color="tab:green", ls=":", lw=1.5)
            ax.text(16, b.ceiling_gbps, f"copy ceiling {gb(b.ceiling_gbps)}", va="bottom",
                    fontsize=8, color="tab:green")
        if b.theoretical_gbps:
            ax.axhline(b.theoretical_gbps, color="0.4", ls=":", lw=1)
            ax.text(16, b.theoretical_gbps, f"theoretical {gb(b.theoretical_gbps)}",
                    va="bottom", fontsize=8, color="0.4")
        last = b.sizes[-1]
        if last.gbps:
            ax.annotate(gb(last.gbps), (last.log2n, last.gbps), textcoords="offset points",
                        xytext=(-8, 6), ha="right", fontsize=8, color="tab:blue")
        top = max([b.theoretical_gbps or 0, b.ceiling_gbps or 0] +
                  [s.gbps or 0 for s in b.sizes] + [s.cub_gbps or 0 for s in b.sizes])
        ax.set_ylim(0, top * 1.12)
        self.size_axis(ax)
        what = CONTRACT_WORDS.get(b.contract, b.contract)
        ax.set_title(f"{lab_name(lab.id)} ({what}) on the {ev.gpu}")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.8), frameon=False)
        self.save(fig, f"bw_{b.slug}.png")

    def ceiling_plot(self, ev: Evidence, lab: Lab) -> None:
        plt = self.plt
        upto = [x for x in ev.labs if x.present and x.kind != "cpu_sum"
                and _float(x.score.get("fraction")) is not None]
        upto = [x for x in upto if x.num <= lab.num]
        fig, ax = plt.subplots(figsize=fs(7.2, 0.3 * len(upto) + 0.9))
        names = [f"{x.num} {x.title}" for x in upto]
        fr = [float(x.score["fraction"]) for x in upto]
        cols = ["tab:blue" if x.id == lab.id else "0.75" for x in upto]
        ys = range(len(upto))
        ax.barh(ys, fr, color=cols, height=0.6)
        for y, x, f in zip(ys, upto, fr):
            ax.text(f + 0.01, y, f"{f:.3f}  ({gb(_float(x.score.get('gbps')))} GB/s)",
                    va="center", fontsize=8)
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
        ceil = _float(case.get("ceiling_gbps")) or 1.0
        threads = case.get("host_threads", "?")
        names = ["sum_sequential\n(one loop)", "sum_pairwise\n(halving)",
                 f"sum_threads\n({threads} threads)"]
        vals = [_float(case.get(k)) or 0 for k in ("sequential_gbps", "pairwise_gbps", "gbps")]
        fig, ax = plt.subplots(figsize=fs(7.2, 2.6))
        ax.barh(range(3), vals, color=["0.7", "0.7", "tab:blue"], height=0.6)
        for y, v in enumerate(vals):
            ax.text(v + ceil * 0.01, y, f"{v:.1f} GB/s ({v / ceil:.2f} of the copy)",
                    va="center", fontsize=8)
        ax.axvline(ceil, color="tab:green", ls=":")
        ax.text(ceil, 0.5, f" memcpy {ceil:.1f} GB/s", color="tab:green", fontsize=8,
                va="center")
        ax.axvline(lab.threshold * ceil, color="tab:red", lw=1.5)
        ax.text(lab.threshold * ceil, 1.5, f" threshold {lab.threshold:g}", color="tab:red",
                fontsize=8, va="center")
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
        ax.text(2.62, 2.8, "limit of kahan and double:\n$2^{-22}$ relative = 2 to 4 ulps",
                fontsize=7, color="tab:red", va="center", ha="right")
        ax.axhline(0.5, color="0.4", ls=":", lw=1)
        ax.text(2.62, 0.42, "below 0.5: correctly rounded", fontsize=7, color="0.35",
                va="top", ha="right")
        values = []
        for g, inp in enumerate(FLOAT_INPUTS):
            for j, m in enumerate(FLOAT_METHODS):
                u, r = acc.errors.get((m, inp), (None, None))
                u = _float(u)
                if u is None:
                    continue
                u = max(u, 1e-3)
                values.append(u)
                over = m in JUDGED_METHODS and r is not None and r > ACCURACY_LIMIT
                ax.plot([g + (j - 1.5) * 0.17], [u], "o", color=colours[m], ms=6,
                        mec="tab:red" if over else "white", mew=1.5 if over else 0.5)
        ax.set_yscale("log")
        ax.set_ylim(min(values + [0.01]) / 2, max(values + [4]) * 2.5)
        ax.set_xlim(-0.5, 2.65)
        ax.set_xticks(range(len(FLOAT_INPUTS)), FLOAT_INPUTS)
        ax.set_ylabel("error, ulps of the exact sum")
        ax.grid(alpha=0.3, axis="y")
        handles = [plt.Line2D([], [], ls="", marker="o", color=colours[m], label=m)
                   for m in FLOAT_METHODS]
        ax.legend(handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5),
                  frameon=False)
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
        handles = [plt.Line2D([], [], ls="", marker="o", color=colours[o],
                              label=f"{o}{' by magnitude' if o == 'sorted' else ''}") for o in ORDERS]
        handles.append(plt.Line2D([], [], ls=":", color="0.4", label="0.5: correctly rounded below"))
        ax.legend(handles=handles, fontsize=7, loc="upper right", frameon=False)
        ax.set_title(f"Same $2^{{24}}$ floats in two orders, {len(st['accuracy'])} seeds, {ev.gpu}",
                     fontsize=10)
        self.save(fig, "accuracy_sort_first.png")

    def overview(self, ev: Evidence) -> None:
        plt = self.plt
        fig, ax = plt.subplots(figsize=fs(7.4, 3.7))
        palette = ["tab:blue", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
                   "tab:gray", "tab:olive", "tab:cyan", "black"]
        gpu = [x for x in ev.labs if x.benches]
        cub = None
        for i, lab in enumerate(gpu):
            for b in lab.benches:
                ls = LINE_STYLES.get(b.contract, "-.")
                ax.plot([s.log2n for s in b.sizes], [s.gbps for s in b.sizes], ls, marker=".",
                        color=palette[i % len(palette)],
                        label=f"{lab.num} {lab.short if lab.meta and lab.meta.short else lab.title[:20]}"
                        + (" (max)" if b.contract == "max" and lab.kind != "gpu_max" else ""))
                if b.contract == "sum" and cub is None:
                    cub = b
        if cub:
            ax.plot([s.log2n for s in cub.sizes], [s.cub_gbps for s in cub.sizes], "--",
                    color="tab:orange", lw=2, label="CUB (int sum)")
        self.size_axis(ax)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False,
                  handlelength=1.8)
        styled = {b.contract for x in gpu for b in x.benches} - {"sum"}
        ax.set_title(f"Reference solutions on the {ev.gpu}"
                     + (" (" + ", ".join(f"{'dash-dot' if c == 'max' else 'dotted'}: "
                                         f"{CONTRACT_WORDS.get(c, c)}" for c in sorted(styled))
                        + ")" if styled else ""))
        self.save(fig, "overview_bw.png")

        labs = [x for x in ev.labs if x.present and _float(x.score.get("fraction")) is not None]
        fig, ax = plt.subplots(figsize=fs(7.4, 0.26 * len(labs) + 0.8))
        ys = range(len(labs))
        fr = [float(x.score["fraction"]) for x in labs]
        ax.barh(ys, fr, height=0.6,
                color=["tab:gray" if x.kind == "cpu_sum" else "tab:blue" for x in labs])
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

    def cell(self, ax, x, y, colour="white", text="", hatch=None, edge="0.5", tc="black", fs=7,
             w=1.0, h=1.0):
        ax.add_patch(self.patches.Rectangle((x, y), w * 0.94, h * 0.86, facecolor=colour,
                                            edgecolor=edge, hatch=hatch, lw=0.8))
        if text:
            ax.text(x + w * 0.47, y + h * 0.43, text, ha="center", va="center", fontsize=fs,
                    color=tc)

    def blank(self, ax, xmax, ymax):
        ax.set_xlim(-0.2, xmax)
        ax.set_ylim(ymax, -0.6)
        ax.axis("off")

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
                ax.add_patch(self.patches.Circle((x, y + 1), 0.34, facecolor="tab:blue",
                                                 edgecolor="none", alpha=0.25 + 0.15 * step))
                ax.text(x, y + 1, str(va + vb), ha="center",
                        va="center", fontsize=8)
            y += 1
            ax.text(N + 0.4, y, f"step {step}: {len(nxt)} addition{'s' if len(nxt) > 1 else ''}",
                    va="center", fontsize=9)
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
        ax.text(k + 0.4, avg * 1.5, f"average (N-1)/log2 N = {avg:,.0f}", color="tab:red",
                va="bottom", ha="right", fontsize=8)
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
            ax.add_patch(P.FancyBboxPatch((x0, 1.3), 3.4, 2.5, boxstyle="round,pad=0.05",
                                          facecolor="0.96", edgecolor="0.5"))
            ax.text(x0 + 0.1, 3.6, "SM 0" if i == 0 else "SM 1, 2, ... (all alike)",
                    fontsize=7, va="center")
            ax.add_patch(P.Rectangle((x0 + 0.15, 2.55), 3.1, 0.8, facecolor="#cfe3f7",
                                     edgecolor="0.4"))
            ax.text(x0 + 1.7, 2.95, "registers: per thread", ha="center", va="center",
                    fontsize=7)
            ax.add_patch(P.Rectangle((x0 + 0.15, 1.45), 1.5, 0.95, facecolor="#fde2c4",
                                     edgecolor="0.4"))
            ax.text(x0 + 0.9, 1.92, "shared mem.\nper block\n32 banks", ha="center",
                    va="center", fontsize=6.5)
            ax.add_patch(P.Rectangle((x0 + 1.75, 1.45), 1.5, 0.95, facecolor="#e6e6e6",
                                     edgecolor="0.4"))
            ax.text(x0 + 2.5, 1.92, "L1 cache\nautomatic", ha="center", va="center",
                    fontsize=6.5)
        ax.add_patch(P.Rectangle((0.2, 0.55), 7.2, 0.55, facecolor="#d9d9d9", edgecolor="0.4"))
        ax.text(3.8, 0.82, "L2 cache: whole GPU, automatic (60 MiB on the H200)",
                ha="center", va="center", fontsize=7)
        mem = ev.memory if ev.memory != "?" else ""
        ax.add_patch(P.Rectangle((0.2, -0.3), 7.2, 0.6, facecolor="#c7e9c0", edgecolor="0.4"))
        ax.text(3.8, 0.0, "global memory (HBM" + (f", {mem}" if mem else "") +
                "): every thread, every block", ha="center", va="center", fontsize=7)
        ax.annotate("", xy=(8.0, 3.6), xytext=(8.0, -0.2),
                    arrowprops=dict(arrowstyle="<->", color="0.3"))
        ax.text(8.1, 3.3, "faster,\nsmaller,\ncloser", fontsize=7, va="top")
        ax.text(8.1, 0.3, "slower,\nlarger,\nshared", fontsize=7, va="bottom")
        ax.set_xlim(0, 9.0)
        ax.set_ylim(-0.45, 3.95)
        ax.axis("off")
        self.save(fig, "memory.png")

    def who_tree(self, lab_id: str) -> None:
        plt = self.plt
        name, tree = TREES[lab_id]
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
                    self.cell(ax, e, y, "white", "", hatch="///", edge=self.thread_colour(src[e], T))
                else:
                    self.cell(ax, e, y, "0.93", "", edge="0.8")
            for t, d, sr in ops:
                ax.annotate("", xy=(d + 0.47, y - 0.02), xytext=(sr + 0.47, y - 0.02),
                            arrowprops=dict(arrowstyle="->", color=self.thread_colour(t, T),
                                            lw=1.1, connectionstyle="arc3,rad=0.35"))
        for e in range(T):
            ax.text(e + 0.47, (len(steps) - 1) * 1.4 + 1.3, str(e), ha="center", va="top",
                    fontsize=7, color="0.4")
        ax.text(T / 2, len(steps) * 1.4 + 0.55, "partial[ ] index  (filled: thread that adds and "
                "writes; hatched: element it reads)", ha="center", va="top", fontsize=8)
        ax.set_xlim(-1.6, T + 0.2)
        ax.set_ylim(len(steps) * 1.4 + 1.2, -1.7 if lab_id.startswith("04") else -0.9)
        ax.axis("off")
        ax.set_title(f"{lab_name(lab_id).capitalize()}, {name}: one block of {T} threads")
        self.save(fig, f"who_{lab_id}.png")

    def activity(self, lab_id: str) -> None:
        plt = self.plt
        import numpy as np
        name, tree = TREES[lab_id]
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
        ax.set_xticks([w * W + W / 2 for w in range(T // W)],
                      [f"warp {w}" for w in range(T // W)], fontsize=8)
        ax.tick_params(length=0)
        for r, k in enumerate(warps):
            ax.text(T + 3, r, f"{k} warp{'s' if k != 1 else ''}", va="center", fontsize=8)
        ax.set_xlim(-0.5, T + 40)
        ax.set_title(f"{lab_name(lab_id).capitalize()}: busy threads (blue) of a 256-thread block"
                     f"\nand the warps that issue the add: {sum(warps)} warp-steps in all",
                     fontsize=10)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        self.save(fig, f"activity_{lab_id}.png")

    def banks(self, lab_id: str) -> None:
        plt = self.plt
        import numpy as np
        name, tree = TREES[lab_id]
        rows = bank_load(tree)
        img = np.array([c for _, c, _ in rows], dtype=float)
        fig, ax = plt.subplots(figsize=fs(7.4, 2.6))
        ax.imshow(img, aspect="auto", cmap="Reds", vmin=0, vmax=10, interpolation="nearest")
        for r, (_, c, _) in enumerate(rows):
            for b, k in enumerate(c):
                if k:
                    ax.text(b, r, str(k), ha="center", va="center", fontsize=7)
        for r, (_, _, deg) in enumerate(rows):
            ax.text(32.2, r, f"{deg}-way" if deg > 1 else ("conflict-free" if deg else "idle"),
                    va="center", fontsize=8, color="tab:red" if deg > 1 else "black")
        ax.set_yticks(range(len(rows)), [f"s = {s}" for s, _, _ in rows], fontsize=8)
        ax.set_xticks(range(0, 32, 4), [str(b) for b in range(0, 32, 4)], fontsize=8)
        ax.set_xlabel("shared-memory bank (word % 32)")
        ax.set_xlim(-0.5, 37)
        ax.set_title(f"{lab_name(lab_id).capitalize()}: threads of warp 0 per bank, each step")
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        self.save(fig, f"banks_{lab_id}.png")

    def who_two_loads(self) -> None:
        plt = self.plt
        T, n = 4, 13
        owner = two_loads(n, T)
        nb = (n + 2 * T - 1) // (2 * T)
        fig, ax = plt.subplots(figsize=fs(7.4, 2.8))
        for i in range(nb * 2 * T):
            if i in owner:
                b, t, k = owner[i]
                self.cell(ax, i, 0, self.thread_colour(t, T), f"t{t}", hatch=None if k == 0 else "..")
            else:
                self.cell(ax, i, 0, "white", "", hatch="xx", edge="0.7")
            ax.text(i + 0.47, -0.35, str(i), ha="center", fontsize=7, color="0.4")
        for b in range(nb):
            ax.plot([b * 2 * T - 0.03] * 2, [-0.2, 1.0], color="black", lw=1.5)
            ax.text(b * 2 * T + T, -0.75, f"block {b}: in[{b * 2 * T} .. {b * 2 * T + 2 * T})",
                    ha="center", fontsize=8)
            for t in range(T):
                px = b * 2 * T + T / 2 + t
                for k in (0, 1):
                    i = b * 2 * T + t + k * T
                    if i < n:
                        ax.plot([i + 0.47, px + 0.47], [0.86, 2.45], color=self.thread_colour(t, T),
                                lw=0.8, alpha=0.7)
                has = b * 2 * T + t < n
                self.cell(ax, px, 2.45, self.thread_colour(t, T) if has else "white",
                          f"t{t}" if has else "0", fs=7)
        ax.text(-0.4, 0.43, "in", ha="right", va="center", fontsize=8)
        ax.text(-0.4, 2.88, "partial[t]", ha="right", va="center", fontsize=8)
        ax.text(0, 3.75, f"n = {n}; plain: first load, dotted: second load (t + {T}), crossed: "
                "past the end", ha="left", fontsize=8)
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
                self.cell(ax, x, r, self.thread_colour(b * T + t, G), f"{i}", fs=6.5,
                          hatch=None if kind == "step" else "..")
            else:
                self.cell(ax, x, r, "white", "", edge="0.85")
        steps = max(v[3] for v in owner.values() if v[2] == "step") + 1
        for s in range(steps):
            ax.annotate("", xy=(G + 0.7, s * 4 - 0.05), xytext=(G + 0.7, s * 4 + 3.9),
                        arrowprops=dict(arrowstyle="-", color="0.3"))
            ax.text(G + 0.9, s * 4 + 1.9, "one step: 4 loads\nin flight, then 4 adds",
                    va="center", fontsize=8)
        ax.text(G + 0.9, steps * 4 + (rows - steps * 4) / 2 - 0.1, "leftovers:\none at a time",
                va="center", fontsize=8)
        for c in range(G):
            ax.text(c + (0.4 if c >= T else 0) + 0.47, -0.3, f"t{c % T}", ha="center",
                    fontsize=7, color="0.3")
        ax.text(T / 2, -0.85, "block 0", ha="center", fontsize=8)
        ax.text(T + 0.4 + T / 2, -0.85, "block 1", ha="center", fontsize=8)
        ax.set_xlim(-0.3, G + 4.5)
        ax.set_ylim(rows + 0.9, -1.3)
        ax.text(G / 2, rows + 0.1, "numbers: element index; colour: the thread that loads it; "
                "dotted: leftover loads", ha="center", va="top", fontsize=8)
        ax.axis("off")
        ax.set_title(f"Grid-stride loop: {blocks} blocks x {T} threads (G = {G}), n = {n}",
                     fontsize=10)
        self.save(fig, "who_06_grid_stride_shared.png")

    def atomic_timeline(self) -> None:
        plt = self.plt
        P = self.patches
        fig, ax = plt.subplots(figsize=fs(7.4, 2.6))

        def box(x, y, w, text, colour):
            ax.add_patch(P.Rectangle((x, y), w, 0.75, facecolor=colour, edgecolor="0.3"))
            ax.text(x + w / 2, y + 0.375, text, ha="center", va="center", fontsize=7)

        ax.text(-0.15, 2.07, "lab 06", ha="right", va="center", fontsize=8)
        box(0, 1.7, 5.0, "launch 1: the grid over the input\nblock b writes workspace[b]",
            "#cfe3f7")
        box(5.3, 1.7, 3.0, "launch 2: one block\nworkspace -> *out", "#fde2c4")
        ax.text(-0.15, 0.47, "lab 07", ha="right", va="center", fontsize=8)
        box(0, 0.1, 1.5, "memset\n*out = 0", "#e6e6e6")
        box(1.8, 0.1, 5.0, "one launch: the grid over the input\nblock b: atomicAdd(out, total)",
            "#cfe3f7")
        ax.annotate("", xy=(8.3, 1.25), xytext=(0.0, 1.25),
                    arrowprops=dict(arrowstyle="->", color="0.5"))
        ax.text(8.3, 1.0, "time on the stream", ha="right", va="center", fontsize=7,
                color="0.4")
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
            ax.add_patch(P.FancyBboxPatch((x, 0), w, 1.1, boxstyle="round,pad=0.04",
                                          facecolor="#fde2c4" if last else "#cfe3f7",
                                          edgecolor="0.4"))
            who = "host launch" if j == 0 else "tail launch\nby block 0"
            size = f"$2^{{{k}}}$" if m == 1 << k else f"{m:,}"
            ax.text(x + w / 2, 0.55, f"pass {j + 1}: {size} in\n{blocks:,} block"
                    f"{'s' if blocks > 1 else ''}\n" + ("writes *out" if last else
                                                         f"{blocks:,} partials out"),
                    ha="center", va="center", fontsize=7)
            ax.text(x + w / 2, 1.3, who, ha="center", va="bottom", fontsize=7.5, color="0.3")
            if j:
                ax.annotate("", xy=(x - 0.02, 0.55), xytext=(x - gap + 0.02, 0.55),
                            arrowprops=dict(arrowstyle="->", color="0.3"))
            m = blocks
        ax.set_xlim(-0.1, len(chain) * (w + gap))
        ax.set_ylim(-0.2, 2.0)
        ax.axis("off")
        ax.set_title(f"$2^{{{k}}}$ ints, 256 per block: {len(chain)} passes; only the first is "
                     "launched by the host", fontsize=10)
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
                    self.cell(ax, t, r * 1.1 + 0.2, "#fde2c4" if missing else "#cfe3f7", fmt(v),
                              fs=7)
            ax.text(-0.2, -0.25, "input, then each thread's m", fontsize=8, va="bottom")
            res = rows[-1][0]
            ax.text(0, len(rows) * 1.1 + 1.3, f"max = {fmt(res)}  "
                    + ("(right)" if good else "(wrong: 0 is not in the input)"), ha="left",
                    va="top", fontsize=9, color="black" if good else "tab:red")
            ax.set_title(f"float m = {'-INFINITY' if ident == float('-inf') else '0.0f'};",
                         fontsize=10, family="monospace")
            self.blank(ax, T, len(rows) * 1.1 + 1.5)
            ax.set_ylim(len(rows) * 1.1 + 1.5, -0.9)
        fig.suptitle(f"Max of {len(vals)} negative floats by {T} threads; threads "
                     f"{len(vals)}-{T - 1} get no element (orange)", fontsize=10, y=1.04)
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
                self.cell(ax, lane, y, "tab:blue" if on else "0.93", str(lane), fs=6.5,
                          tc="white" if on else "0.55")
            for d, src in pairs:
                if d < off:
                    ax.plot([src + 0.47, d + 0.47], [y - H + 0.88, y - 0.02], color="tab:blue",
                            lw=0.6, alpha=0.8)
        ax.set_xlim(-3.6, 32.2)
        ax.set_ylim(len(steps) * H + 1.0, -0.4)
        ax.axis("off")
        ax.set_title("Lane l adds lane l + offset; blue: lanes whose result reaches lane 0",
                     fontsize=9)
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
                    ax.add_patch(P.Rectangle((x, y), 3.94, 0.9, facecolor=colour(b, t),
                                             edgecolor="0.3", lw=0.8))
                    for k in range(1, 4):  # the four ints of the vector: ticks
                        for y0, y1 in ((y, y + 0.18), (y + 0.72, y + 0.9)):
                            ax.plot([x + k] * 2, [y0, y1], color="white", lw=0.8)
                    ax.text(x + 1.97, y + 0.45, f"t{t}", ha="center", va="center", fontsize=8,
                            color="white" if t >= 2 else "black")
                    c += 4
                else:  # head or tail: one element per thread
                    b, t, _ = owner[i]
                    self.cell(ax, x, y, colour(b, t), f"{t}", hatch="xx", fs=7)
                    c += 1
            real = [i for i in idx if i is not None]
            end = len(idx) + 0.35 * ((len(idx) - 1) // 4) + 0.3
            ax.text(end, y + 0.45, f"in[{real[0]}..{real[-1]}]", va="center", fontsize=7,
                    color="0.35")
        ax.text(-0.6, len(lines) * 1.2 + 0.1, f"{T} threads per block, {loads} int4 loads each "
                f"in flight: a tile is {tile_ints} ints. Crossed: one element per thread.",
                ha="left", va="top", fontsize=8)
        ax.set_xlim(-5.5, tile_ints + 0.35 * 7 + 4.5)
        ax.set_ylim(len(lines) * 1.2 + 0.8, -0.3)
        ax.axis("off")
        ax.set_title(f"Toy sizes: n = {n}, input starting {mis} element past a 16-byte "
                     f"boundary; blue: block 0, orange: block 1", fontsize=9)
        self.save(fig, "vectors_09.png")

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
                ax.annotate("", xy=(i + 0.47, r * 1.3 + 1.25), xytext=(i + half + 0.47, r * 1.3 + 0.9),
                            arrowprops=dict(arrowstyle="->", color="tab:blue", lw=0.8))
                d[i] += d[i + half]
            if size % 2:
                ax.annotate("", xy=(0.3, r * 1.3 + 1.25), xytext=(size - 1 + 0.47, r * 1.3 + 0.9),
                            arrowprops=dict(arrowstyle="->", color="tab:red", lw=1.0))
                d[0] += d[size - 1]
            size = half
            r += 1
        ax.text(len(data) + 0.5, 1.0, "data[i] += data[i + size/2]\nred: an odd size carries "
                "its last\nelement over (or loses it)", fontsize=8, va="center")
        self.blank(ax, len(data) + 5, r * 1.3 + 1.0)
        ax.set_xlim(-2.0, len(data) + 5)
        ax.set_title(f"halve_in_place on {len(data)} ints: sum {sum(data)}")
        self.save(fig, "who_01_cpu_baseline.png")

    def all(self, ev: Evidence) -> None:
        self.reduction_tree()
        self.parallelism()
        self.memory(ev)
        self.pairwise()
        for lab_id in TREES:
            self.who_tree(lab_id)
            self.activity(lab_id)
            self.banks(lab_id)
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
            if _float(lab.score.get("fraction")) is not None:
                self.ceiling_plot(ev, lab)
        # Measured figures of labs this run does not have would be stale.
        for p in self.out.glob("*.png"):
            if p.name.startswith(("bw_", "ceiling_", "accuracy_")) and p not in self.written:
                p.unlink()


# --------------------------------------------------------------------------

def deck_path(decks: Path, stem: str) -> Path:
    return decks / f"{stem}.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="?", type=Path, default=DEFAULT_JSON,
                    help=f"gpucheck.json (default: {rel(DEFAULT_JSON)})")
    ap.add_argument("--labs-toml", type=Path, default=LABS_TOML)
    ap.add_argument("--decks-dir", type=Path, default=SLIDES,
                    help="folder of the NN_name.md decks (default: slides/)")
    ap.add_argument("--figures-dir", type=Path, default=None,
                    help="where the PNGs go (default: DECKS_DIR/figures)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--tables-only", action="store_true", help="no figures, no matplotlib")
    mode.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 if a deck is stale or names a missing figure")
    args = ap.parse_args(argv)
    figures_dir = args.figures_dir or args.decks_dir / "figures"

    if not args.json.is_file():
        print(f"make_figures: no such file: {args.json}", file=sys.stderr)
        return 2
    ev = load(args.json, args.labs_toml)
    problems = []
    for stem, block in blocks(ev).items():
        path = deck_path(args.decks_dir, stem)
        if not path.exists():
            problems.append(f"{path}: missing deck")
            continue
        text = path.read_text()
        try:
            new = splice(text, block)
        except ValueError as e:
            problems.append(f"{path}: {e}")
            continue
        if args.check:
            if new != text:
                problems.append(f"{path}: results tables differ from {rel(args.json)}; run "
                                f"python3 slides/make_figures.py")
            for fig in figures_named(text):
                if not (path.parent / fig).is_file():
                    problems.append(f"{path}: names {fig}, which does not exist")
        elif new != text:
            path.write_text(new)
            print(f"make_figures: updated {rel(path)}")

    if not args.check and not args.tables_only:
        try:
            figs = Figures(figures_dir)
        except ImportError as e:
            print(f"make_figures: matplotlib is needed for the figures ({e}); "
                  "pip install matplotlib, or use --tables-only", file=sys.stderr)
            return 2
        figs.all(ev)
        print(f"make_figures: {len(figs.written)} figures in {rel(figures_dir)}")
        for stem in blocks(ev):
            path = deck_path(args.decks_dir, stem)
            if path.exists():
                for fig in figures_named(path.read_text()):
                    if not (path.parent / fig).is_file():
                        problems.append(f"{path}: names {fig}, which was not generated")

    for p in problems:
        print(f"make_figures: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
