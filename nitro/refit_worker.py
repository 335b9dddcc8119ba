"""Refits in a process of their own, so that the calls served meanwhile never wait for them.

A refit in a thread of the serving process holds the interpreter lock whenever its Python code
runs between NumPy and scikit-learn calls: on a 2-core VM plain calls' 99.9th percentile rose
15-fold during refits (``nitro bench refine``; in a child process: 1.1-fold). :class:`RefitProcess`
runs the refit callable in a child interpreter instead (``python -m nitro.refit_worker``, started
at the first refit, which waits for its ready message; at a lower scheduling priority, with one
OpenMP thread fewer than the machine has cores unless ``OMP_NUM_THREADS`` says otherwise, in a
session of its own so that Ctrl-C reaches only the application). Messages are pickled frames over
the child's pipes (never over the network, never from the store): the refit callable (sent again
only when its state changed), the model refining began with (sent once) and each refit's rows;
only the new model comes back, as plain data validated on load
(:meth:`nitro.SelectorModel.from_dict`). A child that dies is started again at the next refit;
its exit code is in the error the refit raises (counted by the refiner, the old model stays).
Where a new child does not say it is ready (an interpreter embedded in another program, whose
``sys.executable`` is not Python), or cannot load the refit (defined in a module only the
application can import), refits run in the calling thread from then on and ``fallback`` says why.

A refit callable that reads something first (the sources' rows in the store:
:class:`nitro.transfer.tune.SourcesRefit`) does that in the serving process through its
``prepare(base)`` method, and says with ``version`` that its state changed; the child only fits.
"""
from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time

from .model import SelectorModel

NICE = 10          # the child's scheduling priority below the serving process's (Unix)
_HEADER = struct.Struct("<Q")


def _frame(obj) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def _read_raw(stream) -> bytes:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the other end closed the pipe")
    size = _HEADER.unpack(header)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other end closed the pipe mid-message")
    return data


