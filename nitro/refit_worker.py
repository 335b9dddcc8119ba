"""Refits in a process of their own, so that the calls served meanwhile never wait for them.

A refit in a thread of the serving process holds the interpreter lock whenever its Python code
runs between NumPy and scikit-learn calls: on a 2-core VM plain calls' 99.9th percentile rose
15-fold during refits (``nitro bench refine``; in a child process: 1.1-fold). :class:`RefitProcess`
runs the refit callable in a child interpreter instead (``python -m nitro.refit_worker``, one per
process, shared by every refit there, which queue for it: :class:`_Worker`; started at the first
refit, which waits for its ready message, and ended when its last client closes; at a lower
scheduling priority (:func:`lower_priority`), with one OpenMP thread fewer than the machine has
cores unless ``OMP_NUM_THREADS`` says otherwise, in a process group of its own so that Ctrl-C
reaches only the application).

Why the idle class (``POLICY``) and a process group rather than a session of its own: at nice
10 alone the child still takes time slices from a variant that uses every core, and Linux puts
each session in a scheduling group of its own (autogroup, on by default), groups sharing the CPU
as equals whatever the nice value or class of the tasks inside. A CPU-bound child in a session
of its own took a whole core of 2 from an OpenMP histogram variant at nice 10 and in the idle
class alike (calls beside it 50 times as slow); in the application's session, at nice 10, calls
over 2 ms went from 0 to 74, in the idle class to 5. The same 2,000 histogram calls with refits
beside them served in 1.84-2.57 s from a child in its own session, 1.28-1.55 s from one in the
idle class in the application's (seven runs; ``benchmarks/README.md``, "Timings taken while a
refit runs").
The price: on a machine whose every core stays busy, a refit would wait for idle time that never
comes (an idle-class child beside two busy processes got 1-2% of a core): where the child gets
less than ``STARVED_SHARE`` of a core over ``STARVED_AFTER`` seconds of a refit (read from
``/proc/<pid>/stat``), it is ended, the refit runs again in a new child at nice 10 only, and
every later refit there too (``RefitProcess.starved`` says when and why; ``POLICY = "nice"``
before the first refit does so from the start). Messages are pickled frames over
the child's pipes (never over the network, never from the store): the refit callable (sent again
only when its state changed), the model refining began with (sent once) and each refit's rows;
only the new model comes back, as plain data checked in the child
(:meth:`nitro.SelectorModel.from_dict`) with the compiled evaluator's flat lists that check made,
rebuilt here without checking again (:meth:`nitro.SelectorModel.from_checked`: the check is 9 ms
of Python for a tree model, which the serving process no longer spends). A child that dies is started again at the next refit;
its exit code is in the error the refit raises (counted by the refiner, the old model stays).
Where a new child does not say it is ready (an interpreter embedded in another program, whose
``sys.executable`` is not Python), or cannot load the refit (defined in a module only the
application can import), refits run in the calling thread from then on and ``fallback`` says why.

A refit callable that reads something first (the sources' rows in the store:
:class:`nitro.transfer.tune.SourcesRefit`) does that in the serving process through its
``prepare(base)`` method, and says with ``version`` that its state changed; the child only fits.
"""
from __future__ import annotations

import itertools
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
from .quiet import process_cpu_seconds

NICE = 10          # the child's scheduling priority below the serving process's (Unix)
POLICY = "idle"    # "idle": Linux's SCHED_IDLE as well (CPU time nothing else wants); "nice": NICE only
STARVED_AFTER = 5.0    # seconds of an idle-class refit over which its child's CPU share is judged
STARVED_SHARE = 0.05   # of one core: less, and the idle class starves the refit (every core busy)
_HEADER = struct.Struct("<Q")
# the child's own process group, in this session (Python 3.10: the child calls setpgid itself)
_OWN_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {}


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


