"""What a valid grader/labs.toml holds: every table's keys, each with its check,
and the problems of a parsed file, each naming its table and key. Plain Python
(no jsonschema: the grading machine has the standard library only); labmeta
raises them as one CourseFileError."""

from __future__ import annotations

import difflib
import math
import re

# How a block's threads pair up, step by step (slides/deckgen/index_math.py draws each).
TREE_SHAPES = ("interleaved", "strided", "sequential")
KINDS = ("cpu_sum", "gpu_sum", "gpu_max", "gpu_sum_max", "gpu_float_sum", "gpu_allreduce")
# What `grader profile` can show (grader/commands/profile.py defines each; a test keeps
# the two lists equal). Listed here so that this file runs as a plain script.
PROFILE_METRICS = (
    "time_us",
    "kernels",
    "dram_pct",
    "dram_bytes_per_element",
    "branch_uniform_pct",
    "active_threads",
    "bank_conflicts",
    "inst_per_32",
    "issue_busy_pct",
    "occupancy_pct",
    "waiting_on_memory",
    "bytes_per_load",
    "atomics",
)


# Plain Python (no jsonschema: the grading machine has the standard library only).
# Each table maps key -> (check, required); a check returns None or what is wrong.


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _text(v):
    return None if isinstance(v, str) and v.strip() else "must be a non-empty string"


def _boolean(v):
    return None if isinstance(v, bool) else "must be true or false"


def _count(v):
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return None
    return "must be a whole number >= 0"


def _positive(v):
    return None if _is_number(v) and v > 0 else "must be a number > 0"


def _threshold(v):
    if _is_number(v) and 0 < v <= THRESHOLD_MAX:
        return None
    return f"must be a number in (0, {THRESHOLD_MAX}] (a fraction of the copy ceiling)"


def _floor(v):
    # Against the threshold: see _lab_problems.
    return None if _is_number(v) and v >= 0 else "must be a number >= 0"


def _gpu_count(v):
    if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 8:
        return None
    return "must be a whole number from 1 to 8 (the GPUs one grading run needs)"


def _kind(v):
    return None if v in KINDS else f"must be one of {', '.join(KINDS)}"


_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def _files(v):
    if not isinstance(v, list) or not v:
        return "must be a non-empty list of file names"
    bad = [f for f in v if not isinstance(f, str) or not _FILE_NAME.fullmatch(f)]
    if bad:
        return (
            f"has {', '.join(map(repr, bad))}: each must be a plain file name "
            "(letters, digits, _ . + -; no folder, space or comma)"
        )
    if len(set(v)) != len(v):
        return "lists a file twice"
    return None


def _forbidden(v):
    if not isinstance(v, list):
        return "must be a list of strings"
    if any(not isinstance(s, str) or not s.strip() for s in v):
        return "must hold non-empty strings only (an empty one would match every file)"
    return None


def _anchors(v):
    if not isinstance(v, dict):
        return 'must be a table of "log2(n)" = GB/s, e.g. { "20" = 217 }'
    bad = [
        f"{k!r} = {x!r}"
        for k, x in v.items()
        if not (
            re.fullmatch(r"[0-9]{1,2}", k) and int(k) <= ANCHOR_LOG2_MAX and _is_number(x) and x > 0
        )
    ]
    if bad:
        return (
            f"has {', '.join(bad)}: keys must be log2 of the element count "
            f'("0" to "{ANCHOR_LOG2_MAX}"), values a number of GB/s > 0'
        )
    return None


def _profile(v):
    if not isinstance(v, list) or any(not isinstance(x, str) for x in v):
        return "must be a list of metric names"
    bad = [x for x in v if x not in PROFILE_METRICS]
    if bad:
        return f"has {', '.join(map(repr, bad))}: the metrics are {', '.join(PROFILE_METRICS)}"
    return None


def _tree(v):
    return None if v in TREE_SHAPES else f"must be one of {', '.join(TREE_SHAPES)}"


def _builds_on(v):
    if isinstance(v, str) and _LAB_ID.fullmatch(v):
        return None
    if (
        isinstance(v, dict)
        and v
        and all(
            isinstance(k, str) and isinstance(x, str) and _LAB_ID.fullmatch(x) for k, x in v.items()
        )
    ):
        return None
    return (
        'must be a lab id ("06_grid_stride_shared") or a table of contract = lab id '
        '({sum = "07_atomic_finish", max = "08_max_reduction"})'
    )


