"""Submissions are plain files: links, devices, FIFOs, sockets and oversized
trees are refused, archives are checked before they are unpacked, and every
student gets a stable, readable, unique id."""

import io
import os
import shutil
import socket
import stat
import subprocess
import tarfile
import threading
import unicodedata
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES  # noqa: F401

from grader import labmeta
from grader.engine import submission_files, submissions
from grader.infra.toolchain import REPO

COURSE = labmeta.load()
LAB01 = "01_cpu_baseline"
LAB_FILE = Path("labs", LAB01, "cpu_sum.cpp")
SOLUTION = REPO / "solutions" / LAB01 / "cpu_sum.cpp"
TODO = '  LAB_TODO_HOST("sum_sequential");\n'


def student(tmp_path: Path, name: str = "stu") -> Path:
    """A submission folder holding the skeletons, sum_sequential answered."""
    root = tmp_path / "subs" / name
    shutil.copytree(REPO / "labs", root / "labs")
    p = root / LAB_FILE
    p.write_text(p.read_text().replace(TODO, "  return 42;\n"))
    return root


def refused(spec: Path | str, *words: str) -> str:
    with pytest.raises(ValueError) as e:
        submissions.open_submission(str(spec))
    message = str(e.value)
    assert message.startswith(f"{spec}: "), message
    for word in words:
        assert word in message, message
    return message


