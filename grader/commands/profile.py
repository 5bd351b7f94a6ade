"""`profile NN`: the student's kernel under Nsight Compute (ncu), beside the
reference solution and the previous lab's, on the few metrics the lab is about.

GB/s says how fast a kernel is; these counters say why. Each lab's bench
program (tests/bench/bench_main.cu) runs one checked call and then one more
between cudaProfilerStart and cudaProfilerStop; `ncu --profile-from-start off`
measures exactly the kernels of that call, and the counters are summed over
them (ratios from summed counters, percentages weighted by each kernel's time).

Where the reference solutions are present (the instructor's repository) they
are profiled live on the same GPU; in a student release the reference columns
come from the committed run REFERENCE_RUN, labelled with its GPU.

Exit codes beside the grader's usual ones (grader/cli.py): 4 no GPU here,
5 this user may not read the GPU's performance counters (ERR_NVGPUCTRPERM)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from .. import labmeta
from ..engine import predictions
from ..infra import evidence, log, proc, toolchain
from ..infra.evidence import ProfileFile, ProfileMachine
from ..status import ProfileStatus
from ..engine.profile_ncu import (
    COMMON,
    EXIT_NO_GPU,
    METRICS,
    Profile,
    ProfileError,
    find_ncu,
    profile_binary,
)

REFERENCE_RUN = toolchain.REPO / "tests" / "gpu_runs" / "h200" / "profile.json"


# --- ncu ---------------------------------------------------------------------------


# --- which programs ----------------------------------------------------------------


def previous_bench(
    course: labmeta.Course,
    lab: labmeta.Lab,
    contract_of: Callable[[str], str],
    names_of: Callable[[str], list[str]],
    bench: str,
) -> str | None:
    """The bench to compare `bench` with: the nearest earlier GPU lab with a bench
    of the same contract, else the previous GPU lab's first bench."""
    gpu_labs = [x for x in course.labs if x.needs_gpu and not x.spans_gpus]
    earlier = gpu_labs[: gpu_labs.index(lab)] if lab in gpu_labs else []
    want = contract_of(bench)
    for x in reversed(earlier):
        for name in names_of(x.id):
            if contract_of(name) == want:
                return name
    if earlier:
        names = names_of(earlier[-1].id)
        return names[0] if names else None
    return None


def bench_names(lab: labmeta.Lab) -> list[str]:
    """bench program names of a lab, as tests/meson.build makes them."""
    suffixes = {"gpu_sum_max": ["-sum", "-max"]}.get(lab.kind, [""])
    return [lab.id + s for s in suffixes]


def contract_of(course: labmeta.Course, name: str) -> str:
    if name.endswith("-max"):
        return "max"
    if name.endswith("-sum"):
        return "sum"
    lab_id = name
    kind = next((x.kind for x in course.labs if x.id == lab_id), "")
    return {"gpu_sum": "sum", "gpu_max": "max", "gpu_float_sum": "float sum"}.get(kind, kind)


def lab_of(course: labmeta.Course, name: str) -> labmeta.Lab:
    return next(x for x in course.labs if name == x.id or name.startswith(x.id + "-"))


# --- the command -------------------------------------------------------------------


def load_reference_run(path: Path = REFERENCE_RUN) -> ProfileFile | None:
    """The committed references, through the evidence schema (the file from before
    the schema reads through its adapter)."""
    return evidence.load(path, ProfileFile) if path.exists() else None


def _reference(
    name: str,
    build_dir: Path,
    live: bool,
    committed: ProfileFile | None,
    log2n: int,
    timeout: float,
    progress,
) -> Profile | None:
    if live:
        binary = build_dir / "tests" / f"bench-{name}"
        progress(f"[profile] {name}: the reference under ncu ...")
        return profile_binary(binary, "reference", log2n, timeout)
    entry = committed.profiles.get(name) if committed else None
    if not entry or committed is None:
        return None
    p = Profile.from_dict(entry)
    p.source = (
        f"the committed run on {p.device or 'the course GPU'} (commit "
        f"{committed.machine.commit[:7] or '?'}), not this GPU"
    )
    return p


@dataclass(frozen=True)
class ProfileOptions:
    """What `profile` is asked for, beside the labs: the command line's options."""

    build_dir: Path
    arch: str | None  # gpu_arch for meson; None: the build folder's
    log2n: int
    impl: str  # "labs" (the student's) or "solutions" (profiled as theirs)
    json_path: Path
    timeout: float  # seconds per program under ncu
    references_only: bool = False  # the committed run's shape: references alone


