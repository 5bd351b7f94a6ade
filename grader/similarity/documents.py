"""What is compared: one document per student and lab (the lab's fenced
regions, nothing else), the known corpus (the reference solutions, read
from solutions/ at run time; files an instructor points at), and each lab's
boilerplate (the skeleton's fences and the harness around them), whose
fingerprints never count as a match."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import labmeta
from ..engine.policy import fences
from ..engine import submissions
from ..infra import toolchain
from .functions import Function, functions
from .normalise import Normalised, language_of, normalise

CODE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".hpp", ".h", ".c")
MAX_CORPUS_FILE = 1 << 20
MAX_CORPUS_FILES = 20_000
# Normalised characters a corpus file's function needs to be compared on its own:
# three times the least match that is flagged (compare.MIN_MATCH), about nine
# statements, as in the classic reduce0 (a warp sum of a few lines stays out).
MIN_FUNCTION = 180
REPO = toolchain.REPO


@dataclass(frozen=True)
class Part:
    """One fenced region (or a whole corpus file) as written, and normalised."""

    label: str  # "reduce.cu: block_sum"
    first_line: int
    code: str
    norm: Normalised


@dataclass
class Document:
    owner: str  # student id, "reference", or the corpus file's path
    kind: str  # "student", "reference" or "corpus"
    lab: str | None  # None: a corpus file with no lab, compared with every lab
    parts: list[Part] = field(default_factory=list)
    # A whole corpus file, of which a student may take one function: only the
    # student's share of it counts (its functions are documents of their own).
    share_only: bool = False

    @property
    def text(self) -> str:
        return "".join(p.norm.text for p in self.parts)

    def lines_of(self, begin: int, end: int) -> dict[int, set[int]]:
        """part index -> the source lines behind text[begin:end]."""
        out: dict[int, set[int]] = {}
        at = 0
        for k, p in enumerate(self.parts):
            size = len(p.norm.text)
            if begin < at + size and end > at:
                lines = p.norm.lines_of(max(0, begin - at), min(size, end - at))
                if lines:
                    out.setdefault(k, set()).update(lines)
            at += size
        return out


def _as_text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _fenced_parts(name: str, text: str) -> list[Part]:
    language = language_of(name)
    return [
        Part(f"{name}: {f.name}", f.first_line, f.body, normalise(f.body, language, f.first_line))
        for f in fences.extract(text, name)
    ]


def _has_fences(text: str) -> bool:
    return any(fences.BEGIN.match(line) for line in text.splitlines())


def lab_document(
    owner: str, kind: str, lab: labmeta.Lab, files: Mapping[str, str | None]
) -> tuple[Document, list[str]]:
    """The fences of one lab's files (name -> text; None: missing), and notes on
    files whose fences could not be read."""
    doc, notes = Document(owner, kind, lab.id), []
    for name in lab.files:
        text = files.get(name)
        if text is None:
            continue
        try:
            doc.parts += _fenced_parts(name, text)
        except fences.FenceError as e:
            notes.append(f"{owner}: {lab.id}/{name} left out: {e}")
    return doc, notes


def student_documents(
    specs: dict[str, str], course: labmeta.Course
) -> tuple[list[Document], list[str]]:
    """spec -> student id, opened as `batch` opens them (submissions.open_submission)."""
    docs, notes = [], []
    for spec, student in specs.items():
        try:
            sub = submissions.open_submission(spec, student=student, course=course)
        except ValueError as e:
            notes.append(f"{student}: not compared: {e}")
            continue
        try:
            for lab in course.labs:
                files = {
                    name: _as_text(data)
                    if (data := sub.files.get(f"{lab.id}/{name}")) is not None
                    else None
                    for name in lab.files
                }
                doc, lab_notes = lab_document(student, "student", lab, files)
                docs.append(doc)
                notes += lab_notes
        finally:
            if sub.workdir is not None:
                sub.workdir.cleanup()
    return docs, notes


def reference_documents(course: labmeta.Course, root: Path = REPO / "solutions") -> list[Document]:
    """Each lab's reference solution, read now: nothing is stored that could
    go stale. Empty where solutions/ is absent (a student release)."""
    docs = []
    for lab in course.labs:
        files = {
            name: (root / lab.id / name).read_text()
            for name in lab.files
            if (root / lab.id / name).is_file()
        }
        if files:
            docs.append(lab_document("reference", "reference", lab, files)[0])
    return docs


def boilerplate_texts(course: labmeta.Course, root: Path = REPO / "labs") -> dict[str, list[str]]:
    """lab id -> the normalised text of its skeleton's fences and of the code
    around them: what every student was given."""
    out: dict[str, list[str]] = {}
    for lab in course.labs:
        texts = []
        for name in lab.files:
            path = root / lab.id / name
            if not path.is_file():
                continue
            text = path.read_text()
            texts.append(normalise(fences.outside(text), language_of(name)).text)
            texts += [p.norm.text for p in _fenced_parts(name, text)]
        out[lab.id] = texts
    return out


def whole_file_documents(shown: str, name: str, text: str) -> list[Document]:
    """A corpus file with no lab: the whole file and, for each function, that
    function with the file's functions it calls (a copier writes a helper out
    where it was called), where they are large enough to be worth copying (a
    warp sum of a few lines is what honest students write alike)."""
    language = language_of(name)
    found = functions(text, language)
    whole = Document(
        shown, "corpus", None, [Part(name, 1, text, normalise(text, language))], share_only=True
    )
    # Bodies only: a fence holds a body, its signature is the skeleton's.
    norms = [normalise(f.body, language, f.body_line) for f in found]
    docs = [whole]
    for k, f in enumerate(found):
        parts = [
            Part(f"{name}: {found[j].name}", found[j].body_line, found[j].body, norms[j])
            for j in _called(found, k)
        ]
        if sum(len(p.norm.text) for p in parts) >= MIN_FUNCTION:
            docs.append(Document(f"{shown}: {f.name}", "corpus", None, parts))
    return docs


def _called(found: list[Function], k: int) -> list[int]:
    """found[k] and every function of the file it calls, directly or not, in file order."""
    names = {f.name: j for j, f in enumerate(found)}
    seen, todo = {k}, [k]
    while todo:
        code = found[todo.pop()].code
        for word in set(re.findall(r"[A-Za-z_]\w*", code)):
            j = names.get(word)
            if j is not None and j not in seen:
                seen.add(j)
                todo.append(j)
    return sorted(seen)


def corpus_documents(folder: Path, course: labmeta.Course) -> tuple[list[Document], list[str]]:
    """Every code file under folder (links are not followed). A file with fences
    under a folder named after a lab is that lab's fenced code (last term's
    submissions, labs/NN_name/ layout); any other file is compared whole with
    every lab (public kernels dropped in a folder)."""
    if not folder.is_dir():
        raise ValueError(f"--corpus {folder}: not a folder")
    lab_ids = {lab.id: lab for lab in course.labs}
    grouped: dict[tuple[str, str], dict[str, str]] = {}
    docs, notes, seen = [], [], 0
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(top, d)))
        for name in sorted(names):
            path = Path(top, name)
            if not name.endswith(CODE_SUFFIXES) or path.is_symlink() or not path.is_file():
                continue
            seen += 1
            if seen > MAX_CORPUS_FILES:
                raise ValueError(f"--corpus {folder}: more than {MAX_CORPUS_FILES} code files")
            shown = str(path.relative_to(folder.parent))
            if path.stat().st_size > MAX_CORPUS_FILE:
                notes.append(f"corpus: {shown} left out: larger than 1 MiB")
                continue
            text = _as_text(path.read_bytes())
            lab = lab_ids.get(path.parent.name)
            if lab is not None and not (name in lab.files and _has_fences(text)):
                lab = None
            if lab is not None:
                holder = path.parent.parent  # a submission's folder, above its labs/
                if holder.name == "labs" and holder != folder:
                    holder = holder.parent
                owner = str(holder.relative_to(folder.parent))
                grouped.setdefault((owner, lab.id), {})[name] = text
                continue
            docs += whole_file_documents(shown, name, text)
    for (owner, lab_id), files in sorted(grouped.items()):
        doc, lab_notes = lab_document(owner, "corpus", lab_ids[lab_id], files)
        docs.append(doc)
        notes += lab_notes
    return docs, notes