THRESHOLD_MAX = 1.5  # a fraction of a copy ceiling: above 1.5 is a typo
ANCHOR_LOG2_MAX = 40
TOP_LEVEL = {"course": True, "ceilings": False, "labs": True, "peers": False}  # table -> required
COURSE_KEYS = {"gpu": (_text, True)}
LAB_KEYS = {
    "title": (_text, True),
    "kind": (_kind, True),
    "files": (_files, True),
    "points_correctness": (_count, True),
    "points_performance": (_count, True),
    "threshold": (_threshold, True),
    "floor": (_floor, True),
    "forbidden": (_forbidden, False),
    "anchor_gbps": (_anchors, False),
    "beats_cub": (_boolean, False),
    "rdc": (_boolean, False),
    "profile": (_profile, False),
    "short": (_text, False),
    "builds_on": (_builds_on, False),
    "tree": (_tree, False),
    "min_gpus": (_gpu_count, False),
}
PEER_KEYS = {"title": (_text, False), "anchor_gbps": (_anchors, False)}
_LAB_ID = re.compile(r"[0-9]+_[A-Za-z0-9_-]+")


def _unknown(where: str, key: str, known, what: str = "key") -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"the {what}s are: {', '.join(known)}"
    return f"{where} {key}: unknown {what} ({hint})"


def _table_problems(where: str, table, schema: dict) -> list[str]:
    if not isinstance(table, dict):
        return [f"{where}: must be a table, not {type(table).__name__}"]
    problems = [_unknown(where, k, schema) for k in table if k not in schema]
    for key, (check, required) in schema.items():
        if key not in table:
            if required:
                problems.append(f"{where} {key}: missing (required)")
        elif (why := check(table[key])) is not None:
            problems.append(f"{where} {key} = {table[key]!r}: {why}")
    return problems


def _lab_problems(lab_id: str, entry) -> list[str]:
    where = f"[labs.{lab_id}]"
    problems = []
    if not _LAB_ID.fullmatch(lab_id):
        problems.append(
            f"{where}: the lab id must be a number, _ and a name "
            "(letters, digits, _ -), e.g. 04_sequential_addressing"
        )
    problems += _table_problems(where, entry, LAB_KEYS)
    if (
        isinstance(entry, dict)
        and _threshold(entry.get("threshold")) is None
        and _floor(entry.get("floor")) is None
        and entry["floor"] > entry["threshold"]
    ):
        problems.append(
            f"{where} floor = {entry['floor']!r}: must not exceed threshold "
            f"({entry['threshold']!r}); performance points run from floor to "
            "threshold"
        )
    return problems


def problems(data: dict) -> list[str]:
    """Every problem of parsed labs.toml: unknown tables or keys, wrong types,
    values out of range, labs that build on a later one; empty when it is valid."""
    problems = [_unknown("top level:", k, TOP_LEVEL, "table") for k in data if k not in TOP_LEVEL]
    problems += [
        f"[{name}]: missing (required)"
        for name, required in TOP_LEVEL.items()
        if required and name not in data
    ]
    if "course" in data:
        problems += _table_problems("[course]", data["course"], COURSE_KEYS)
    ceilings = data.get("ceilings", {})
    if not isinstance(ceilings, dict):
        problems.append("[ceilings]: must be a table of GPU model = GB/s")
    else:
        problems += [
            f"[ceilings] {model!r} = {v!r}: must be a number of GB/s > 0"
            for model, v in ceilings.items()
            if _positive(v) is not None
        ]
    labs = data.get("labs", {})
    if not isinstance(labs, dict):
        problems.append("[labs]: must hold one table per lab, [labs.<id>]")
    else:
        if "labs" in data and not labs:
            problems.append("[labs]: no lab in it")
        for lab_id, entry in labs.items():
            problems += _lab_problems(lab_id, entry)
        for lab_id, entry in labs.items():
            on = entry.get("builds_on") if isinstance(entry, dict) else None
            targets = (
                [on] if isinstance(on, str) else list(on.values()) if isinstance(on, dict) else []
            )
            problems += [
                f"[labs.{lab_id}] builds_on = {t!r}: must name an earlier lab of this file"
                for t in targets
                if t not in labs or t >= lab_id
            ]
        numbers: dict[str, list[str]] = {}
        for lab_id in labs:
            numbers.setdefault(lab_id.split("_", 1)[0], []).append(lab_id)
        problems += [
            f"[labs.{ids[1]}]: number {n} is also lab {ids[0]} (`grade {n}` must name one lab)"
            for n, ids in numbers.items()
            if len(ids) > 1
        ]
    peers = data.get("peers", {})
    if not isinstance(peers, dict):
        problems.append("[peers]: must hold one table per peer, [peers.<id>]")
    else:
        for peer_id, entry in peers.items():
            problems += _table_problems(f"[peers.{peer_id}]", entry, PEER_KEYS)
    return problems
