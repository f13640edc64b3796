"""The `rstreams` command under the mistakes a first user makes: one line naming what to change,
exit 2, no traceback, no hang."""

from __future__ import annotations

import pytest

from rstreams.cli import main


@pytest.mark.timeout(30)
def test_an_empty_log_name_is_refused_not_served_as_the_demo_publishers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`rstreams serve URL "$LOG"` with LOG unset: NAME is '', a log's name it refuses; it served
    the built-in publishers instead, as if no NAME had been given."""
    assert main(["serve", "tcp://127.0.0.1:0", ""]) == 2
    assert capsys.readouterr().err == (
        "rstreams serve: NAME '': a log's name is not empty and has no '?' (readers add ?from=A&to=B to it)\n"
    )


@pytest.mark.timeout(30)
def test_a_misspelt_command_or_a_url_first_is_told_what_to_write(capsys: pytest.CaptureFixture[str]) -> None:
    """A command that is none of them gets the nearest one; a URL where the command goes gets the
    order (argparse listed only the commands)."""
    for argv, hint in (
        (["serv", "tcp://127.0.0.1:0"], "; did you mean serve?"),
        (["Subscribe", "tcp://h:1", "x"], "; did you mean subscribe?"),
        (
            ["tcp://h:1", "counter"],
            "; the command comes first: rstreams subscribe tcp://h:1 NAME (or serve, ping, top)",
        ),
        (["bogus"], ""),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"rstreams: argument command: invalid choice: '{argv[0]}' (choose from ")
        assert err.endswith(f"'top'){hint} (see rstreams --help)\n"), err


@pytest.mark.timeout(30)
@pytest.mark.parametrize("master", ["foo", "local[x]", "spark://"])
def test_a_demo_master_spark_does_not_take_is_named_before_java_is_looked_for(
    capsys: pytest.CaptureFixture[str], master: str
) -> None:
    """Spark ended its JVM on such a master ('Java gateway process exited before sending its port
    number', exit 1, after the server had started)."""
    assert main(["demo", "--master", master, "--no-web"]) == 2
    assert capsys.readouterr() == (
        "",
        "rstreams demo: --master needs a Spark master URL: local[N], local[*], spark://HOST:PORT, "
        f"yarn or k8s://HOST:PORT; got {master!r}\n",
    )
