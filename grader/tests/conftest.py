import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def honest(root: Path, name: str) -> Path:
    """A submission that is the reference solutions: a student who did the work."""
    import shutil
    shutil.copytree(Path(__file__).resolve().parents[2] / "solutions", root / name / "labs",
                    ignore=shutil.ignore_patterns("README.md"))
    return root / name