def _starved_reply(proc: subprocess.Popen) -> bytes | None:
    """The child's reply frame, or ``None`` where it got less than ``STARVED_SHARE`` of a core
    over a window of ``STARVED_AFTER`` seconds before replying (without ``/proc``, the reply,
    however long it takes). The exchange is strictly one request, one reply, so the buffered
    pipe holds nothing when the wait on its descriptor begins."""
    start, used = time.monotonic(), process_cpu_seconds(proc.pid)
    if used is None:
        return _read_raw(proc.stdout)
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ)
        while not sel.select(min(0.5, STARVED_AFTER)):
            now = time.monotonic()
            if now - start < STARVED_AFTER:
                continue
            cpu = process_cpu_seconds(proc.pid)
            if cpu is None:                      # it ended: the pipe will say so
                continue
            if cpu - used < STARVED_SHARE * (now - start):
                return None
            start, used = now, cpu
    return _read_raw(proc.stdout)


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


def _kill(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and its process group (what a refit may have started), if it runs."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)            # its own process group: pgid == pid
        except (OSError, AttributeError):
            proc.kill()


def _end(proc: subprocess.Popen | None) -> int | None:
    """:func:`_kill` ``proc``, wait for it and close its pipes; its exit code."""
    if proc is None:
        return None
    _kill(proc)
    code = proc.wait()
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except OSError:
            pass
    return code


class _Worker:
    """The one child process this process's refits share (one interpreter, however many code
    variants refine), started when a refit needs it and ended when its last client closes.
    ``exchange`` serialises whole request/reply exchanges (refits queue for the child); the
    state lock guards the process and the clients, so that closing never waits for a refit."""

    READY_TIMEOUT = 60.0     # seconds a new child may take to import nitro and say it is ready
    READY_MAX = 1024         # bytes of a ready frame at most (more: not our child talking)
    _shared: "_Worker | None" = None
    _shared_lock = threading.Lock()

    def __init__(self):
        self.exchange = threading.Lock()
        self.state = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.starting: subprocess.Popen | None = None
        self.generation = 0                      # children started so far: a new one holds nothing
        self.clients: set[int] = set()
        self.forget: list[int] = []              # closed clients whose refit and base the child may drop
        self.fallback: str | None = None         # why no child can run here
        self.policy = POLICY                     # the scheduling of the children it starts
        self.starved: str | None = None          # when and why it left the idle class
        self.ended = False                       # its last client left: it starts no child again

    @classmethod
    def joined(cls, client: int) -> "_Worker":
        """The shared worker, with ``client`` among its clients (one step: a worker whose last
        client is leaving is never joined)."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            with cls._shared.state:
                cls._shared.clients.add(client)
            return cls._shared

    @classmethod
    def _after_fork(cls) -> None:
        """A forked process has no child of its own yet (its parent's is not its to talk to)."""
        cls._shared, cls._shared_lock = None, threading.Lock()

    def leave(self, client: int) -> None:
        """``client`` closed: the child may drop what it holds for it; the last one ends the
        worker and its child (a refit running there is abandoned), and the next client gets a
        new worker (a fallback is tried again)."""
        with _Worker._shared_lock, self.state:
            self.clients.discard(client)
            if self.fallback is None:
                self.forget.append(client)
            if self.clients:
                return
            self.ended = True
            if _Worker._shared is self:
                _Worker._shared = None
            proc, self.proc, starting = self.proc, None, self.starting
        _end(proc)
        if starting is not None:                 # the thread waiting for it ends it and closes its pipes
            _kill(starting)

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)    # the same nitro as here
        if "OMP_NUM_THREADS" not in env:        # leave a core to the calls being served
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 2) - 1))
        return subprocess.Popen([sys.executable, "-m", "nitro.refit_worker", self.policy], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                close_fds=True, **_OWN_GROUP)

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

    def child(self) -> subprocess.Popen | None:
        """The running child, started (its ready frame awaited) if needed; ``None`` when no
        client is left or no child can run here (``fallback`` says why). Under ``exchange``."""
        with self.state:
            if self.fallback is not None or self.ended:
                return None
            if self.proc is not None and self.proc.poll() is None:
                return self.proc
            old, self.proc = self.proc, None
        _end(old)
        try:
            proc = self._start()
        except (OSError, TypeError, ValueError) as exc:   # no executable, or none that can run here
            self.fallback = f"{sys.executable!r} cannot start: {exc}"
            return None
        with self.state:
            self.starting = proc if not self.ended else None
        if self.ended:                           # its last client left while it started
            _end(proc)
            return None
        try:
            why = self._ready(proc)
        except BaseException:
            _end(proc)
            raise
        finally:
            with self.state:
                self.starting = None
        with self.state:
            if why is None and not self.ended:
                self.proc, self.generation, self.forget = proc, self.generation + 1, []
                return proc
        code = _end(proc)
        with self.state:
            if why is not None and not self.ended:
                self.fallback = f"{sys.executable} -m nitro.refit_worker: {why}, exit code {code}"[:500]
                self.forget = []
        return None

    def starve(self, proc: subprocess.Popen) -> None:
        """``proc``, in the idle class, got too little of the machine to refit: end it; the
        children started from now on run at ``NICE`` only."""
        self.policy = "nice"
        self.starved = (f"{time.strftime('%Y-%m-%d %H:%M:%S')}: the idle-class child got under "
                        f"{STARVED_SHARE:.0%} of a core over {STARVED_AFTER:g} s of a refit (every core busy); "
                        f"refits run at nice {NICE} from then on")
        self.drop(proc)

    def drop(self, proc: subprocess.Popen) -> int | None:
        """``proc`` failed mid-exchange (the pipe may be out of step): end it; its exit code."""
        with self.state:
            if self.proc is proc:
                self.proc = None
        return _end(proc)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_Worker._after_fork)


