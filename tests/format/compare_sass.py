#!/usr/bin/env python3
"""Shows that a change of source layout (the clang-format commit) changed no
GPU machine code: every .cu compilation of the build (labs/, solutions/,
tests/, common/, the mutants made from the solutions), compiled at two
commits for sm_90 with the build's own flags, gives the same SASS.

Each commit is written out (every file, as git holds it) into a scratch folder and
configured with meson (-Dgpu_arch=sm_90); each .cu line of its
compile_commands.json is run again with `-cubin` in place of `-c`, so nvcc
compiles the device code only. `cuobjdump -sass` of the two cubins (offsets,
encodings and every instruction kept) must be equal, and so must
`cuobjdump -res-usage` (registers, shared, stack, constant banks). Line
numbers (from -lineinfo, or __LINE__ in CUDA_CHECK) live in host code and in
debug-line sections, neither of which is compared. cuobjdump disassembles
with nvdisasm, looked for beside it first (pip install nvidia-cuda-nvdisasm);
a unit whose SASS lists fewer kernels than its resource usage, or a kernel
without instructions, is an error, never "same".

With --keep, a scratch folder of an earlier run of the same two commits is
reused: its trees, and the cubins that were finished (nvcc writes each to
a .part file, renamed when it succeeds).

With --after-build, the after side is the .cu objects of an existing build of
AFTER (meson -Dgpu_arch=sm_90, built; its C++ sources must be AFTER's) instead
of cubins compiled again: the same compilation with -c, whose fat binary
holds the same sm_90 code, so the SASS is compared less the fat binary's
headers.

usage: compare_sass.py BEFORE AFTER --cuobjdump PATH [--after-build DIR] [--out FILE]
                       [--jobs N] [--keep DIR]
exit 0 when every unit is the same, 1 when any differs or fails to compile,
2 on bad usage or set-up (no meson, no nvcc, a commit git cannot export)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Options of compile_commands.json that name dependency or object files: the
# cubin takes their place.
DROP_WITH_VALUE = {"-MT", "-MF", "-o"}
DROP_ALONE = {"-MD", "-c"}


@dataclass(frozen=True)
class Unit:
    key: str  # the object file the build would write: unique per compilation
    source: str
    directory: Path
    argv: tuple[str, ...]  # the nvcc command that writes the cubin; () for a built object
    artifact: Path  # the cubin, or the build's object file


# cuobjdump's headers of an object file's fat binary (the cubin has none) and
# its line for the embedded PTX, which -sass does not disassemble.
FATBIN_HEADER = re.compile(
    r"^(Fatbin (elf|ptx) code:|=+$|arch = |code version = |host = |"
    r"compile_size = |identifier = |compressed$|ptxasOptions = )"
)
# The names nvcc gives an anonymous namespace, and (with -rdc) a function of
# internal linkage, carry a hash of the source's absolute path (the same file
# at two paths gets two names; two layouts of it at one path get one): the two
# trees differ there by where they lie, not by their code.
PATH_HASH = re.compile(r"(_GLOBAL__N__|__nv_static_\d+__)[0-9a-f]{8}_")


class SetupError(RuntimeError):
    pass


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, text=True, capture_output=True)


def export(rev: str, dest: Path) -> str:
    """Writes commit `rev` into dest (kept where an earlier run wrote the same
    commit there); returns its full hash."""
    full = run(["git", "rev-parse", "--verify", rev + "^{commit}"], REPO)
    if full.returncode != 0:
        raise SetupError(f"git cannot find commit {rev!r}: {full.stderr.strip()}")
    stamp = dest / ".exported-commit"
    if stamp.is_file() and stamp.read_text() == full.stdout.strip():
        return full.stdout.strip()
    if dest.exists():
        raise SetupError(f"{dest} holds something other than commit {rev}; use an empty --keep")
    dest.mkdir(parents=True)
    # Every file of the commit: `git archive` would honour .gitattributes'
    # export-ignore and leave out solutions/, the mutants and the sweeps. A
    # temporary index keeps the checkout's own index untouched.
    index = {**os.environ, "GIT_INDEX_FILE": str(dest.parent / f".{dest.name}.index")}
    for cmd in (
        ["git", "read-tree", full.stdout.strip()],
        ["git", "checkout-index", "--all", f"--prefix={dest}/"],
    ):
        done = subprocess.run(cmd, cwd=REPO, env=index, text=True, capture_output=True)
        if done.returncode != 0:
            raise SetupError(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    stamp.write_text(full.stdout.strip())
    return full.stdout.strip()


def cubin_argv(command: str, cubin: Path) -> tuple[str, ...]:
    words = shlex.split(command)
    out: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
        elif w in DROP_WITH_VALUE:
            skip = True
        elif w not in DROP_ALONE:
            out.append(w)
    return (*out, "-cubin", "-o", str(cubin))


def configure(tree: Path) -> list[Unit]:
    """meson setup for sm_90; the .cu compilations, their generated sources made."""
    build = tree / "b"
    setup = run(
        ["meson", "setup", str(build), "-Dgpu_arch=sm_90", "-Dslides=disabled"]
        + (["--reconfigure"] if (build / "build.ninja").exists() else []),
        tree,
    )
    if setup.returncode != 0:
        raise SetupError(f"meson setup in {tree} failed:\n{setup.stdout[-3000:]}{setup.stderr}")
    units, generated = [], []
    for entry in json.loads((build / "compile_commands.json").read_text()):
        if not entry["file"].endswith(".cu"):
            continue
        key = shlex.split(entry["command"])[shlex.split(entry["command"]).index("-o") + 1]
        if not (Path(entry["directory"]) / entry["file"]).exists():
            generated.append(entry["file"])  # a mutant: made from its solution by ninja
        cubin = build / "cubins" / (key + ".cubin")
        units.append(
            Unit(
                key,
                entry["file"],
                Path(entry["directory"]),
                cubin_argv(entry["command"], cubin),
                cubin,
            )
        )
    if generated:
        made = run(["ninja", "-C", str(build), *generated], tree)
        if made.returncode != 0:
            raise SetupError(f"ninja could not make the generated sources:\n{made.stdout[-3000:]}")
    return units


def built_objects(build: Path, rev: str) -> list[Unit]:
    """The .cu objects of an existing build of commit `rev` (meson, -Dgpu_arch=sm_90, built):
    the same compilations as a cubin each, without compiling them again."""
    commands = build / "compile_commands.json"
    if not commands.is_file():
        raise SetupError(f"{build} is not a meson build folder (no compile_commands.json)")
    entries = [e for e in json.loads(commands.read_text()) if e["file"].endswith(".cu")]
    if any("-arch=sm_90" not in shlex.split(e["command"]) for e in entries):
        raise SetupError(f"{build} is not configured with -Dgpu_arch=sm_90")
    info = json.loads((build / "meson-info" / "meson-info.json").read_text())
    source = Path(info["directories"]["source"])
    changed = run(
        [
            "git",
            "diff",
            "--name-only",
            rev,
            "--",
            "common",
            "labs",
            "solutions",
            "tests",
            ":!tests/format",
        ],
        source,
    )
    if changed.returncode != 0 or changed.stdout.strip():
        raise SetupError(
            f"the sources of {build} ({source}) are not those of {rev}: "
            f"{changed.stdout.split() or changed.stderr.strip()}"
        )
    units = []
    for e in entries:
        key = shlex.split(e["command"])[shlex.split(e["command"]).index("-o") + 1]
        units.append(Unit(key, e["file"], Path(e["directory"]), (), Path(e["directory"]) / key))
    # Objects of targets not built by default (labs-bench-*), or not built yet.
    missing = [u.key for u in units if not u.artifact.is_file()]
    if missing:
        made = run(["ninja", "-C", str(build.resolve()), *missing], build)
        if made.returncode != 0:
            raise SetupError(
                f"ninja -C {build} could not build {len(missing)} objects:\n{made.stdout[-3000:]}"
            )
    return units


def normalised(text: str) -> str:
    kept = [
        PATH_HASH.sub(r"\1(path)_", line)
        for line in text.splitlines()
        if line.strip() and not FATBIN_HEADER.match(line)
    ]
    return "\n".join(kept) + "\n"


def compile_and_dump(unit: Unit, cuobjdump: str) -> dict[str, str]:
    out = unit.artifact
    if unit.argv and not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        part = out.with_name(out.name + ".part")
        built = run([*unit.argv[:-1], str(part)], unit.directory)
        if built.returncode != 0:
            return {"error": f"nvcc failed:\n{built.stderr[-2000:]}"}
        part.rename(out)
    # nvdisasm, which cuobjdump runs for -sass, sits beside it in the pip package.
    env = {**os.environ, "PATH": f"{Path(cuobjdump).parent}{os.pathsep}{os.environ['PATH']}"}
    dumps = {}
    for what in ("-sass", "-res-usage"):
        d = subprocess.run(
            [cuobjdump, what, str(out)], cwd=unit.directory, env=env, text=True, capture_output=True
        )
        if d.returncode != 0:
            return {"error": f"cuobjdump {what} failed: {d.stderr.strip()}"}
        dumps[what] = normalised(d.stdout.replace(str(out), "FILE"))
    kernels = functions(dumps["-sass"])
    listed = sum(
        1 for line in dumps["-res-usage"].splitlines() if line.strip().startswith("Function ")
    )
    if kernels != listed or dumps["-sass"].count("/*0000*/") < kernels:
        return {
            "error": f"cuobjdump -sass shows {kernels} functions with code, -res-usage "
            f"lists {listed}: the disassembly is incomplete"
        }
    return dumps


def functions(sass: str) -> int:
    return sum(1 for line in sass.splitlines() if line.strip().startswith("Function :"))


def compare(
    before: str, after: str, cuobjdump: str, jobs: int, scratch: Path, after_build: Path | None
) -> tuple[list[str], bool]:
    full = {"before": export(before, scratch / "before")}
    units = {"before": configure(scratch / "before")}
    if after_build is None:
        full["after"] = export(after, scratch / "after")
        units["after"] = configure(scratch / "after")
        how = "both: nvcc -cubin with each unit's flags from compile_commands.json"
    else:
        full["after"] = run(["git", "rev-parse", after + "^{commit}"], REPO).stdout.strip()
        units["after"] = built_objects(after_build, full["after"])
        how = (
            "before: nvcc -cubin with each unit's flags from compile_commands.json; after: "
            "the objects of the build of the after commit (same flags, -c)"
        )
    keys = {name: {u.key: u for u in us} for name, us in units.items()}
    version = run([cuobjdump, "--version"], scratch).stdout.split()[-1]
    lines = [
        f"before {full['before']}",
        f"after  {full['after']}",
        f"device code for sm_90, {how}; cuobjdump {version} -sass and -res-usage compared "
        "as printed, less the fat binary's headers and the hash of the tree's path in "
        "the names of anonymous namespaces and -rdc statics",
        "",
    ]
    ok = True
    for key in sorted(set(keys["before"]) ^ set(keys["after"])):
        lines.append(f"ONLY-IN-{'BEFORE' if key in keys['before'] else 'AFTER'} {key}")
        ok = False
    common = sorted(set(keys["before"]) & set(keys["after"]))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        dumps = {
            name: dict(
                zip(
                    common,
                    pool.map(lambda k, n=name: compile_and_dump(keys[n][k], cuobjdump), common),
                )
            )
            for name in ("before", "after")
        }
    same = 0
    for key in common:
        b, a = dumps["before"][key], dumps["after"][key]
        source = keys["before"][key].source
        if "error" in b or "error" in a:
            lines.append(f"ERROR   {source} ({key}): {b.get('error') or a.get('error')}")
            ok = False
        elif b == a:
            digest = hashlib.sha256(a["-sass"].encode()).hexdigest()[:16]
            lines.append(
                f"same    {source}  [{key}]  {functions(a['-sass'])} kernels, sass sha256 {digest}"
            )
            same += 1
        else:
            what = [w for w in ("-sass", "-res-usage") if a[w] != b[w]]
            lines.append(f"DIFFERS {source}  [{key}]  in cuobjdump {' and '.join(what)}")
            ok = False
    lines.append("")
    lines.append(
        f"{same} of {len(common)} compilation units: identical device code"
        + ("" if ok else "; NOT all identical")
    )
    return lines, ok


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument(
        "--cuobjdump",
        required=True,
        help="cuobjdump binary (pip install nvidia-cuda-cuobjdump puts one in "
        "site-packages/nvidia/cu13/bin)",
    )
    p.add_argument("--out", type=Path, help="also write the result here")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument(
        "--after-build",
        type=Path,
        help="a meson build folder (-Dgpu_arch=sm_90, built) of AFTER whose .cu "
        "objects stand for the after side: saves compiling them again",
    )
    p.add_argument(
        "--keep",
        type=Path,
        help="scratch folder to use and keep (default: a temporary one, removed)",
    )
    args = p.parse_args(argv)
    for tool in ("meson", "ninja", "nvcc", "git"):
        if shutil.which(tool) is None:
            print(f"compare_sass: {tool} is not on PATH", file=sys.stderr)
            return 2
    if not os.access(args.cuobjdump, os.X_OK):
        print(f"compare_sass: {args.cuobjdump} is not an executable cuobjdump", file=sys.stderr)
        return 2
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="compare-sass-"))
    try:
        lines, ok = compare(
            args.before, args.after, args.cuobjdump, args.jobs, scratch, args.after_build
        )
    except SetupError as e:
        print(f"compare_sass: {e}", file=sys.stderr)
        return 2
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
