"""A shared store is an attack surface: nothing read from it is unpickled or evaluated,
passwords and TLS work and never appear in messages or logs, names cannot reach other keys."""
import ast
import logging
import pickle
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
import redis

import nitro
from nitro.row import TrainingRow
from nitro.store import Store, StoreError, keys
from nitro.store.connection import connect, redact

PASSWORD = "s3cret-Pa55/word"
QUOTED = "s3cret-Pa55%2Fword"       # as it is written in a URL


class Exploit:
    """Unpickling this runs a shell command that creates a file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        import os
        return os.system, (f"touch {self.marker}",)


def plant(client: redis.Redis, marker: Path):
    """Put a pickle payload or an eval payload in every kind of key nitro reads."""
    payload = pickle.dumps(Exploit(marker))
    code = f"__import__('os').system('touch {marker}')".encode()
    client.set(keys.model("hist", "dev1"), payload)
    client.hset(keys.meta("evil"), mapping={"variants": code, "features": payload})
    client.sadd(keys.computations(), "evil")
    client.hset(keys.rows("hist", "dev1"), "in1", payload)
    client.hset(keys.rows("hist", "dev2"), "in1", code)
    client.hset(keys.device("dev1"), "cores", payload)
    client.hset(keys.profiles("hist", "dev1"), "a|in1", payload)
    client.hset(keys.proxy_profiles("dev1"), "stream|4", code)
    client.hset(keys.proxy_profiles("dev2"), payload, b"{}")


def test_nothing_read_from_the_store_is_unpickled_or_evaluated(store, tmp_path):
    marker = tmp_path / "pwned"
    store.declare("hist", ["a", "b"], ["N"])
    plant(store.client, marker)
    readers = [lambda: store.model("hist", "dev1"), lambda: store.meta("evil"),
               lambda: store.rows("hist", "dev1"), lambda: store.rows("hist", "dev2"),
               lambda: store.device("dev1"), lambda: store.profiles("hist", "dev1"),
               lambda: store.proxy_profiles("dev1"), lambda: store.proxy_profiles("dev2")]
    for read in readers:
        with pytest.raises(StoreError, match="malformed"):
            read()
    store.client.set(keys.schema(), pickle.dumps(Exploit(marker)))
    with pytest.raises(StoreError, match="unreadable schema version"):
        Store(client=store.client)
    assert not marker.exists()


FORBIDDEN_MODULES = {"pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve", "yaml", "jsonpickle"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "read_pickle", "to_pickle"}


def test_nitro_has_no_code_path_that_unpickles_or_evaluates():
    """Static check of nitro's source: no deserialiser that can run code, no eval. Two
    exceptions, named here: the CPU profiler hands the calls to profile to its own valgrind
    child process through pickle files in a private temporary directory it creates, and
    refining mode's refit process exchanges pickled messages with its parent over the pipes
    the parent opened; nothing read from a store or a user's file goes there."""
    root = Path(nitro.__file__).parent
    private_pickle = {root / "profiling" / "cpu.py", root / "refit_worker.py"}
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(path.name, a.name) for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES
                          and not (path in private_pickle and a.name == "pickle")]
            elif isinstance(node, ast.ImportFrom) and node.module:
                if node.module.split(".")[0] in FORBIDDEN_MODULES:
                    found.append((path.name, node.module))
            elif isinstance(node, ast.Call):
                f = node.func
                # builtins (eval, exec, compile) by name; re.compile and the like are harmless
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if isinstance(f, ast.Attribute) and name == "compile":
                    continue
                if path in private_pickle and isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "pickle":
                    continue
                if name in FORBIDDEN_CALLS:
                    found.append((path.name, name))
                if name == "load" and isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "joblib":
                    found.append((path.name, "joblib.load"))
                if any(k.arg == "allow_pickle" for k in node.keywords):
                    found.append((path.name, "allow_pickle"))
    assert found == []


