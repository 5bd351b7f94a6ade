"""Reading a submission's files as untrusted input: every folder and file opened
without following links, each checked to be a plain file or folder, within
limits of size, count and depth, so that a hostile tree can neither reach
outside itself nor make the grader read without end."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 1 << 20  # one lab file
MAX_TREE_BYTES = 200 << 20  # the labs/ tree; an archive, unpacked
MAX_ENTRIES = 20_000  # entries of the labs/ tree; members of an archive
MAX_DEPTH = 32  # folders in folders under labs/ (each holds a descriptor open)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO that slipped past the checks must not wait for a writer.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def odd_kind(st: os.stat_result) -> str | None:
    """Why a file is refused, or None for a plain file or folder."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISREG(mode) and st.st_nlink > 1:
        # A hard link can be another name of any file on the file system: the
        # instructor's solution, another student's work.
        return f"a hard link (one of {st.st_nlink} names of one file)"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a plain file"
    return None


def refusal(shown: str, why: str) -> ValueError:
    return ValueError(f"{shown} is {why}: a submission must be plain files and folders")


def _open_dirs(root: Path, parts: tuple[str, ...] | list[str]) -> int | None:
    """A descriptor of root/parts, never following a link below root (root itself
    is the instructor's to give); None when a folder on the way is missing."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for k, part in enumerate(parts):
            child = _open_subdir(fd, part, "/".join(parts[: k + 1]))
            if child is None:
                return None
            os.close(fd)
            fd = child
        opened, fd = fd, -1
        return opened
    finally:
        if fd >= 0:
            os.close(fd)


def _open_subdir(fd: int, name: str, shown: str) -> int | None:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if (why := odd_kind(st)) is not None:
        raise refusal(shown, why)
    return _open_checked(name, fd, _DIR_FLAGS, shown) if stat.S_ISDIR(st.st_mode) else None


def _open_checked(name: str, dir_fd: int, flags: int, shown: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):  # swapped for a link since it was checked
            raise refusal(shown, "a symbolic link") from None
        if e.errno == errno.ENXIO:  # a socket
            raise refusal(shown, "a socket") from None
        raise ValueError(f"{shown}: cannot open it: {e.strerror}") from None


def read_submission_file(
    root: Path, parts: tuple[str, ...] | list[str], limit: int = MAX_FILE_BYTES
) -> bytes | None:
    """The bytes of root/parts, or None when it is missing (or a folder).

    Raises ValueError, naming the file by its path below root, when it or a
    folder on the way is a link, a device, a FIFO or a socket, when it is
    larger than limit, or when it cannot be read. Nothing that could block is
    opened: the type is checked before opening (O_NOFOLLOW, O_NONBLOCK) and
    again on the open descriptor."""
    shown = "/".join(parts)
    try:
        return _read_plain(root, parts, shown, limit)
    except OSError as e:
        raise ValueError(f"{shown}: cannot read it: {e.strerror or e}") from None


def absent(root: Path, parts: tuple[str, ...] | list[str]) -> str:
    """Why read_submission_file found no file at root/parts, in the feedback's
    words: a folder where the file belongs is not a missing file. Opened as
    read_submission_file opens it (no link followed)."""
    try:
        fd = _open_dirs(root, parts[:-1])
    except (OSError, ValueError):
        fd = None
    if fd is None:
        return "is missing from the submission"
    try:
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except OSError:
        return "is missing from the submission"
    finally:
        os.close(fd)
    if stat.S_ISDIR(st.st_mode):
        return "is a folder where a file belongs"
    return "is missing from the submission"


def _read_plain(
    root: Path, parts: tuple[str, ...] | list[str], shown: str, limit: int
) -> bytes | None:
    fd = _open_dirs(root, parts[:-1])
    if fd is None:
        return None
    try:
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if (why := odd_kind(st)) is not None:
            raise refusal(shown, why)
        if stat.S_ISDIR(st.st_mode):
            return None
        file_fd = _open_checked(parts[-1], fd, _FILE_FLAGS, shown)
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as f:
        st = os.fstat(file_fd)
        if (why := odd_kind(st)) is not None or not stat.S_ISREG(st.st_mode):
            raise refusal(shown, why or "not a plain file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(
            f"{shown} is larger than {human_size(limit)}: a lab file may be at most "
            f"{human_size(limit)}"
        )
    return data


def human_size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


@dataclass
class _Tally:
    entries: int = 0
    size: int = 0


def scan_tree(root: Path, parts: tuple[str, ...] | list[str]) -> None:
    """Refuses (ValueError naming the file) anything under root/parts that is not a
    plain file or folder, and a tree over MAX_ENTRIES entries, MAX_TREE_BYTES or
    MAX_DEPTH folders deep. Folders are opened without following links."""
    shown = "/".join(parts) or "."
    fd = _open_dirs(root, parts)
    if fd is None:
        raise ValueError(f"{shown} is missing")
    try:
        _scan_dir(fd, shown, _Tally(), 0)
    finally:
        os.close(fd)


def _scan_dir(fd: int, shown: str, tally: _Tally, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"{shown} is nested more than {MAX_DEPTH} folders deep")
    with os.scandir(fd) as entries:
        for entry in entries:
            tally.entries += 1
            if tally.entries > MAX_ENTRIES:
                raise ValueError(f"the labs folder holds more than {MAX_ENTRIES} files and folders")
            child = f"{shown}/{entry.name}"
            st = entry.stat(follow_symlinks=False)
            if (why := odd_kind(st)) is not None:
                raise refusal(child, why)
            if stat.S_ISDIR(st.st_mode):
                sub = _open_checked(entry.name, fd, _DIR_FLAGS, child)
                try:
                    _scan_dir(sub, child, tally, depth + 1)
                finally:
                    os.close(sub)
                continue
            tally.size += st.st_size
            if tally.size > MAX_TREE_BYTES:
                raise ValueError(
                    f"the labs folder holds more than {human_size(MAX_TREE_BYTES)} (at {child})"
                )
