"""``benchmarks/run.py``'s options, checked before anything runs."""

from __future__ import annotations

import pytest
import run


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--repeats", "0"], "--repeats needs an integer >= 1 (the rounds measured), got 0"),
        (["--warmup", "-1"], "--warmup needs an integer >= 0, got -1"),
    ],
)
def test_a_count_of_rounds_out_of_range_is_refused(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """--repeats 0 was accepted: a run measured nothing and its tables had no rows."""
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--no-peers", *argv])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: {said}\n")


@pytest.mark.timeout(30)
def test_no_plots_says_what_it_leaves_out(capsys: pytest.CaptureFixture[str]) -> None:
    """--no-plots was listed without a word of what it does."""
    with pytest.raises(SystemExit):
        run.main(["--help"])
    words = " ".join(capsys.readouterr().out.split())
    assert "--no-plots write the tables and README, not the PNG plots (made with matplotlib)" in words