def run(lab_ids: list[str], options: ProfileOptions, progress=log.progress) -> int:
    """`profile`: build, profile, print the table, write JSON. Returns the exit code."""
    from ..infra.gpus import visible_gpus

    course = labmeta.load()
    labs = _labs_asked(course, lab_ids)
    if not visible_gpus():
        print("profile needs an NVIDIA GPU (nvidia-smi lists none here): nothing profiled")
        return EXIT_NO_GPU
    find_ncu()
    live = (toolchain.REPO / "solutions").is_dir()
    committed = None if live else load_reference_run()
    toolchain.configure(options.build_dir, [f"-Dgpu_arch={options.arch}"] if options.arch else None)

    names = [name for lab in labs for name in bench_names(lab)]
    previous = {
        name: previous_bench(
            course,
            lab_of(course, name),
            lambda b: contract_of(course, b),
            lambda i: bench_names(course.lab(i)),
            name,
        )
        for name in names
    }
    if not _build(names, previous, options, live, progress):
        return 1
    if not live and committed is None:
        print(
            f"note: no reference profile here ({REFERENCE_RUN.relative_to(toolchain.REPO)} is "
            "missing): only your own columns are shown"
        )
    try:
        results = _profile_all(names, previous, options, live, committed, progress)
    except ProfileError as e:
        print(str(e))
        return e.exit_code
    _write_json(results, options)
    _print_report(course, results, previous, options)
    judged = [
        row.get("yours" if not options.references_only else "reference") for row in results.values()
    ]
    return 1 if any(p is None or p.status != ProfileStatus.OK for p in judged) else 0


def _labs_asked(course: labmeta.Course, lab_ids: list[str]) -> list[labmeta.Lab]:
    """The labs named (default: every GPU lab of one GPU); a CPU lab is a usage
    error, since it has no kernel to profile."""
    labs = (
        [course.lab(x) for x in lab_ids]
        if lab_ids
        else [x for x in course.labs if x.needs_gpu and not x.spans_gpus]
    )
    cpu = [x.id for x in labs if not x.needs_gpu]
    if cpu:
        raise ValueError(
            f"{', '.join(cpu)} runs on the CPU: there is no GPU kernel to profile "
            "(its handout shows how to time it)"
        )
    return labs


def _mine_prefix(options: ProfileOptions) -> str:
    return "bench-" if options.impl == "solutions" else "labs-bench-"


def _build(
    names: list[str],
    previous: dict[str, str | None],
    options: ProfileOptions,
    live: bool,
    progress,
) -> bool:
    """Build the student's bench programs and, where the references are here,
    theirs and the previous labs'; print the first errors of a failed build."""
    targets = [] if options.references_only else [_mine_prefix(options) + n for n in names]
    if live:
        targets += [f"bench-{x}" for x in set(names) | {p for p in previous.values() if p}]
    progress(f"[profile] building {len(targets)} program(s) ...")
    built = toolchain.build(options.build_dir, sorted(set(targets)))
    if not built.ok:
        print(f"build failed:\n{built.first_errors}")
    return built.ok


def _profile_all(
    names: list[str],
    previous: dict[str, str | None],
    options: ProfileOptions,
    live: bool,
    committed: ProfileFile | None,
    progress,
) -> dict[str, dict[str, Profile | None]]:
    """Each bench's row: the student's profile, the reference's and the previous
    lab's (each reference profiled once however many rows show it)."""
    results: dict[str, dict[str, Profile | None]] = {}
    cache: dict[str, Profile | None] = {}
    for name in names:
        row: dict[str, Profile | None] = {}
        if not options.references_only:
            progress(f"[profile] {name}: your kernel under ncu ...")
            row["yours"] = profile_binary(
                options.build_dir / "tests" / (_mine_prefix(options) + name),
                "yours" if options.impl == "labs" else "solutions/",
                options.log2n,
                options.timeout,
            )
        for key, which in (("reference", name), ("previous", previous[name])):
            if which is None:
                continue
            if which not in cache:
                cache[which] = _reference(
                    which,
                    options.build_dir,
                    live,
                    committed,
                    options.log2n,
                    options.timeout,
                    progress,
                )
            row[key] = cache[which]
        results[name] = row
    return results