def test_password_protected_server(redis_server, caplog, monkeypatch):
    server = redis_server(password=PASSWORD)
    caplog.set_level(logging.DEBUG)
    url = f"redis://:{QUOTED}@127.0.0.1:{server.port}/0"
    store = Store(url)
    store.declare("hist", ["a"], ["N"])
    store.put_row("hist", "dev", TrainingRow("in1", {"N": 1.0}, {"a": 1.0}))
    assert [r.input_id for r in store.rows("hist", "dev")] == ["in1"]
    messages = [repr(store), store.name]
    for bad in (f"redis://:wrong-{QUOTED}@127.0.0.1:{server.port}/0",   # wrong password
                f"redis://127.0.0.1:{server.port}/0",                   # none given
                f"redis://127.0.0.1:{server.port}/0?password=nope-{QUOTED}"):
        with pytest.raises(StoreError, match="does not answer") as err:
            connect(bad)
        messages.append(str(err.value))
    assert "authenticat" in messages[3].lower()          # says why: no password given
    monkeypatch.setenv("NITRO_STORE", url)               # named alike when the URL comes from the environment
    assert repr(Store()) == repr(store) == f"Store(redis://:***@127.0.0.1:{server.port}/0)"
    server.kill()                                  # an error in the middle of work
    with pytest.raises(StoreError, match=f"store redis://:\\*\\*\\*@127.0.0.1:{server.port}/0 failed") as err:
        store.rows("hist", "dev")
    messages.append(str(err.value))
    for text in messages + [caplog.text]:
        assert PASSWORD not in text and QUOTED not in text
    assert redact(f"rediss://u:{QUOTED}@h:1/0?password=x&db=0") == "rediss://u:***@h:1/0?password=***&db=0"


def test_a_password_with_unencoded_reserved_characters_is_refused_and_never_printed(redis_server, capsys):
    from nitro.cli import main
    server = redis_server(password="Zq9%t/x@Kv:w0rd")
    for raw in ("Zq9%t/x@Kv:w0rd", "pzz#qrk1", "mm?nn@oo"):
        url = f"redis://:{raw}@127.0.0.1:{server.port}/0"
        with pytest.raises(StoreError, match="percent-encode the characters / . # @ of a password") as err:
            connect(url)
        assert main(["store", "ls", "--store", url]) == 2
        printed = str(err.value) + capsys.readouterr().err
        assert not any(piece in printed for piece in ("Zq9", "Kv:w0", "pzz", "qrk1", "mm?n", "nn@oo")), printed
        assert redact(url) == f"redis://***@127.0.0.1:{server.port}/0"
    assert Store(f"redis://:{quote('Zq9%t/x@Kv:w0rd', safe='')}@127.0.0.1:{server.port}/0").computations() == []
    assert redact("redis://:pa@ss@h:1/0") == "redis://:***@h:1/0"        # urllib takes the last @ of the host part


def test_connection_mistakes_are_named_with_what_to_do(redis_server, tmp_path):
    import http.server
    import threading
    server = redis_server(password=PASSWORD)
    cases = [(f"redis://127.0.0.1:{server.port}/0", "the server asks for a password: give it in the URL"),
             (f"redis://:wrong@127.0.0.1:{server.port}/0", "the server refused the user name or password the URL gives"),
             (f"redis://:{QUOTED}@127.0.0.1:{server.port}/0?protocl=3", "the URL option 'protocl' is not one"),
             (f"redis://:{QUOTED}@127.0.0.1:{server.port}/abc", "the database of a store URL is a number"),
             (f"rediss://:{QUOTED}@127.0.0.1:{server.port}/0?ssl_ca_certs={tmp_path}/none.pem",
              "ssl_ca_certs names no file")]
    web = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    cases.append((f"redis://127.0.0.1:{web.server_address[1]}/0", "something else than Redis answers"))
    try:
        for url, message in cases:
            with pytest.raises(StoreError, match=message) as err:
                connect(url)
            assert PASSWORD not in str(err.value) and QUOTED not in str(err.value)
    finally:
        web.shutdown()


def test_a_unix_socket_without_its_password_is_told_the_unix_url_form(redis_server, tmp_path):
    sock = tmp_path / "r.sock"
    redis_server(password=PASSWORD, args=["--unixsocket", str(sock)])
    with pytest.raises(StoreError, match=r"give it in the URL \(unix:///path/redis.sock\?password=PASSWORD\)"):
        connect(f"unix://{sock}")
    assert Store(f"unix://{sock}?password={QUOTED}").computations() == []


def test_reading_an_empty_store_writes_nothing_and_a_full_server_says_so(redis_server):
    server = redis_server(args=["--maxmemory", "3mb", "--maxmemory-policy", "noeviction"])
    store = Store(server.url)
    assert store.computations() == [] and server.client().keys("*") == []     # ls wrote no schema key
    store.declare("big", ["a"], ["N"])
    assert server.client().get(keys.schema()) == b"1"                          # the first declaration did
    with pytest.raises(StoreError, match="the Redis server is full .maxmemory.. What was written before is kept"):
        for k in range(100):
            store.put_rows("big", "dev", [TrainingRow(f"in{k}-{i}", {"N": float(i)}, {"a": 1.0}) for i in range(5000)])
    assert len(store.rows("big", "dev")) >= 5000
    admin = server.client()                 # over the limit, as when an administrator lowers it
    admin.config_set("maxmemory", int(admin.info("memory")["used_memory"] * 0.8))
    store.drop_computation("big")           # the way to free it works there (a DEL queued in MULTI did not)
    assert store.computations() == [] and store.computation_keys("big") == []