def within(seconds: float, fn):
    """fn() in a thread: the test fails, instead of hanging, if it blocks."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still blocked after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ------------------------------------------------------------------ folders


def test_an_honest_folder_opens_and_installs(tmp_path):
    root = student(tmp_path)
    sub = submissions.open_submission(str(root))
    assert sub.student == "stu" and sub.labs_dir == root / "labs"
    assert b"return 42;" in sub.files[f"{LAB01}/cpu_sum.cpp"]
    dest = tmp_path / "dest"
    notes = submissions.install(sub, COURSE, REPO / "labs", dest)
    assert "return 42;" in (dest / LAB01 / "cpu_sum.cpp").read_text()
    assert not any("was not used" in n for n in notes), notes


def test_a_symlink_to_the_solution_is_refused(tmp_path):
    root = student(tmp_path)
    (root / LAB_FILE).unlink()
    (root / LAB_FILE).symlink_to(SOLUTION)
    refused(root, "labs/01_cpu_baseline/cpu_sum.cpp", "symbolic link")


def test_a_symlink_to_a_file_outside_anywhere_under_labs_is_refused(tmp_path):
    root = student(tmp_path)
    (root / "labs" / LAB01 / "notes.txt").symlink_to("/etc/hostname")
    refused(root, "labs/01_cpu_baseline/notes.txt", "symbolic link")


def test_a_symlinked_lab_folder_or_labs_folder_is_refused(tmp_path):
    root = student(tmp_path, "a")
    shutil.rmtree(root / "labs" / LAB01)
    (root / "labs" / LAB01).symlink_to(REPO / "solutions" / LAB01)
    refused(root, "labs/01_cpu_baseline", "symbolic link")
    other = tmp_path / "b"
    other.mkdir()
    (other / "labs").symlink_to(REPO / "solutions")
    refused(other, "labs", "symbolic link")


def test_a_hard_link_is_refused(tmp_path):
    outside = tmp_path / "secret.cpp"
    outside.write_text("// someone else's file\n")
    root = student(tmp_path)
    (root / LAB_FILE).unlink()
    os.link(outside, root / LAB_FILE)
    refused(root, "labs/01_cpu_baseline/cpu_sum.cpp", "hard link")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    root = student(tmp_path)
    (root / LAB_FILE).unlink()
    os.mkfifo(root / LAB_FILE)
    with pytest.raises(ValueError, match="FIFO"):
        within(10, lambda: submissions.open_submission(str(root)))
    with pytest.raises(ValueError, match="FIFO"):
        within(10, lambda: submission_files.read_submission_file(root, LAB_FILE.parts))


def test_a_fifo_that_passes_the_first_check_is_still_not_waited_on(tmp_path, monkeypatch):
    """The file is swapped for a FIFO between the check and the open: O_NONBLOCK
    and the fstat of the open descriptor catch it."""
    root = student(tmp_path)
    (root / LAB_FILE).unlink()
    os.mkfifo(root / LAB_FILE)
    real, calls = submission_files.odd_kind, []

    def blind_first(st):
        calls.append(st)
        return None if len(calls) == 1 else real(st)

    monkeypatch.setattr(submission_files, "odd_kind", blind_first)
    with pytest.raises(ValueError, match="FIFO"):
        within(10, lambda: submission_files.read_submission_file(root, LAB_FILE.parts))


def test_a_device_node_is_refused(tmp_path):
    root = student(tmp_path)
    try:
        os.mknod(root / "labs" / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot make a device node here (needs root): {e}")
    refused(root, "labs/null", "device")


def test_a_socket_is_refused(tmp_path):
    root = student(tmp_path)
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(root / "labs" / "s"))
    except OSError as e:
        pytest.skip(f"cannot bind a socket there: {e}")
    try:
        refused(root, "labs/s", "socket")
    finally:
        s.close()


def test_a_lab_file_over_1_mib_is_refused(tmp_path):
    root = student(tmp_path)
    (root / LAB_FILE).write_bytes(b" " * (submission_files.MAX_FILE_BYTES + 1))
    refused(root, "labs/01_cpu_baseline/cpu_sum.cpp", "1 MiB")
    (root / LAB_FILE).write_bytes(b" " * submission_files.MAX_FILE_BYTES)
    submissions.open_submission(str(root))


def test_a_labs_tree_over_200_mib_is_refused(tmp_path):
    root = student(tmp_path)
    with open(root / "labs" / "big.bin", "wb") as f:  # sparse: no disk used
        f.truncate(submission_files.MAX_TREE_BYTES + 1)
    refused(root, "200 MiB")


def test_a_labs_tree_with_too_many_entries_is_refused(tmp_path, monkeypatch):
    root = student(tmp_path)
    count = sum(1 for _ in (root / "labs").rglob("*"))
    submissions.open_submission(str(root))
    monkeypatch.setattr(submission_files, "MAX_ENTRIES", count - 1)
    refused(root, f"more than {count - 1} files")


def test_install_and_hash_use_what_was_read_at_open_time(tmp_path):
    """A folder changed after it was checked (the student still has access) is not reread."""
    root = student(tmp_path)
    sub = submissions.open_submission(str(root))
    before = submissions.content_hash(sub, COURSE)
    (root / LAB_FILE).unlink()
    (root / LAB_FILE).symlink_to(SOLUTION)
    assert submissions.content_hash(sub, COURSE) == before
    submissions.install(sub, COURSE, REPO / "labs", tmp_path / "dest")
    assert "return 42;" in (tmp_path / "dest" / LAB01 / "cpu_sum.cpp").read_text()


def test_install_without_a_snapshot_reads_just_as_safely(tmp_path):
    root = student(tmp_path)
    (root / LAB_FILE).unlink()
    (root / LAB_FILE).symlink_to(SOLUTION)
    sub = submissions.Submission("stu", str(root), root / "labs")  # as old callers built it
    with pytest.raises(ValueError, match="symbolic link"):
        submissions.install(sub, COURSE, REPO / "labs", tmp_path / "dest")
    with pytest.raises(ValueError, match="symbolic link"):
        submissions.content_hash(sub, COURSE)


def test_install_notes_a_fence_that_is_not_a_block(tmp_path):
    root = student(tmp_path)
    p = root / LAB_FILE
    p.write_text(p.read_text().replace("  return 42;\n", "  return 42;\n} int evil() {\n"))
    sub = submissions.open_submission(str(root))
    notes = submissions.install(sub, COURSE, REPO / "labs", tmp_path / "dest")
    assert any(
        "fence sum_sequential was not used" in n and "closes a bracket" in n for n in notes
    ), notes
    text = (tmp_path / "dest" / LAB01 / "cpu_sum.cpp").read_text()
    assert "evil" not in text and TODO in text


# ------------------------------------------------------------------ archives


def zip_of(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3  # Unix: external_attr holds the mode
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, target)
    return path


def tar_of(
    path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None
) -> Path:
    with tarfile.open(path, "w:gz") as t:
        for info in members:
            body = (data or {}).get(info.name)
            if body is not None:
                info.size = len(body)
            t.addfile(info, io.BytesIO(body) if body is not None else None)
    return path


def lab_members(top: str) -> dict[str, bytes]:
    return {
        f"{top}/{f.relative_to(REPO)}": f.read_bytes()
        for f in (REPO / "labs").rglob("*")
        if f.is_file()
    }


def test_honest_archives_open(tmp_path):
    z = zip_of(tmp_path / "ann.zip", lab_members("ann"))
    t = tmp_path / "bea.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        tf.add(REPO / "labs", arcname="bea/labs")
    for spec, name in ((z, "ann"), (t, "bea")):
        sub = submissions.open_submission(str(spec))
        assert sub.student == name and sub.files[f"{LAB01}/cpu_sum.cpp"]


def test_a_zip_with_a_symlink_member_is_refused(tmp_path):
    z = zip_of(
        tmp_path / "z.zip",
        lab_members("z"),
        links={"z/labs/01_cpu_baseline/peek.cpp": str(SOLUTION)},
    )
    refused(z, "z/labs/01_cpu_baseline/peek.cpp", "symbolic link")


@pytest.mark.parametrize("name", ["/etc/evil", "z/../../evil", "..\\evil", "C:/evil"])
def test_a_zip_with_an_unsafe_path_is_refused(tmp_path, name):
    z = zip_of(tmp_path / "z.zip", {**lab_members("z"), name: b"x"})
    refused(z, "unsafe path", name)


def test_a_zip_that_unpacks_too_large_is_refused(tmp_path, monkeypatch):
    z = zip_of(tmp_path / "z.zip", lab_members("z"))
    monkeypatch.setattr(submission_files, "MAX_TREE_BYTES", 1000)
    refused(z, "unpacks to more than")


def test_a_tar_with_a_hardlink_member_is_refused(tmp_path):
    link = tarfile.TarInfo("t/labs/01_cpu_baseline/cpu_sum.cpp")
    link.type, link.linkname = tarfile.LNKTYPE, "t/labs/02_interleaved/reduce.cu"
    t = tar_of(tmp_path / "t.tar.gz", [link])
    refused(t, "t/labs/01_cpu_baseline/cpu_sum.cpp", "hard link")


def test_a_tar_with_a_symlink_or_device_member_is_refused(tmp_path):
    sym = tarfile.TarInfo("t/labs/01_cpu_baseline/cpu_sum.cpp")
    sym.type, sym.linkname = tarfile.SYMTYPE, str(SOLUTION)
    refused(tar_of(tmp_path / "s.tar.gz", [sym]), "symbolic link")
    dev = tarfile.TarInfo("t/labs/null")
    dev.type, dev.devmajor, dev.devminor = tarfile.CHRTYPE, 1, 3
    refused(tar_of(tmp_path / "d.tar.gz", [dev]), "t/labs/null", "not a plain file")
    fifo = tarfile.TarInfo("t/labs/pipe")
    fifo.type = tarfile.FIFOTYPE
    refused(tar_of(tmp_path / "f.tar.gz", [fifo]), "t/labs/pipe", "not a plain file")


def test_a_tar_with_an_unsafe_path_is_refused(tmp_path):
    for name in ("/tmp/evil", "t/../../evil"):
        info = tarfile.TarInfo(name)
        refused(tar_of(tmp_path / "u.tar.gz", [info], {name: b"x"}), "unsafe path")


def test_a_tar_bomb_is_refused_before_unpacking(tmp_path, monkeypatch):
    """More members than the limit: refused from the headers, nothing unpacked."""
    names = [f"t/labs/junk/{i}" for i in range(submission_files.MAX_ENTRIES + 1)]
    t = tar_of(
        tmp_path / "bomb.tar.gz", [tarfile.TarInfo(n) for n in names], {n: b"" for n in names}
    )
    unpacked = []
    monkeypatch.setattr(tarfile.TarFile, "extractall", lambda *a, **k: unpacked.append(a))
    refused(t, f"more than {submission_files.MAX_ENTRIES} members")
    assert unpacked == []


def test_a_tar_that_unpacks_too_large_is_refused(tmp_path, monkeypatch):
    name = "t/labs/junk.bin"
    t = tar_of(tmp_path / "big.tar.gz", [tarfile.TarInfo(name)], {name: b"\0" * 4096})
    monkeypatch.setattr(submission_files, "MAX_TREE_BYTES", 1000)
    refused(t, "unpacks to more than")


# ------------------------------------------------------------------ git


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="no git here")
def test_a_git_clone_is_scanned_like_a_folder(tmp_path):
    work = student(tmp_path, "work")
    git("init", "-q", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-qm", "honest", cwd=work)
    bare = tmp_path / "repos" / "gus.git"
    git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    sub = submissions.open_submission(str(bare))
    assert sub.student == "gus" and b"return 42;" in sub.files[f"{LAB01}/cpu_sum.cpp"]
    sub.workdir.cleanup()
    (work / LAB_FILE).unlink()
    (work / LAB_FILE).symlink_to(SOLUTION)
    git("add", "-A", cwd=work)
    git("commit", "-qm", "peek", cwd=work)
    git("push", "-q", str(bare), "HEAD:refs/heads/master", "HEAD:refs/heads/main", cwd=work)
    refused(bare, "labs/01_cpu_baseline/cpu_sum.cpp", "symbolic link")


# ------------------------------------------------------------------ student ids


def test_ids_keep_unicode_letters_and_stay_distinct():
    assert submissions.student_name("/subs/张三.zip") == "张三"
    assert submissions.student_name("/subs/李四.tar.gz") == "李四"
    assert submissions.student_ids(["/subs/张三.zip", "/subs/李四.tgz"]) == {
        "/subs/张三.zip": "张三",
        "/subs/李四.tgz": "李四",
    }


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("/subs/ann", "ann"),
        ("/subs/ann/", "ann"),
        ("/subs/bea.zip", "bea"),
        ("/subs/cid.tar", "cid"),
        ("/subs/dan.tgz", "dan"),
        ("/subs/eve.tar.gz", "eve"),
        ("https://git.example.edu/fay/cuda-labs.git", "cuda-labs"),
        ("https://git.example.edu/fay/", "fay"),
        ("git@example.edu:gus/labs-gus.git", "labs-gus"),
        ("/subs/hal/.git", "hal"),
        ("/subs/o'brien & co", "o_brien___co"),
        ("/subs/..", "student"),
        ("/", "student"),
        ("/subs/-rf", "_-rf"),
        ("/subs/.hidden", "_.hidden"),
        ("/subs/a\nb", "a_b"),
    ],
)
def test_ids_are_readable_and_safe_folder_names(spec, expected):
    sid = submissions.student_name(spec)
    if expected is not None:
        assert sid == expected
    assert sid and sid not in (".", "..") and "/" not in sid and "\0" not in sid
    assert not sid.startswith((".", "-")) and len(sid.encode()) <= submissions.MAX_ID_BYTES


def test_a_long_name_is_cut_to_a_safe_length():
    sid = submissions.student_name("/subs/" + "张" * 200)
    assert len(sid.encode()) <= submissions.MAX_ID_BYTES and set(sid) == {"张"}


def test_ids_are_stable_whatever_else_is_in_the_batch():
    alone = submissions.student_ids(["/b/bob"])
    together = submissions.student_ids(["/a/alice", "/b/bob", "/c/carl"])
    assert alone["/b/bob"] == together["/b/bob"] == "bob"


def test_one_folder_spelled_several_ways_is_one_submission(tmp_path, monkeypatch):
    folder = tmp_path / "ann"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    ids = submissions.student_ids([str(folder), str(folder) + "/", "ann", "./ann/"])
    assert ids == {str(folder): "ann"}


@pytest.mark.parametrize(
    "a, b",
    [
        ("/a/stu01", "/b/stu01"),
        (
            "https://git.example.edu/alice/cuda-labs.git",
            "https://git.example.edu/bob/cuda-labs.git",
        ),
        ("/a/Alice", "/b/alice"),  # one folder on a case-insensitive file system
        (
            "/a/" + unicodedata.normalize("NFC", "José"),
            "/b/" + unicodedata.normalize("NFD", "José"),
        ),
    ],
)
def test_two_submissions_with_one_id_are_refused(a, b):
    with pytest.raises(ValueError) as e:
        submissions.student_ids([a, b])
    assert a in str(e.value) and b in str(e.value)
    assert "rename one" in str(e.value) and "roster" in str(e.value)


def test_a_roster_settles_a_clash():
    a, b = (
        "https://git.example.edu/alice/cuda-labs.git",
        "https://git.example.edu/bob/cuda-labs.git",
    )
    ids = submissions.student_ids([a, b], roster={a: "alice", b + "/": "bob"})
    assert ids == {a: "alice", b: "bob"}


def test_a_roster_is_normalised_and_may_be_partial(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x1").mkdir()
    ids = submissions.student_ids(["x1/", "/subs/carl"], roster={str(tmp_path / "x1"): "ann"})
    assert ids == {"x1/": "ann", "/subs/carl": "carl"}


@pytest.mark.parametrize("bad", ["", ".", "..", "../evil", "a/b", "-rf", ".hidden", "a b"])
def test_a_roster_id_must_be_a_safe_folder_name(bad):
    with pytest.raises(ValueError, match="not a safe folder name"):
        submissions.student_ids(["/a/x"], roster={"/a/x": bad})


def test_a_roster_id_must_be_unique():
    with pytest.raises(ValueError, match="given to both"):
        submissions.student_ids(["/a/x", "/b/y"], roster={"/a/x": "ann", "/b/y": "ann"})
    with pytest.raises(ValueError, match="would both be graded"):  # a derived id clashes
        submissions.student_ids(["/a/x", "/b/ann"], roster={"/a/x": "ann"})


def test_open_submission_takes_the_id_it_is_given(tmp_path):
    root = student(tmp_path, "stu01")
    assert submissions.open_submission(str(root), student="ann").student == "ann"


def test_a_roster_file_is_csv(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "submission,student_id\n# a comment\n\n/a/x, ann\n"
        "https://git.example.edu/张三/labs.git,张三\n",
        encoding="utf-8",
    )
    assert submissions.read_roster(roster) == {
        "/a/x": "ann",
        "https://git.example.edu/张三/labs.git": "张三",
    }
    roster.write_text("/a/x,ann,extra\n")
    with pytest.raises(ValueError, match="roster.csv:1: expected"):
        submissions.read_roster(roster)
    roster.write_text("/a/x,ann\n/a/x,bob\n")
    with pytest.raises(ValueError, match="two ids"):
        submissions.read_roster(roster)


def test_looks_remote():
    assert submissions.looks_remote("https://git.example.edu/a/labs.git")
    assert submissions.looks_remote("git@example.edu:a/labs.git")
    assert not submissions.looks_remote("/subs/a") and not submissions.looks_remote("a.zip")