def unpicklable(refit) -> str | None:
    """Why ``refit`` cannot go to a child process, or ``None``: it cannot be pickled, or it is
    defined in the application's ``__main__``, which the child cannot import."""
    if "__main__" in (getattr(refit, "__module__", None), type(refit).__module__):
        return "the refit is defined in __main__, which a child process cannot import"
    try:
        pickle.dumps(refit, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # pickling raises what the object's reducers raise
        return f"the refit cannot be pickled ({type(exc).__name__}: {exc})"[:500]
    return None


class RefitProcess:
    """``refit(base, X, times)`` (refining mode's refit signature) run in a child process; see
    the module documentation. ``error`` and ``__name__`` are the wrapped refit's, so that the
    refiner's statistics name it; ``fallback`` says why refits run in the calling thread, if
    they do; :meth:`close` ends the child."""

    READY_TIMEOUT = 60.0     # seconds a new child may take to import nitro and say it is ready
    READY_MAX = 1024         # bytes of a ready frame at most (more: not our child talking)

    def __init__(self, refit):
        self.refit = refit
        self.__name__ = getattr(refit, "__name__", type(refit).__name__)
        self._proc: subprocess.Popen | None = None
        self._sent: tuple | None = None          # (id, version) of the refit the child holds
        self._base: SelectorModel | None = None  # the base model the child holds
        self._lock = threading.Lock()
        self._closed = False
        self._starting: subprocess.Popen | None = None   # a child not ready yet (close() ends it too)
        self.fallback: str | None = None

    @property
    def error(self):
        return getattr(self.refit, "error", None)

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)    # the same nitro as here
        if "OMP_NUM_THREADS" not in env:        # leave a core to the calls being served
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 2) - 1))
        return subprocess.Popen([sys.executable, "-m", "nitro.refit_worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True, close_fds=True)

    def _ready(self, proc: subprocess.Popen) -> str | None:
        """Wait (``READY_TIMEOUT`` at most) for a new child's ready frame, read from its pipe's
        descriptor directly (the buffered reader has read nothing yet); why it never came, or
        ``None``."""
        fd, data = proc.stdout.fileno(), b""
        deadline = time.monotonic() + self.READY_TIMEOUT
        with selectors.DefaultSelector() as sel:      # epoll/poll: no limit on descriptor numbers
            sel.register(fd, selectors.EVENT_READ)
            while True:
                need = _HEADER.size + (_HEADER.unpack(data[:_HEADER.size])[0] if len(data) >= _HEADER.size else 0)
                if need > self.READY_MAX:
                    return "an unexpected first message"
                if len(data) >= need and len(data) > _HEADER.size:
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return f"no answer within {self.READY_TIMEOUT:g} s"
                chunk = os.read(fd, need - len(data) if len(data) >= _HEADER.size else _HEADER.size - len(data))
                if not chunk:
                    return "it ended before saying it was ready"
                data += chunk
        try:
            ok = pickle.loads(data[_HEADER.size:]) == ("ready", proc.pid)
        except Exception as exc:  # garbage from a program that is not nitro's worker
            return f"an unexpected first message ({type(exc).__name__})"
        return None if ok else "an unexpected first message"

    @staticmethod
    def _end(proc: subprocess.Popen | None) -> int | None:
        """Kill ``proc`` and its process group (what a refit may have started) if it runs, close
        its pipes; its exit code."""
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)        # its own session: pgid == pid
            except (OSError, AttributeError):
                proc.kill()
        code = proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        return code

    def _child(self) -> subprocess.Popen | None:
        """The running child, started (and its ready frame awaited, without the lock, so that
        :meth:`close` never waits for it) if needed; ``None`` after :meth:`close` or when no
        child can run here (``fallback`` then says why). Called by one refit at a time."""
        with self._lock:
            if self._closed or self.fallback is not None:
                return None
            if self._proc is not None and self._proc.poll() is None:
                return self._proc
            old, self._proc, self._sent, self._base = self._proc, None, None, None
        self._end(old)
        try:
            proc = self._start()
        except (OSError, TypeError, ValueError) as exc:   # no executable, or none that can run here
            self.fallback = f"no refit process ({sys.executable!r} cannot start: {exc}): refits run in a thread"
            return None
        with self._lock:
            self._starting = proc
            closed = self._closed
        try:
            why = None if closed else self._ready(proc)
        except BaseException:
            self._end(proc)
            raise
        finally:
            with self._lock:
                self._starting = None
        with self._lock:
            if why is None and not self._closed:
                self._proc = proc
                return proc
        code = self._end(proc)
        if why is not None and not self._closed:
            self.fallback = (f"no refit process ({sys.executable} -m nitro.refit_worker: {why}, exit code {code}): "
                             "refits run in a thread")[:500]
        return None

    def __call__(self, base: SelectorModel, X, times) -> SelectorModel | None:
        prepare = getattr(self.refit, "prepare", None)
        if prepare is not None and self.fallback is None:
            prepare(base)                        # reads (the store) here; the child only fits
        proc = self._child()
        if proc is None:
            return None if self._closed else self.refit(base, X, times)
        key = (id(self.refit), getattr(self.refit, "version", 0))
        try:                                     # pickled before the child sees a byte
            frame = _frame({"refit": self.refit if key != self._sent else None,
                            "base": base.to_dict() if base is not self._base else None, "X": X, "times": times})
        except Exception as exc:  # what cannot be pickled is a failed refit, not a failed child
            raise RuntimeError(f"the refit's message cannot be pickled ({type(exc).__name__}: {exc})") from None
        try:
            proc.stdin.write(frame)
            proc.stdin.flush()
            status, value = pickle.loads(_read_raw(proc.stdout))
        except BaseException as exc:
            with self._lock:                     # the pipe may be out of step: this child is done
                if self._proc is proc:
                    self._proc = None
                closed = self._closed
            code = self._end(proc)
            if closed:
                return None                      # stop() ended the child: not a failure
            if not isinstance(exc, Exception):
                raise
            raise RuntimeError(f"the refit process ended with exit code {code} ({type(exc).__name__}: {exc})") from None
        with self._lock:
            if status == "model" or status == "error":
                self._sent, self._base = (key, base) if status == "model" else (None, None)
        if status == "unloadable":               # the child cannot import what the refit needs
            with self._lock:
                self.fallback = f"no refit process ({value}): refits run in a thread"[:500]
                idle, self._proc = self._proc, None
            self._end(idle)
            return self.refit(base, X, times)
        if status == "error":
            raise RuntimeError(f"in the refit process: {value}")
        return None if value is None else SelectorModel.from_dict(value)

    def close(self) -> None:
        """End the child (at once: a refit still running there is abandoned)."""
        with self._lock:
            self._closed = True
            proc, self._proc, starting = self._proc, None, self._starting
        self._end(proc)
        if starting is not None and starting.poll() is None:
            try:                                 # the refit thread waiting for it ends it and closes its pipes
                os.killpg(starting.pid, signal.SIGKILL)
            except OSError:
                starting.kill()


def serve(inp, out) -> None:
    """The child's loop: one refit per message until the serving process closes the pipe. A
    message that cannot be loaded here (a refit from a module this interpreter cannot import)
    is answered ``unloadable``; any other failure ``error``; the pipe stays in step."""
    refit, base = None, None
    while True:
        try:
            raw = _read_raw(inp)
        except EOFError:
            return
        try:
            message = pickle.loads(raw)
        except Exception as exc:
            out.write(_frame(("unloadable", f"the child cannot load the refit: {type(exc).__name__}: {exc}"[:2000])))
            out.flush()
            continue
        try:
            if message["refit"] is not None:
                refit = message["refit"]
            if message["base"] is not None:
                base = SelectorModel.from_dict(message["base"])
            model = refit(base, message["X"], message["times"])
            reply = ("model", None if model is None else model.to_dict())
        except Exception as exc:  # every failure goes back as a message; the loop goes on
            reply = ("error", f"{type(exc).__name__}: {exc}"[:2000])
        out.write(_frame(reply))
        out.flush()


def main() -> None:
    out = os.fdopen(os.dup(1), "wb")            # the protocol's pipe; stray prints go to stderr
    os.dup2(2, 1)
    if hasattr(os, "nice"):
        try:
            os.nice(NICE)
        except OSError:
            pass
    out.write(_frame(("ready", os.getpid())))
    out.flush()
    serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
