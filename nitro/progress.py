"""Progress bars only where someone watches them.

Every bar nitro shows goes through :func:`progress_bar`. A bar is drawn on a terminal (or
as a notebook widget); with stderr sent to a pipe or a file it draws no bar, because there
each redraw becomes a line of its own and a long run writes hundreds of them: a run that lasts
writes one plain line when an item ends and a minute or more has passed since the last line, so
that a batch job's log shows it is alive.
"""
from __future__ import annotations

import sys
import time

from tqdm.auto import tqdm

LINE_EVERY = 60.0       # seconds between the plain progress lines written where no bar is drawn


def _in_notebook() -> bool:
    """Whether ``tqdm.auto`` chose its notebook widget (a Jupyter kernel is running)."""
    return any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__)


def shows_progress(enabled: bool = True, file=None) -> bool:
    """Whether a bar would be drawn: ``enabled``, and ``file`` (default stderr) a terminal,
    or a notebook."""
    if not enabled:
        return False
    if _in_notebook():
        return True
    file = sys.stderr if file is None else file
    isatty = getattr(file, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:      # a closed stream
        return False


def progress_bar(iterable=None, desc: str | None = None, total: int | None = None, unit: str = "it",
                 enabled: bool = True, file=None, every: float | None = None, **kwargs):
    """``tqdm(iterable, ...)`` drawn where :func:`shows_progress`; elsewhere (``enabled``) the
    items of ``iterable`` with a plain line every ``every`` seconds (:data:`LINE_EVERY`) at most."""
    if shows_progress(enabled, file) or not enabled or iterable is None:
        return tqdm(iterable, desc=desc, total=total, unit=unit, file=file,
                    disable=not shows_progress(enabled, file), **kwargs)
    return _lines(iterable, desc or "progress", total, unit, file, LINE_EVERY if every is None else every)


def _lines(iterable, desc: str, total: int | None, unit: str, file, every: float):
    """Yield ``iterable``'s items; after one ends, when ``every`` seconds have passed since the
    start or the last line, write ``desc: k/total unit(s) done, elapsed``, and with a total the
    time left at the pace so far."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    start = last = time.monotonic()
    for k, item in enumerate(iterable, 1):
        yield item
        now = time.monotonic()
        if now - last >= every:
            last = now
            left = f", about {_minutes((now - start) / k * (total - k))} left" if total and k < total else ""
            print(f"{desc}: {k}{f'/{total}' if total else ''} {unit}{'s' * (k != 1)} done, "
                  f"{_minutes(now - start)}{left}", file=file or sys.stderr, flush=True)


def _minutes(seconds: float) -> str:
    """``seconds`` as ``M min SS s``."""
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes} min {seconds:02d} s"
