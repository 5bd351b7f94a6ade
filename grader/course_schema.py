"""What a valid grader/labs.toml holds: every table's keys, each with its check,
and the problems of a parsed file, each naming its table and key. The tables'
shape (which keys, which required, which unknown) is a voluptuous schema
(vendored: the grading machine installs nothing); the checks of each value and
the rules across labs are the course's own. labmeta raises the problems as one
CourseFileError."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from typing import Any

from grader.third_party.voluptuous import (
    PREVENT_EXTRA,
    Invalid,
    MultipleInvalid,
    Optional,
    Required,
    Schema,
)
from grader.third_party.voluptuous.error import DictInvalid, RequiredFieldInvalid

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


def _ceiling(v):
    return None if _is_number(v) and v > 0 else "must be a number of GB/s > 0"


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
TABLES = ("course", "ceilings", "labs", "peers")
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


def _rule(check: Callable[[Any], str | None]) -> Callable[[Any], Any]:
    """A value's check as a validator: what the check says is wrong is the Invalid."""

    def validate(v: Any) -> Any:
        if (why := check(v)) is not None:
            raise Invalid(why)
        return v

    return validate


def _table(keys: dict) -> dict:
    return {(Required if required else Optional)(k): _rule(c) for k, (c, required) in keys.items()}


# The file's shape; voluptuous reports every unknown, missing or wrong key at once.
COURSE_FILE = Schema(
    {
        Required("course"): _table(COURSE_KEYS),
        Optional("ceilings"): {str: _rule(_ceiling)},
        Required("labs"): {str: _table(LAB_KEYS)},
        Optional("peers"): {str: _table(PEER_KEYS)},
    },
    extra=PREVENT_EXTRA,
)
# What a table that is not a table must be, where "a table" says too little.
NOT_A_TABLE = {
    "ceilings": "must be a table of GPU model = GB/s",
    "labs": "must hold one table per lab, [labs.<id>]",
    "peers": "must hold one table per peer, [peers.<id>]",
}
# The keys a table may hold, by its depth in the file, for "did you mean".
KNOWN_KEYS = {("course",): COURSE_KEYS, ("labs",): LAB_KEYS, ("peers",): PEER_KEYS}
EXTRA_KEY = "extra keys not allowed"  # voluptuous's word for a key no schema names


def _unknown(where: str, key: str, known, what: str = "key") -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"the {what}s are: {', '.join(known)}"
    return f"{where} {key}: unknown {what} ({hint})"


def _at(data: Any, path: list) -> Any:
    for k in path:
        data = data[k]
    return data


def _say(data: dict, e: Invalid) -> str:
    """One schema error in the course's words: the table, the key, its value, why."""
    path = [str(k) for k in e.path]  # a missing key's path ends in its Required marker
    table, key = path[: 2 if path[0] in ("labs", "peers") else 1], path[-1]
    where = f"[{'.'.join(table)}]"
    if len(path) == 1 and e.msg == EXTRA_KEY:
        return _unknown("top level:", key, TABLES, "table")
    if isinstance(e, RequiredFieldInvalid):
        return (
            f"[{key}]: missing (required)"
            if len(path) == 1
            else f"{where} {key}: missing (required)"
        )
    if e.msg == EXTRA_KEY:
        return _unknown(where, key, KNOWN_KEYS[(path[0],)])
    if isinstance(e, DictInvalid):
        why = NOT_A_TABLE.get(".".join(path))
        return f"{where}: {why or f'must be a table, not {type(_at(data, e.path)).__name__}'}"
    shown = repr(key) if path[0] == "ceilings" else key
    return f"{where} {shown} = {_at(data, e.path)!r}: {e.msg}"


def _lab_problems(lab_id: str, entry) -> list[str]:
    """What no single key shows: the lab's id, and its floor against its threshold."""
    where = f"[labs.{lab_id}]"
    problems = []
    if not _LAB_ID.fullmatch(lab_id):
        problems.append(
            f"{where}: the lab id must be a number, _ and a name "
            "(letters, digits, _ -), e.g. 04_sequential_addressing"
        )
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


def _across_labs(labs: dict) -> list[str]:
    """The rules between labs: each builds on an earlier one, one lab per number."""
    problems = [] if labs else ["[labs]: no lab in it"]
    for lab_id, entry in labs.items():
        problems += _lab_problems(lab_id, entry)
    for lab_id, entry in labs.items():
        on = entry.get("builds_on") if isinstance(entry, dict) else None
        targets = [on] if isinstance(on, str) else list(on.values()) if isinstance(on, dict) else []
        problems += [
            f"[labs.{lab_id}] builds_on = {t!r}: must name an earlier lab of this file"
            for t in targets
            if t not in labs or t >= lab_id
        ]
    numbers: dict[str, list[str]] = {}
    for lab_id in labs:
        numbers.setdefault(lab_id.split("_", 1)[0], []).append(lab_id)
    return problems + [
        f"[labs.{ids[1]}]: number {n} is also lab {ids[0]} (`grade {n}` must name one lab)"
        for n, ids in numbers.items()
        if len(ids) > 1
    ]


def problems(data: dict) -> list[str]:
    """Every problem of parsed labs.toml: unknown tables or keys, wrong types,
    values out of range, labs that build on a later one; empty when it is valid."""
    try:
        COURSE_FILE(data)
        errors: list[Invalid] = []
    except MultipleInvalid as e:
        errors = sorted(e.errors, key=lambda x: [str(k) for k in x.path])
    problems = [_say(data, e) for e in errors]
    labs = data.get("labs")
    return problems + (_across_labs(labs) if isinstance(labs, dict) else [])
