"""Fingerprints (copydetect's winnowing, MOSS's algorithm) of every document,
and the pairs worth a close look.

Pairs grow as n^2, so they are never all compared: an index (a 0/1 matrix,
documents x fingerprints) gives the number of fingerprints every pair shares
in one sparse product, and only a pair sharing at least PREFILTER of the
smaller document's fingerprints is compared in full (copydetect's
compare_files, which finds the matching spans and so the lines to show).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
from dataclasses import dataclass

import copydetect.utils
import numpy as np
from copydetect import CodeFingerprint, compare_files

from .documents import Document

# k-grams of normalised characters: copydetect's noise threshold (25) and
# window (guarantee 30). A statement such as `if(V<V)V[V]+=V[V+V];` is 20.
K = 25
WINDOW = 6
THRESHOLD = 0.80  # the default: tests/similarity/measured.md says why
MIN_MATCH = 60  # normalised characters matched, at least: about three statements
PREFILTER = 0.5  # of the threshold, in shared fingerprints


@dataclass(frozen=True)
class Settings:
    threshold: float = THRESHOLD
    min_match: int = MIN_MATCH
    prefilter: float = PREFILTER


@dataclass
class Match:
    lab: str
    a: Document  # always a student
    b: Document  # a student, the reference or a corpus file
    score: float  # the share of the copied code found in the other
    matched: int  # normalised characters matched, on a's side
    flagged: bool = False
    via: str | None = None  # two students who both match this known source: shown under it
    # copydetect's matching spans of the normalised text, [starts, ends] per side
    spans: tuple[np.ndarray, np.ndarray] | None = None

    @functools.cached_property
    def a_lines(self) -> dict[int, set[int]]:
        """part index -> source lines of a in the match (found when shown)."""
        return _lines(self.a, self.spans[0]) if self.spans is not None else {}

    @functools.cached_property
    def b_lines(self) -> dict[int, set[int]]:
        return _lines(self.b, self.spans[1]) if self.spans is not None else {}


def _lines(doc: Document, spans: np.ndarray) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for begin, end in zip(*spans):
        for k, found in doc.lines_of(int(begin), int(end)).items():
            out.setdefault(k, set()).update(found)
    return out


@dataclass
class Run:
    matches: list[Match]  # every pair compared in full; flagged ones marked
    documents: int  # student documents with code of their own
    pairs: int  # pairs there would be, all against all
    compared: int  # pairs the index let through


def stable_kgrams(text: str, k: int) -> np.ndarray:
    """copydetect's hashed_kgrams with a hash that is the same in every run:
    it uses Python's hash(), salted per process, so a report would change
    from one run to the next (a few pairs near the threshold came and went)."""
    return np.array(
        [
            int.from_bytes(
                hashlib.blake2b(text[i : i + k].encode(), digest_size=8).digest(),
                "little",
                signed=True,
            )
            for i in range(len(text) - k + 1)
        ],
        dtype=np.int64,
    )


@contextlib.contextmanager
def _stable_hashes():
    saved = copydetect.utils.hashed_kgrams
    copydetect.utils.hashed_kgrams = stable_kgrams
    try:
        yield
    finally:
        copydetect.utils.hashed_kgrams = saved


def boilerplate_hashes(texts: list[str]) -> np.ndarray:
    """Every k-gram of the given code, not just the winnowed ones: a
    student's fingerprint that is anywhere in the skeleton never counts."""
    hashes = [stable_kgrams(t, K) for t in texts if len(t) >= K]
    return np.unique(np.concatenate(hashes)) if hashes else np.array([], dtype=np.int64)


def fingerprint(doc: Document, boilerplate: np.ndarray) -> CodeFingerprint | None:
    """None for a document with nothing of its own (a skeleton left as given)."""
    text = doc.text
    if len(text) < K:
        return None
    with _stable_hashes():
        fp = CodeFingerprint(
            doc.owner, K, WINDOW, boilerplate=boilerplate, filter=False, fp=io.StringIO(text)
        )
    return fp if fp.hashes else None


