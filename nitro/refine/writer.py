"""The background writer of refining mode: explored rows go through a bounded queue to a
thread that writes them to the store, so that a call never waits for it (see :mod:`nitro.refine`)."""
from __future__ import annotations

import atexit
import queue
import time
import weakref

from ..row import TrainingRow

EXIT_FLUSH = 5.0       # seconds the rows still queued at interpreter exit may take to be written
_with_rows: "weakref.WeakSet" = weakref.WeakSet()   # refiners whose writer opened a store
_exit_hook: list = []       # registered once


def _flush_at_exit(refiner) -> None:
    """At normal exit, write the rows still queued (up to ``EXIT_FLUSH`` seconds) instead of
    dropping them with the writer's daemon thread. Registered after the store was opened, so
    that it runs before the embedded store's own exit hook (atexit runs the last one first)."""
    if not _exit_hook:
        atexit.register(_flush_all)
        _exit_hook.append(True)
    _with_rows.add(refiner)


def _flush_all() -> None:
    for refiner in list(_with_rows):
        refiner.stop(timeout=EXIT_FLUSH)


class WriterMixin:
    """The store writer of a :class:`nitro.refine.Refiner` (its queue and thread are set up there)."""

    def _open_store(self):
        if isinstance(self._store, str):
            from ..store import Store
            self._store = Store(self._store)
        self._store.declare(self.computation, self._dispatcher.variants, self._dispatcher.features)
        return self._store

    def _put(self, store, row: TrainingRow) -> None:
        """Write one row over the stored one (:meth:`TrainingRow.over`: the times another process,
        or this one before a restart, stored for other variants of the input are kept); a store
        that lost the computation (restarted without its data, or a computation removed) has it
        declared again, once, and the row written then."""
        from ..store import StoreError
        try:
            store.merge_rows(self.computation, self.device_id, [row], TrainingRow.over)
        except StoreError as exc:
            if "unknown computation" not in str(exc):
                raise
            store.declare(self.computation, self._dispatcher.variants, self._dispatcher.features)
            store.merge_rows(self.computation, self.device_id, [row], TrainingRow.over)

    def _write_loop(self):
        store = None
        while True:
            try:
                row = self._queue.get(timeout=0.05)
            except queue.Empty:
                if self._stopped:
                    return
                continue
            try:
                if self._stopped and time.monotonic() > self._stop_deadline:
                    self._counts["rows_dropped"] += 1     # stop()'s time to write them is over
                    continue
                if store is None:
                    store = self._open_store()
                    _flush_at_exit(self)
                self._put(store, row)
                self._counts["rows_written"] += 1
            except Exception as exc:  # a slow or failing store never reaches the calls
                self._counts["store_errors"] += 1
                self.last_store_error = f"{type(exc).__name__}: {exc}"[:500]
            finally:
                self._queue.task_done()

    def _drain(self) -> None:
        """Count the rows left in the queue as dropped (the writer may be stuck on a slow store)."""
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return
            self._counts["rows_dropped"] += 1
            self._queue.task_done()
