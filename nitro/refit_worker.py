"""Refits in a process of their own, so that the calls served meanwhile never wait for them.

A refit in a thread of the serving process holds the interpreter lock whenever its Python code
runs between NumPy and scikit-learn calls: on a 2-core VM a plain call's 99.9th percentile rose
from 0.1 ms to 5–8 ms during refits, single calls to 40–170 ms. :class:`RefitProcess` runs the
refit callable in a child interpreter instead (``python -m nitro.refit_worker``, started at the
first refit, at a lower scheduling priority, with one OpenMP thread fewer than the machine has
cores unless ``OMP_NUM_THREADS`` says otherwise, in a session of its own so that Ctrl-C reaches
only the application). Messages are pickled frames over the child's pipes (never over the network,
never from the store): the refit callable (sent again only when its state changed), the model
refining began with (sent once) and each refit's rows; only the new model comes back, as plain
data validated on load (:meth:`nitro.SelectorModel.from_dict`). A child that dies is started
again at the next refit; its exit code is in the error the refit raises (counted by the
refiner, the old model stays). Where no child ever answers (an interpreter embedded in another
program, whose ``sys.executable`` is not Python), refits run in the calling thread from then on
and ``fallback`` says why.

A refit callable that reads something first (the sources' rows in the store:
:class:`nitro.transfer.tune.SourcesRefit`) does that in the serving process through its
``prepare(base)`` method, and says with ``version`` that its state changed; the child only fits.
"""
from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import threading

from .model import SelectorModel

NICE = 10          # the child's scheduling priority below the serving process's (Unix)
_HEADER = struct.Struct("<Q")


def _write(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read(stream):
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the other end closed the pipe")
    size = _HEADER.unpack(header)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other end closed the pipe mid-message")
    return pickle.loads(data)


def unpicklable(refit) -> str | None:
    """Why ``refit`` cannot go to a child process (it cannot be pickled), or ``None``."""
    try:
        pickle.dumps(refit, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # pickling raises what the object's reducers raise
        return f"the refit cannot be pickled ({type(exc).__name__}: {exc})"[:500]
    return None


class RefitProcess:
    """``refit(base, X, times)`` (refining mode's refit signature) run in a child process; see
    the module documentation. ``error`` and ``__name__`` are the wrapped refit's, so that the
    refiner's statistics name it; :meth:`close` ends the child."""

    def __init__(self, refit):
        self.refit = refit
        self.__name__ = getattr(refit, "__name__", type(refit).__name__)
        self._proc: subprocess.Popen | None = None
        self._sent: tuple | None = None          # (id, version) of the refit the child holds
        self._base_id: int | None = None         # id of the base model the child holds
        self._lock = threading.Lock()
        self._closed = False
        self._answered = False                   # whether any child has answered
        self.fallback: str | None = None         # why refits run in the calling thread instead

    def _give_up(self, why: str):
        self.fallback = f"no refit process ({why}): refits run in a thread"[:500]

    @property
    def error(self):
        return getattr(self.refit, "error", None)

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)    # the same nitro as here
        if "OMP_NUM_THREADS" not in env:        # leave a core to the calls being served
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 2) - 1))
        self._sent = self._base_id = None
        return subprocess.Popen([sys.executable, "-m", "nitro.refit_worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True, close_fds=True)

    def __call__(self, base: SelectorModel, X, times) -> SelectorModel | None:
        if self.fallback is not None:
            return self.refit(base, X, times)
        prepare = getattr(self.refit, "prepare", None)
        if prepare is not None:
            prepare(base)                        # reads (the store) here; the child only fits
        with self._lock:
            if self._closed:
                return None
            if self._proc is None or self._proc.poll() is not None:
                try:
                    self._proc = self._start()
                except OSError as exc:
                    self._give_up(f"{sys.executable!r} cannot start: {exc}")
                    return self.refit(base, X, times)
            proc = self._proc
            key = (id(self.refit), getattr(self.refit, "version", 0))
            message = {"refit": self.refit if key != self._sent else None,
                       "base": base.to_dict() if id(base) != self._base_id else None, "X": X, "times": times}
        try:
            _write(proc.stdin, message)
            self._sent, self._base_id = key, id(base)
            status, value = _read(proc.stdout)
        except (OSError, EOFError, pickle.PickleError) as exc:
            try:
                code = proc.wait(timeout=1.0)        # a child that closed its pipe is exiting
            except subprocess.TimeoutExpired:
                code = None
            with self._lock:
                self._sent = self._base_id = None
            why = (f"the refit process {'ended with exit code ' + str(code) if code is not None else 'failed'}"
                   f" ({type(exc).__name__}: {exc})")
            if not self._answered and not self._closed:    # it never worked here: not a crash mid-refit
                self._give_up(f"{sys.executable} -m nitro.refit_worker: {why}")
                return self.refit(base, X, times)
            raise RuntimeError(why) from None
        self._answered = True
        if status == "error":
            raise RuntimeError(f"in the refit process: {value}")
        return None if value is None else SelectorModel.from_dict(value)

    def close(self) -> None:
        """End the child (at once: a refit still running there is abandoned)."""
        with self._lock:
            self._closed = True
            proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass


def serve(inp, out) -> None:
    """The child's loop: one refit per message until the serving process closes the pipe."""
    refit, base = None, None
    while True:
        try:
            message = _read(inp)
        except EOFError:
            return
        try:
            if message["refit"] is not None:
                refit = message["refit"]
            if message["base"] is not None:
                base = SelectorModel.from_dict(message["base"])
            model = refit(base, message["X"], message["times"])
            reply = ("model", None if model is None else model.to_dict())
        except Exception as exc:  # every failure goes back as a message; the loop goes on
            reply = ("error", f"{type(exc).__name__}: {exc}"[:2000])
        _write(out, reply)


def main() -> None:
    out = os.fdopen(os.dup(1), "wb")            # the protocol's pipe; stray prints go to stderr
    os.dup2(2, 1)
    if hasattr(os, "nice"):
        try:
            os.nice(NICE)
        except OSError:
            pass
    serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