def _write_json(results: dict[str, dict[str, Profile | None]], options: ProfileOptions) -> None:
    options.json_path.parent.mkdir(parents=True, exist_ok=True)
    if options.references_only:
        # The committed run's shape: one reference profile per bench, what a
        # student release reads for its reference columns.
        body = {
            name: asdict(ref)
            for name, row in results.items()
            if (ref := row.get("reference")) is not None
        }
    else:
        body = {
            name: {k: asdict(p) if p else None for k, p in row.items()}
            for name, row in results.items()
        }
    file = ProfileFile(machine=machine_info(), log2n=options.log2n, profiles=body)
    evidence.dump(file, options.json_path)


def _print_report(
    course: labmeta.Course,
    results: dict[str, dict[str, Profile | None]],
    previous: dict[str, str | None],
    options: ProfileOptions,
) -> None:
    for name, row in results.items():
        print()
        lab = lab_of(course, name)
        said = predictions.read(toolchain.REPO / options.impl / lab.id)
        print(table(course, name, row, previous[name], said))
        for note in said.notes:
            print(f"  note: {note}")
    print()
    print(meanings(shown_metrics(course, results)))
    print(f"\nreport: {options.json_path}")


def machine_info() -> ProfileMachine:
    from ..infra.gpus import visible

    gpu = next(iter(visible()), None)
    done = proc.run([find_ncu(), "--version"], timeout=60)
    return ProfileMachine(
        gpu=gpu.name if gpu else "",
        commit=toolchain.git_commit(),
        ncu=done.output.strip().splitlines()[-1] if done.ok and done.output.strip() else "",
    )


def table(
    course: labmeta.Course,
    name: str,
    row: dict[str, Profile | None],
    previous: str | None,
    said: predictions.Predictions | None = None,
) -> str:
    """The lab's rows, one column per profile, and beside a row the student's
    prediction of it (from their ANSWERS.md), when they made one."""
    lab = lab_of(course, name)
    keys = list(COMMON) + [k for k in lab.profile if k not in COMMON]
    columns: list[tuple[str, Profile]] = []
    for key, title in (
        ("yours", "yours"),
        ("reference", "reference"),
        ("previous", f"{previous} (ref.)" if previous else ""),
    ):
        if (p := row.get(key)) is not None:
            columns.append((title, p))
    any_p = next((p for _, p in columns), None)
    head = (
        f"{name}: one call on 2^{any_p.log2n if any_p else '?'} elements under Nsight "
        f"Compute" + (f", {any_p.device}" if any_p and any_p.device else "")
    )
    lines = [head]
    for title, p in columns:
        if p.status != ProfileStatus.OK:
            why = {
                ProfileStatus.NOT_IMPLEMENTED: "still the skeleton (its TODO ran): nothing to profile",
                ProfileStatus.WRONG: f"WRONG RESULT ({p.detail}): profiled all the same; fix it first "
                "(grade it for the failing case)",
                ProfileStatus.ERROR: f"not profiled: {p.detail}",
            }.get(p.status, p.status)
            lines.append(f"  {title}: {why}")
        if p.source not in ("yours", "reference", "solutions/"):
            lines.append(f"  {title}: {p.source}")
    width = max(len(METRICS[k].label) for k in keys)
    shown = [(t, p) for t, p in columns if p.metrics]
    lines.append("")
    lines.append(f"  {'':{width}}" + "".join(f"  {t:>16}" for t, _ in shown))
    for k in keys:
        m = METRICS[k]
        cells = []
        for _, p in shown:
            v = p.metrics.get(k)
            cells.append(f"  {'-' if v is None else f'{v:,.{m.digits}f}':>16}")
        beside = predictions.beside_counter(said, k) if said else ""
        lines.append(f"  {m.label:{width}}" + "".join(cells) + (f"  {beside}" if beside else ""))
    return "\n".join(lines)


def shown_metrics(course: labmeta.Course, names) -> list[str]:
    keys = list(COMMON)
    for name in names:
        keys += [k for k in lab_of(course, name).profile if k not in keys]
    return keys


def meanings(keys: list[str]) -> str:
    return "what the rows mean:\n" + "\n".join(
        f"  - {METRICS[k].label}: {METRICS[k].means}" for k in keys
    )