class RefitProcess:
    """``refit(base, X, times)`` (refining mode's refit signature) run in the child process this
    process's refits share; see the module documentation. ``error`` and ``__name__`` are the
    wrapped refit's, so that the refiner's statistics name it; ``fallback`` says why refits run
    in the calling thread, if they do, and ``starved`` when and why the child left the idle class;
    :meth:`close` says this refit needs the child no more."""

    _ids = itertools.count()

    def __init__(self, refit):
        self.refit = refit
        self.__name__ = getattr(refit, "__name__", type(refit).__name__)
        self._id = next(self._ids)
        self._worker = _Worker.joined(self._id)
        self._held: tuple | None = None          # (generation, refit key, base) the child holds for us
        self._closed = False
        self._unloadable: str | None = None

    @property
    def error(self):
        return getattr(self.refit, "error", None)

    @property
    def starved(self) -> str | None:
        """When and why the shared child left the idle class (every core busy), or ``None``."""
        return self._worker.starved

    @property
    def fallback(self) -> str | None:
        why = self._unloadable or self._worker.fallback
        return None if why is None else f"no refit process ({why}): refits run in a thread"[:500]

    def __call__(self, base: SelectorModel, X, times) -> SelectorModel | None:
        if self._closed:
            return None
        if self.fallback is not None:
            return self.refit(base, X, times)
        prepare = getattr(self.refit, "prepare", None)
        if prepare is not None:
            prepare(base)                        # reads (the store) here; the child only fits
        worker = self._worker
        with worker.exchange:
            while True:                          # twice at most: again in a nice child after starving
                if self._closed:                 # closed while its refit queued for the child
                    return None
                proc = worker.child()
                if proc is None:
                    return None if self._closed else self.refit(base, X, times)
                key = (id(self.refit), getattr(self.refit, "version", 0))
                held = self._held if self._held is not None and self._held[0] == worker.generation else None
                try:                             # pickled before the child sees a byte
                    payload = pickle.dumps({"refit": self.refit if held is None or held[1] != key else None,
                                            "base": base.to_dict() if held is None or held[2] is not base else None,
                                            "X": X, "times": times}, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as exc:  # what cannot be pickled is a failed refit, not a failed child
                    raise RuntimeError(f"the refit's message cannot be pickled ({type(exc).__name__}: {exc})") from None
                with worker.state:               # one step with leave(): a later close is forgotten next time
                    if self._id not in worker.clients:
                        return None
                    forget, worker.forget = worker.forget, []
                try:
                    proc.stdin.write(_frame({"client": self._id, "forget": forget, "payload": payload}))
                    proc.stdin.flush()
                    reply = _starved_reply(proc) if worker.policy == "idle" else _read_raw(proc.stdout)
                    if reply is None:
                        worker.starve(proc)
                        continue
                    status, value = pickle.loads(reply)
                except BaseException as exc:
                    code = worker.drop(proc)
                    if self._closed:
                        return None              # closing ended the child: not a failure
                    if not isinstance(exc, Exception):
                        raise
                    raise RuntimeError(f"the refit process ended with exit code {code} "
                                       f"({type(exc).__name__}: {exc})") from None
                self._held = (worker.generation, key, base) if status == "model" else None
                break
        if status == "unloadable":               # the child cannot import what this refit needs
            self._unloadable = value
            return self.refit(base, X, times)
        if status == "error":
            raise RuntimeError(f"in the refit process: {value}")
        return None if value is None else SelectorModel.from_checked(*value)

    def close(self) -> None:
        """This refit needs the child no more: the child ends with its last client (at once, a
        refit running there abandoned); before, a refit of this client that is running there
        finishes and is discarded, one queued for it never runs."""
        if not self._closed:
            self._closed = True
            self._worker.leave(self._id)


def serve(inp, out) -> None:
    """The child's loop: one refit per message until the serving process closes the pipe; each
    client's refit and base kept until it is forgotten. A payload that cannot be loaded here (a
    refit from a module this interpreter cannot import) is answered ``unloadable``; any other
    failure ``error``; the pipe stays in step."""
    refits, bases = {}, {}
    while True:
        try:
            message = pickle.loads(_read_raw(inp))
        except EOFError:
            return
        for gone in message["forget"]:
            refits.pop(gone, None)
            bases.pop(gone, None)
        client = message["client"]
        try:
            payload = pickle.loads(message["payload"])
        except Exception as exc:
            reply = ("unloadable", f"the child cannot load the refit: {type(exc).__name__}: {exc}"[:2000])
        else:
            try:
                if payload["refit"] is not None:
                    refits[client] = payload["refit"]
                if payload["base"] is not None:
                    bases[client] = SelectorModel.from_dict(payload["base"])
                model = refits[client](bases[client], payload["X"], payload["times"])
                if model is not None:             # checked here, so that the serving process need not
                    data = model.to_dict()
                    model = (data, SelectorModel.from_dict(data)._flat)
                reply = ("model", model)
            except Exception as exc:  # every failure goes back as a message; the loop goes on
                reply = ("error", f"{type(exc).__name__}: {exc}"[:2000])
        out.write(_frame(reply))
        out.flush()


def lower_priority(policy: str) -> None:
    """This process below the serving one: ``NICE`` (Unix) and, with ``policy`` "idle", the
    idle scheduling class where there is one (Linux ``SCHED_IDLE``: a core runs the refit only
    when nothing else wants it, so a variant that uses every core is not descheduled for it)."""
    if hasattr(os, "nice"):
        try:
            os.nice(NICE)
        except OSError:
            pass
    if policy == "idle" and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass


def main() -> None:
    out = os.fdopen(os.dup(1), "wb")            # the protocol's pipe; stray prints go to stderr
    os.dup2(2, 1)
    if hasattr(os, "setpgid") and os.getpgid(0) != os.getpid():
        os.setpgid(0, 0)                         # Ctrl-C at the terminal is the application's
    lower_priority(sys.argv[1] if len(sys.argv) > 1 else POLICY)
    out.write(_frame(("ready", os.getpid())))
    out.flush()
    serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
