"""Progress bars only where someone watches them.

Every bar nitro shows goes through :func:`progress_bar`. A bar is drawn on a terminal (or
as a notebook widget); with stderr sent to a pipe or a file it draws nothing, because
there each redraw becomes a line of its own and a long run writes hundreds of them.
"""
from __future__ import annotations

import sys

from tqdm.auto import tqdm


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
                 enabled: bool = True, file=None, **kwargs):
    """``tqdm(iterable, ...)`` that draws nothing unless :func:`shows_progress`; iterating
    it yields the items of ``iterable`` either way."""
    return tqdm(iterable, desc=desc, total=total, unit=unit, file=file,
                disable=not shows_progress(enabled, file), **kwargs)