def _shared_counts(fps: list[CodeFingerprint]) -> np.ndarray:
    """counts[i, j]: fingerprints documents i and j share."""
    columns: dict[int, int] = {}
    rows, cols = [], []
    for i, fp in enumerate(fps):
        for h in fp.hashes:
            rows.append(i)
            cols.append(columns.setdefault(int(h), len(columns)))
    index = np.zeros((len(fps), max(1, len(columns))), dtype=np.float32)
    index[rows, cols] = 1.0
    return index @ index.T


def compare_lab(
    lab: str,
    students: list[Document],
    known: list[Document],
    boilerplate: np.ndarray,
    settings: Settings,
) -> Run:
    docs, fps = [], []
    by_text: dict[str, CodeFingerprint | None] = {}
    for doc in students + known:
        text = doc.text
        if text not in by_text:  # a copy without a disguise, a skeleton: made once
            by_text[text] = fingerprint(doc, boilerplate)
        if (fp := by_text[text]) is not None:
            docs.append(doc)
            fps.append(fp)
    n_students = sum(1 for d in docs if d.kind == "student")
    pairs = n_students * (n_students - 1) // 2 + n_students * (len(docs) - n_students)
    if not docs:
        return Run([], 0, 0, 0)
    shared = _shared_counts(fps)
    sizes = np.array([len(fp.hashes) for fp in fps], dtype=np.float32)
    estimate = shared / np.minimum.outer(sizes, sizes)
    enough = estimate >= settings.prefilter * settings.threshold
    cache: dict[tuple[str, str], tuple] = {}
    matches, compared = [], 0
    # Students against known sources first: it says which students match one.
    sources: dict[int, set[str]] = {}
    for i in range(n_students):
        for j in np.nonzero(enough[i, n_students:])[0] + n_students:
            m = _compare(lab, docs[i], fps[i], docs[j], fps[j], settings, cache)
            compared += 1
            matches.append(m)
            if m.flagged:
                sources.setdefault(i, set()).add(docs[j].owner)
    for i in range(n_students):
        for j in np.nonzero(enough[i, i + 1 : n_students])[0] + i + 1:
            common = sources.get(i, set()) & sources.get(int(j), set())
            if common and estimate[i, j] >= settings.threshold:
                # Both copied one known source: the pair says nothing more, and
                # it is not compared in full (12 copies are 66 such pairs a lab).
                matches.append(
                    Match(
                        lab,
                        docs[i],
                        docs[j],
                        float(estimate[i, j]),
                        0,
                        flagged=True,
                        via=min(common),
                    )
                )
                continue
            matches.append(_compare(lab, docs[i], fps[i], docs[j], fps[j], settings, cache))
            compared += 1
    return Run(matches, n_students, pairs, compared)


def _compare(
    lab: str,
    a: Document,
    fa: CodeFingerprint,
    b: Document,
    fb: CodeFingerprint,
    settings: Settings,
    cache: dict[tuple[str, str], tuple],
) -> Match:
    key = (a.text, b.text)
    if key not in cache:  # two pairs of the same normalised texts match alike
        cache[key] = compare_files(fa, fb)
    _, (sim_a, sim_b), spans = cache[key]
    # Either side may be the copy, and a copy padded with code of one's own
    # still holds all of its source: the larger share counts. Only a whole
    # corpus file, of which a student takes one function, counts by how much
    # of the student's code is in it; its functions are compared on their own
    # as well (documents.whole_file_documents).
    score = float(sim_a if b.share_only else max(sim_a, sim_b))
    if np.ndim(spans[0]) != 2:  # nothing in common: copydetect gives empty arrays
        return Match(
            lab, a, b, score, 0, flagged=score >= settings.threshold and settings.min_match <= 0
        )
    matched = int(np.sum(spans[0][1] - spans[0][0]))
    return Match(
        lab,
        a,
        b,
        score,
        matched,
        flagged=score >= settings.threshold and matched >= settings.min_match,
        spans=spans,
    )
