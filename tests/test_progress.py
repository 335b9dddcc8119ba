"""Progress bars draw on a terminal and nowhere else."""
import io

from nitro.progress import progress_bar, shows_progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_bar_is_drawn_on_a_terminal_only():
    tty, pipe = Terminal(), io.StringIO()
    assert list(progress_bar(range(3), desc="measuring", file=tty)) == [0, 1, 2]
    assert "measuring" in tty.getvalue() and "3/3" in tty.getvalue()
    assert list(progress_bar(range(3), desc="measuring", file=pipe)) == [0, 1, 2]
    assert pipe.getvalue() == ""
    assert shows_progress(file=tty) and not shows_progress(enabled=False, file=tty) and not shows_progress(file=pipe)


def test_elsewhere_a_long_run_writes_a_plain_line_now_and_then():
    pipe = io.StringIO()
    assert list(progress_bar(range(3), desc="targets", unit="device", file=pipe, every=0.0)) == [0, 1, 2]
    assert pipe.getvalue().splitlines() == [f"targets: {k}/3 device{'s' * (k != 1)} done, 0 min 00 s"
                                            + (", about 0 min 00 s left" if k < 3 else "") for k in (1, 2, 3)]
    quiet = io.StringIO()
    assert list(progress_bar(iter(range(3)), file=quiet, every=0.0, enabled=False)) == [0, 1, 2]
    assert quiet.getvalue() == ""


def test_a_line_says_the_time_left_at_the_pace_so_far(monkeypatch):
    """A batch job's log says when a long run will end: a clock on which each item takes a
    minute gives 3 minutes left with 2 of 5 done, and no time left on the last line."""
    import itertools

    import nitro.progress
    clock = itertools.count(0.0, 60.0)
    monkeypatch.setattr(nitro.progress.time, "monotonic", lambda: next(clock))
    pipe = io.StringIO()
    assert list(progress_bar(range(5), desc="targets", unit="device", file=pipe, every=0.0)) == list(range(5))
    lines = pipe.getvalue().splitlines()
    assert lines[1] == "targets: 2/5 devices done, 2 min 00 s, about 3 min 00 s left"
    assert lines[-1] == "targets: 5/5 devices done, 5 min 00 s"
