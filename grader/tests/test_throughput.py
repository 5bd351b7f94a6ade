"""tests/submissions/throughput.py's steady rate: labs that end after the batch
was interrupted were killed, not graded, and do not count."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "submissions" / "throughput.py"


def _throughput():
    spec = importlib.util.spec_from_file_location("throughput", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOG = """[trace +10.0 s] w0 a 02_interleaved: graded {}
[trace +12.0 s] w0 prepared
[trace +20.0 s] w1 b 02_interleaved: graded {}
[trace +30.0 s] w0 a 04_sequential_addressing: graded {}
[trace +31.0 s] interrupted
[trace +32.0 s] w1 b 04_sequential_addressing: error {}
[trace +33.0 s] w2 c 02_interleaved: error {}
"""


def test_only_labs_before_the_interrupt_count():
    rate = _throughput().steady_rate(LOG)
    assert rate == {"student_labs": 2, "seconds": 20.0, "per_hour": 360}


def test_a_batch_that_ran_to_its_end_counts_every_lab():
    rate = _throughput().steady_rate(LOG.replace("interrupted", "w9 prepared"))
    assert rate == {"student_labs": 4, "seconds": 23.0, "per_hour": 626}
