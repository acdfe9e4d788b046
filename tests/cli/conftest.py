"""A language-model run shared by the train, generate and evaluate tests (trained once)."""
import pytest

from tests.cli.helpers import train_shakespeare


@pytest.fixture(scope="session")
def shakespeare_run(tmp_path_factory):
    """The folder of a finished 50-iteration run (evaluations at 0, 10, ..., 50), whose cosine
    was planned for 70 iterations, so that a resume to 70 repeats an uninterrupted run."""
    out = tmp_path_factory.mktemp("shakespeare")
    assert train_shakespeare(out, "--max-iters", "50", "--lr-decay-iters", "70") == 0
    return out
