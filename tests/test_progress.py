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
                                            for k in (1, 2, 3)]
    quiet = io.StringIO()
    assert list(progress_bar(iter(range(3)), file=quiet, every=0.0, enabled=False)) == [0, 1, 2]
    assert quiet.getvalue() == ""
