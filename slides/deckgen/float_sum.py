"""Lab 11's measured slides: four methods of one contract.

The run records each method's bandwidth test and the accuracy tests on hard
inputs (Hard/FloatSumAccuracy.*: ulps and relative error), and the run's
studies hold the sort-first study (tests/tuning/sort_first_study.cu): the same
values shuffled and sorted by magnitude, over several seeds, and the sort's
time beside each method's sum."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from .view import Evidence, Lab, as_float, gb

FLOAT_METHODS = ("naive", "pairwise", "kahan", "double")
FLOAT_INPUTS = ("wide_sorted", "wide_shuffled", "cancellation")
JUDGED_METHODS = ("kahan", "double")  # the others' errors are recorded, not judged
ACCURACY_LIMIT = 2.0**-22  # relative error allowed to the judged methods
SORT_STUDY = "sort-first-study"
ORDERS = ("shuffled", "sorted")


@dataclass
class Accuracy:
    """One run's accuracy tests: (method, input) -> (ulps, relative error) as recorded."""

    where: str
    errors: dict[tuple[str, str], tuple[str, float | None]]

    def limit_ulps(self, inp: str) -> float | None:
        """The judged methods' limit, 2^-22 relative, in ulps of this input's
        exact sum: 2 just above a power of two, 4 just below the next."""
        for (m, i), (u, r) in self.errors.items():  # |sum| / ulp = ulps / relative
            if i == inp and r and as_float(u):
                return ACCURACY_LIMIT * as_float(u) / r
        return None


def accuracy_of_run(lab: Lab) -> Accuracy | None:
    errors = {
        (c["method"], c["input"]): (c["ulps"], as_float(c.get("relative_error")))
        for c in lab.all_cases
        if "ulps" in c and "method" in c and "input" in c
    }
    if not errors:
        return None
    seed = lab.seed
    return Accuracy(f"the run of the tables above{f' (seed {seed})' if seed else ''}", errors)


def sort_study(ev: Evidence) -> dict | None:
    """The sort-first study's report in this run, if it ran and finished."""
    st = ev.studies.get(SORT_STUDY)
    return st.report if st and st.exit_code == 0 and st.report.get("accuracy") else None


def sort_study_block(st: dict) -> list[str]:
    rows_in = st["accuracy"]
    k = len(rows_in)
    rows = [
        "| method | shuffled: median | max | sorted: median | max | sorting: better, worse |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in FLOAT_METHODS:
        sh = [r["shuffled_ulps"][m] for r in rows_in]
        so = [r["sorted_ulps"][m] for r in rows_in]
        # By more than half an ulp: 1.497 and 1.503 are the same distance on two sides.
        better = sum(b < a - 0.5 for a, b in zip(sh, so))
        worse = sum(b > a + 0.5 for a, b in zip(sh, so))
        rows.append(
            f"| {m} | {median(sh):.3g} | {max(sh):.3g} | {median(so):.3g} | "
            f"{max(so):.3g} | {better}, {worse} of {k} |"
        )
    n = int(st["n_timing"])
    sort_ms = as_float(st.get("sort_ms"))
    sums = st.get("sum_ms", {})
    cost = (
        f"Sorting {n:,} floats by magnitude (CUB radix sort) took {sort_ms:.2f} ms; the "
        f"sums of the same size took {', '.join(f'{m} {as_float(v):.3f}' for m, v in sums.items())} "
        f"ms (median, same process)"
    )
    ref = as_float(sums.get("kahan"))  # the study's own sum: the same process as its sort
    if ref and sort_ms:
        cost += f": the sort alone is {sort_ms / ref:.0f} times the compensated sum."
    return [
        "## Measured: sort first? Same values, two orders",
        "",
        f"Error in ulps of the exact sum, $2^{{24}}$ `wide_shuffled` floats and the same "
        f"floats sorted by magnitude on the GPU, {k} seeds (the course's sort-first "
        "study, same run). Better or worse: by more than half an ulp.",
        "",
        *rows,
        "",
        cost,
        "",
        "## Measured: sort first? Each draw",
        "",
        "![Each seed's error, shuffled and sorted, by method](figures/accuracy_sort_first.png)",
        "",
    ]


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
                out.append(
                    (
                        m,
                        {
                            k: as_float(c.get(pre + k))
                            for k in ("gbps", "fraction", "median_ms", "n", "ceiling_gbps")
                        },
                    )
                )
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
            rows.append(
                f"| {m}{' (graded)' if m == 'kahan' else ''} | {gb(v.get('gbps'))} | "
                f"{'-' if frac is None else f'{frac:.3f}'} | "
                f"{'-' if ms is None else f'{ms:.3f}'} |"
            )
        out += [
            "## Measured: four methods, the same bytes",
            "",
            f"The bandwidth test of each method, {int(n):,} floats ({n * 4 / 2**20:,.0f} MiB), "
            f"same run.",
            "",
            *rows,
            "",
        ]
    acc = accuracy_of_run(lab)
    if acc:
        out += [
            "## Measured: accuracy",
            "",
            f"Error in ulps of the exact sum (the float spacing there), $2^{{24}}$ elements; "
            f"{acc.where}. At most 0.5: the correctly rounded float. Kahan and double must "
            "stay within $2^{-22}$ relative: the last column, in ulps.",
            "",
            *accuracy_table(acc),
            "",
            "## Measured: accuracy by method",
            "",
            "![Error in ulps of the exact sum, by method and input](figures/"
            f"accuracy_{lab.id}.png)",
            "",
        ]
    st = sort_study(ev)
    if st:
        out += sort_study_block(st)
    return out
