"""A submission as a folder on disk: an archive unpacked after every member is
checked (names, links, sizes, counts), a git repository cloned with a time
limit, a folder used as it is."""

from __future__ import annotations

import os
import re
import stat
import tarfile
import tempfile
import zipfile
from pathlib import Path

from ..infra import proc as procs
from . import submission_files as limits  # the limits are read when used: tests lower them
from .submission_files import human_size, refusal

ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz")
GIT_TIMEOUT_S = 300
_GIT_PREFIXES = ("http://", "https://", "git@", "ssh://", "git://", "file://")


def looks_remote(spec: str) -> bool:
    """A git URL (https://, ssh://, git@host:path ...), not a path on this machine."""
    return spec.startswith(_GIT_PREFIXES) or "://" in spec


def _check_member_name(name: str) -> None:
    path = name.replace("\\", "/")
    if path.startswith("/") or re.match(r"[A-Za-z]:", path) or ".." in path.split("/"):
        raise ValueError(f"unsafe path in archive: {name}")


def _check_zip(archive: zipfile.ZipFile) -> None:
    members = archive.infolist()
    if len(members) > limits.MAX_ENTRIES:
        raise ValueError(f"the archive has more than {limits.MAX_ENTRIES} members")
    total = 0
    for info in members:
        _check_member_name(info.filename)
        mode = info.external_attr >> 16  # Unix mode bits, where the zip was made on Unix
        if stat.S_ISLNK(mode):
            raise refusal(info.filename, "a symbolic link")
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise refusal(info.filename, "not a plain file")
        total += info.file_size  # zipfile never unpacks more than a member declares
        if total > limits.MAX_TREE_BYTES:
            raise ValueError(
                f"the archive unpacks to more than {human_size(limits.MAX_TREE_BYTES)}"
            )


def _check_tar(archive: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The members, read one header at a time so that a bomb stops early."""
    members: list[tarfile.TarInfo] = []
    total = 0
    for member in archive:
        if len(members) >= limits.MAX_ENTRIES:
            raise ValueError(f"the archive has more than {limits.MAX_ENTRIES} members")
        _check_member_name(member.name)
        if member.issym():
            raise refusal(member.name, "a symbolic link")
        if member.islnk():
            raise refusal(member.name, "a hard link")
        if not (member.isreg() or member.isdir()):
            raise refusal(member.name, "not a plain file")
        total += member.size
        if total > limits.MAX_TREE_BYTES:
            raise ValueError(
                f"the archive unpacks to more than {human_size(limits.MAX_TREE_BYTES)}"
            )
        members.append(member)
    return members


def _unpack(archive: Path, dest: Path) -> None:
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                _check_zip(z)
                z.extractall(dest)
        else:
            with tarfile.open(archive) as tar:
                members = _check_tar(tar)
                tar.extractall(dest, members=members, filter="data")  # a second guard
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        tarfile.TarError,
        EOFError,
        RuntimeError,
        NotImplementedError,
        OSError,
    ) as e:
        raise ValueError(f"cannot read the archive: {e}") from None


def _clone(spec: str, dest: Path) -> None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # a private URL fails, never prompts
    try:
        done = procs.run(
            ["git", "clone", "--quiet", "--depth", "1", "--", spec, str(dest)],
            timeout=GIT_TIMEOUT_S,
            env=env,
            options=procs.RunOptions(output_limit=1 << 20),
        )
    except OSError as e:
        raise ValueError(f"cannot run git: {e}") from None
    if done.timed_out:
        raise ValueError(f"git clone took more than {GIT_TIMEOUT_S} s")
    if not done.ok:
        raise ValueError(f"git clone failed: {done.output.strip()[-300:]}")


def _is_git(spec: str, path: Path) -> bool:
    return (
        looks_remote(spec)
        or spec.endswith(".git")
        or (path.is_dir() and (path / ".git").exists() and not (path / "labs").is_dir())
    )


def materialise(spec: str) -> tuple[tempfile.TemporaryDirectory | None, Path]:
    """The submission's top folder (and the temporary folder holding it, if any)."""
    path = Path(spec)
    if _is_git(spec, path):
        tmp = tempfile.TemporaryDirectory(prefix="submission-")
        try:
            _clone(spec, Path(tmp.name, "repo"))
        except BaseException:
            tmp.cleanup()
            raise
        return tmp, Path(tmp.name, "repo")
    if path.is_file() and spec.endswith(ARCHIVES):
        tmp = tempfile.TemporaryDirectory(prefix="submission-")
        try:
            _unpack(path, Path(tmp.name))
        except BaseException:
            tmp.cleanup()
            raise
        return tmp, Path(tmp.name)
    if path.is_dir():
        return None, path
    raise ValueError(f"not a folder, an archive ({', '.join(ARCHIVES)}) or a git repository")