def test_a_server_without_hello_is_spoken_to_in_resp2_and_a_cut_echo_hides_the_password(redis_server):
    """Before Redis 6 a server knows no HELLO (RESP3, redis-py's default): nitro falls back to
    RESP2. Such a server echoes a refused command's arguments cut to 128 characters."""
    long_password = "Lp" + "q7" * 60
    server = redis_server(args=["--rename-command", "HELLO", ""], password=long_password)
    store = Store(f"redis://:{long_password}@127.0.0.1:{server.port}/0")
    store.declare("old", ["a"], ["N"])
    assert store.meta("old") == {"variants": ["a"], "features": ["N"]}
    with pytest.raises(StoreError, match="does not answer") as err:      # RESP3 asked for: refused
        connect(f"redis://:{long_password}@127.0.0.1:{server.port}/0?protocol=3")
    assert "q7q7q7" not in str(err.value) and "HELLO" in str(err.value)


@pytest.fixture
def tls_files(tmp_path):
    """A throwaway CA and a server certificate for 127.0.0.1, made with the openssl CLI."""
    if not shutil.which("openssl"):
        pytest.skip("no openssl CLI to make a test certificate")
    d = tmp_path / "tls"
    d.mkdir()

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "1", "-subj", "/CN=nitro test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "1", "-extfile", "ext.cnf")
    return {"ca": str(d / "ca.pem"), "cert": str(d / "server.pem"), "key": str(d / "server.key")}


def test_tls_with_a_password(redis_server, tls_files, caplog):
    try:
        server = redis_server(tls=tls_files, password=PASSWORD)
    except RuntimeError as exc:   # a build without TLS refuses the tls-* options
        log = getattr(exc, "log", "")
        if "Bad directive" in log or "TLS" in log.upper():
            pytest.skip(f"this redis-server build has no TLS support: {log[-300:]}")
        raise
    caplog.set_level(logging.DEBUG)
    url = f"rediss://:{QUOTED}@127.0.0.1:{server.port}/0?ssl_ca_certs={tls_files['ca']}"
    store = Store(url)
    store.declare("hist", ["a"], ["N"])
    store.put_row("hist", "dev", TrainingRow("in1", {"N": 1.0}, {"a": 1.0}))
    assert [r.input_id for r in Store(url).rows("hist", "dev")] == ["in1"]
    messages = []
    for bad in (f"redis://:{QUOTED}@127.0.0.1:{server.port}/0",      # plain text to a TLS port
                f"rediss://:{QUOTED}@127.0.0.1:{server.port}/0"):    # certificate not trusted
        with pytest.raises(StoreError, match=f"store .*127.0.0.1:{server.port}/0 does not answer") as err:
            Store(bad)
        messages.append(str(err.value))
    assert "certificate verify failed" in messages[1] and "give its CA in the URL (?ssl_ca_certs=" in messages[1]
    with pytest.raises(StoreError, match="refused the user name or password") as err:     # not "does it speak TLS?"
        Store(f"rediss://:wrong@127.0.0.1:{server.port}/0?ssl_ca_certs={tls_files['ca']}")
    assert "listen for TLS" not in str(err.value)
    for text in messages + [repr(store), caplog.text]:
        assert PASSWORD not in text and QUOTED not in text


def test_every_transaction_stays_in_one_cluster_slot(redis_server):
    """The README's Redis Cluster claim: the keys of each MULTI/EXEC share one hash slot."""
    from redis.crc import key_slot
    server = redis_server()
    store = Store(server.url)
    transactions, current = [], None
    with server.client(socket_timeout=60).monitor() as monitor:
        store.declare("c:1", ["a"], ["N"])
        store.put_device("dev 1", {"cores": {"value": 2}})
        store.put_row("c:1", "dev 1", TrainingRow("in1", {"N": 1.0}, {"a": 1.0}))
        store.put_rows("c:1", "dev{2}", [TrainingRow("in2", {"N": 2.0}, {"a": 1.0})])
        store.put_model("c:1", "dev 1", {"format": 1, "kind": "constant", "variants": ["a"], "input_features": ["N"],
                                         "params": {"label": 0}})
        store.drop_computation("c:1")
        store.client.set("nitro:end-of-test", 1)
        for event in monitor.listen():
            words = event["command"].split()
            if words[0] == "MULTI":
                current = []
            elif words[0] == "EXEC":
                transactions.append(current)
                current = None
            elif current is not None:
                current += words[1:] if words[0] == "DEL" else words[1:2]
            if words[:2] == ["SET", "nitro:end-of-test"]:
                break
    assert len(transactions) >= 4
    for keys_ in transactions:
        assert len({key_slot(k.encode()) for k in keys_}) == 1, keys_
