import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

from nitro import TimingPolicy, autotuner
from nitro.benchmarks import FAMILIES, bfs
from nitro.model import SelectorModel

FAST = TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0)


def scipy_depths(graph, source):
    """Independent check: unweighted shortest-path lengths from scipy."""
    dist = csgraph.shortest_path(graph.astype(np.float64), unweighted=True, indices=source)
    return np.where(np.isinf(dist), -1, dist).astype(np.int32)


def with_int64_indptr(graph):
    """int64 indptr with int32 indices (zero-copy in the variants; scipy's constructor would
    make the indices int64 too)."""
    copy = graph.copy()
    copy.indptr = graph.indptr.astype(np.int64)
    return copy


def assert_all_variants(graph, source, int64=True):
    expected = bfs.reference(graph, source)
    for g in (graph, with_int64_indptr(graph)) if int64 else (graph,):
        for name, fn in bfs.VARIANTS.items():
            out = fn(g, source)
            assert out.dtype == np.int32 and out.shape == (graph.shape[0],), name
            assert np.array_equal(out, expected), f"{name}, indptr {g.indptr.dtype}"


def test_registered_family():
    assert "bfs" in FAMILIES
    assert set(bfs.VARIANTS) == set(bfs.VARIANT_NAMES) and len(bfs.VARIANTS) == 7


@pytest.mark.parametrize("kind", bfs.KINDS)
def test_reference_and_baseline_agree_with_scipy(kind):
    rng = np.random.default_rng(1)
    graph = bfs.make_graph(kind, 600, rng)
    source = bfs.pick_source(graph, rng)
    expected = scipy_depths(graph, source)
    assert np.array_equal(bfs.reference(graph, source), expected)
    assert np.array_equal(bfs.baseline(graph, source), expected)


@pytest.mark.parametrize("kind", bfs.KINDS)
@pytest.mark.parametrize("n", [300, 5000])
def test_variants_match_reference_on_generated_graphs(kind, n):
    rng = np.random.default_rng(n)
    graph = bfs.make_graph(kind, n, rng)
    assert_all_variants(graph, bfs.pick_source(graph, rng))
    assert_all_variants(graph, graph.shape[0] - 1, int64=False)


def test_variants_on_a_large_power_law_graph():
    """Hub vertices with long edge lists fill several thread-local queues per level."""
    graph = bfs.rmat(1 << 14, np.random.default_rng(3), edge_factor=16)
    assert_all_variants(graph, bfs.pick_source(graph, np.random.default_rng(4)))


@pytest.mark.parametrize("edges, n, source", [
    ([], 1, 0),                                  # one vertex
    ([(0, 0)], 1, 0),                            # one vertex with a self loop
    ([], 5, 3),                                  # no edges
    ([(0, 1), (1, 2), (3, 4), (4, 3)], 5, 0),    # disconnected
    ([(0, 0), (0, 1), (1, 1), (1, 2)], 3, 0),    # self loops
    ([(0, 1), (0, 1), (1, 2), (1, 2), (2, 0)], 4, 1),  # duplicates, an isolated vertex
    ([(2, 1), (1, 0)], 3, 0),                    # edges point away from nothing: only the source
])
def test_edge_cases(edges, n, source):
    u, v = (np.array(x, dtype=np.int64) for x in zip(*edges)) if edges else (np.zeros(0, np.int64),) * 2
    graph = bfs.csr_graph(u, v, n)
    assert graph.nnz == len(edges)               # duplicates are kept, not summed
    assert np.array_equal(bfs.reference(graph, source), scipy_depths(graph, source))
    assert np.array_equal(bfs.baseline(graph, source), scipy_depths(graph, source))
    assert_all_variants(graph, source)


def test_scipy_int64_index_arrays_are_accepted():
    graph = bfs.rmat(1 << 10, np.random.default_rng(5))
    wide = sp.csr_array((graph.data, graph.indices.astype(np.int64), graph.indptr.astype(np.int64)),
                        shape=graph.shape)
    assert wide.indices.dtype == np.int64
    expected = bfs.reference(graph, 0)
    for fn in bfs.VARIANTS.values():
        assert np.array_equal(fn(wide, 0), expected)
    wide.indices[0] = graph.shape[0]
    with pytest.raises(ValueError, match="malformed CSR"):
        bfs.VARIANTS["serial_queue"](wide, 0)
    strided = sp.csr_array((graph.data, np.repeat(graph.indices, 2)[::2], graph.indptr), shape=graph.shape)
    assert not strided.indices.flags.c_contiguous             # a view, as scipy may keep one
    for fn in bfs.VARIANTS.values():
        assert np.array_equal(fn(strided, 0), expected)


def test_chain_depths():
    n = 150                                  # a level per vertex: 150 barriers per fused call
    graph = bfs.csr_graph(np.arange(n - 1), np.arange(1, n), n)
    assert np.array_equal(bfs.VARIANTS["two_phase_fused"](graph, 0), np.arange(n))
    assert_all_variants(graph, n // 2)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=120),
    st.integers(0, n - 1))))
def test_random_small_graphs(case):
    n, edges, source = case
    u = np.array([e[0] for e in edges], dtype=np.int64)
    v = np.array([e[1] for e in edges], dtype=np.int64)
    graph = bfs.csr_graph(u, v, n)
    expected = scipy_depths(graph, source)
    assert np.array_equal(bfs.reference(graph, source), expected)
    for name, fn in bfs.VARIANTS.items():
        assert np.array_equal(fn(graph, source), expected), name


def test_bad_arguments_are_named():
    graph = bfs.csr_graph([0, 1], [1, 2], 3)
    for fn in list(bfs.VARIANTS.values()) + [bfs.reference, bfs.baseline]:
        with pytest.raises(ValueError, match="source vertex 3 out of range"):
            fn(graph, 3)
        with pytest.raises(ValueError, match="out of range"):
            fn(graph, -1)
        with pytest.raises(TypeError, match="integer vertex"):
            fn(graph, 1.0)
        with pytest.raises(TypeError, match="CSR"):
            fn(graph.tocoo(), 0)
        with pytest.raises(TypeError, match="CSR"):
            fn(graph.toarray(), 0)
        with pytest.raises(ValueError, match="square"):
            fn(sp.csr_array(np.ones((2, 3))), 0)
        narrow = graph.copy()
        narrow.indices = graph.indices.astype(np.int16)
        with pytest.raises(TypeError, match="int32/int64 indptr and indices"):
            fn(narrow, 0)
    with pytest.raises(ValueError, match="out of range"):
        bfs.VARIANTS["serial_queue"](bfs.csr_graph([], [], 0), 0)
    with pytest.raises(ValueError, match=r"endpoints must be vertices in \[0, 3\)"):
        bfs.csr_graph([0], [3], 3)



def test_dispatch_refuses_a_bad_graph_by_name_before_the_features_read_it():
    """The features read ``graph.indptr`` unchecked: a dense or COO graph dispatched without a
    model failed with AttributeError ("'coo_array' object has no attribute 'indptr'")."""
    search = bfs.make_code_variant()
    graph = bfs.csr_graph([0, 1], [1, 2], 3)
    with pytest.raises(TypeError, match="CSR array or matrix, got coo_array in 'coo' format"):
        search(graph.tocoo(), 0)
    with pytest.raises(TypeError, match="CSR array or matrix, got ndarray"):
        search(graph.toarray(), 0)
    with pytest.raises(ValueError, match="square"):
        search(sp.csr_array(np.ones((2, 3))), 0)
    assert np.array_equal(search(graph, 0), [0, 1, 2])

@pytest.mark.parametrize("name", bfs.VARIANT_NAMES)
def test_malformed_csr_is_an_error_not_a_crash(name):
    def csr(indices, indptr):
        indices, indptr = np.array(indices, np.int32), np.array(indptr, np.int32)
        n = indptr.size - 1
        graph = sp.csr_array((np.ones(indices.size, np.int8), indices, np.zeros(n + 1, np.int32)), shape=(n, n))
        graph.indptr = indptr                     # scipy would refuse some of these
        return graph

    fn = bfs.VARIANTS[name]
    for graph in (csr([1, 7, 0], [0, 2, 3, 3]),       # index 7 in a 3-vertex graph
                  csr([1, 2, 0], [0, 2, 3, 9]),       # vertex 2's edges run past the end
                  csr([1, 2, 0], [0, 2, 1, 3])):      # vertex 1's range runs backwards
        with pytest.raises(ValueError, match="malformed CSR"):
            fn(graph, 0)
    # vertices 1 and 3 share edges through vertex 2's backward range, which is never read:
    # variants that queue edges overflow (an error), the others see a consistent graph
    graph = csr([1, 3, 0, 0, 0], [0, 2, 5, 2, 5])
    try:
        out = fn(graph, 0)
    except ValueError as exc:
        assert "malformed CSR" in str(exc)
    else:
        assert np.array_equal(out, [0, 1, -1, 1])


def test_features_on_a_hand_computed_graph():
    # out-degrees 3, 1, 0, 0 (a duplicate edge counts): mean 1, variance (4 + 0 + 1 + 1) / 4
    graph = bfs.csr_graph([0, 0, 0, 1], [1, 2, 2, 3], 4)
    feats = dict(zip(bfs.FEATURES, bfs.make_code_variant().compute_features(graph, 0)))
    assert feats == pytest.approx({"vertices": 4, "edges": 4, "avg_out_deg": 1.0,
                                   "deg_sd": np.sqrt(1.5), "max_deviation": 2.0})
    empty = bfs.csr_graph([], [], 0)
    assert [f(empty, 0) for f in bfs.FEATURES.values()] == [0.0] * 5


def test_edge_list_reader(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# a comment\n0 1\n\n1\t2   # trailing comment\n2 0\n1 2\n")
    graph = bfs.read_edge_list(path)
    assert graph.shape == (3, 3) and graph.nnz == 4
    assert np.array_equal(bfs.VARIANTS["expand_contract_fused"](graph, 0), [0, 1, 2])
    assert bfs.read_edge_list(path, n_vertices=5).shape == (5, 5)
    (tmp_path / "empty.txt").write_text("# nothing\n")
    assert bfs.read_edge_list(tmp_path / "empty.txt", n_vertices=2).nnz == 0


@pytest.mark.parametrize("text, n, message", [
    ("0 1\n1 2 3\n", None, r"line 2: expected two vertex ids"),
    ("0 1\n1\n", None, r"line 2: expected two vertex ids"),
    ("0 x\n", None, r"line 1: vertex ids must be integers"),
    ("0 1.5\n", None, r"line 1: vertex ids must be integers"),
    ("0 -1\n", None, r"line 1: vertex ids must be in"),
    ("0 4\n", 3, r"vertex id 4 is not below n_vertices=3"),
    ("# only comments\n", None, r"no edges, and n_vertices not given"),
])
def test_bad_edge_list_files(tmp_path, text, n, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        bfs.read_edge_list(path, n_vertices=n)
    with pytest.raises(FileNotFoundError):
        bfs.read_edge_list(tmp_path / "missing.txt")


def test_an_edge_list_too_large_for_memory_or_not_utf8_is_named(tmp_path, monkeypatch):
    path = tmp_path / "sparse_ids.txt"
    path.write_text("0 1\n5 2147483646\n")          # the vertex count is the largest id + 1
    monkeypatch.setattr(bfs, "BYTES_PER_VERTEX", 10**6)   # whatever this machine's memory: too much
    with pytest.raises(ValueError, match="2,147,483,647 vertices need about .* GB are free here; number the vertices"):
        bfs.read_edge_list(path)
    path.write_bytes(b"0 1\n1 2\n\xff\xfe 3\n")
    with pytest.raises(ValueError, match="sparse_ids.txt, line 3: not UTF-8 text"):
        bfs.read_edge_list(path)


def test_inputs_deterministic_disjoint_and_in_range():
    (a, ia), (b, ib) = bfs.train_test_inputs(8, 8, seed=3)
    (a2, ia2), _ = bfs.train_test_inputs(8, 8, seed=3)
    assert ia == ia2 and all(s == s2 and (g != g2).nnz == 0 for (g, s), (g2, s2) in zip(a, a2))
    assert not set(ia) & set(ib)
    assert {i.split("-")[2] for i in ia} == set(bfs.KINDS)
    for graph, source in a + b:
        assert graph.indices.dtype == np.int32 and 0 <= source < graph.shape[0]
        assert bfs.MIN_VERTICES // 4 <= graph.shape[0] <= 2 * bfs.MAX_VERTICES
        assert graph.indptr[source + 1] > graph.indptr[source]   # the source has out-edges


def test_tune_records_trains_and_dispatches(store):
    (train, ids), (test, _) = bfs.make_inputs(5, seed=11, max_vertices=2000), bfs.make_inputs(3, 12, max_vertices=2000)
    cv = bfs.make_code_variant()
    cv.record, cv.device_id = True, "test_cpu"
    tuner = autotuner("bfs", store=store, policy=FAST, progress=False)
    tuner.set_training_args(train, ids=ids)
    [model] = tuner.tune([cv])
    rows = store.rows("bfs", "test_cpu")
    assert sorted(r.input_id for r in rows) == sorted(ids)
    assert all(r.best in bfs.VARIANT_NAMES and not r.failed for r in rows)
    again = bfs.make_code_variant()
    again.model = SelectorModel.from_dict(store.model("bfs", "test_cpu"))
    for graph, source in test:
        assert again.select(graph, source) == cv.select(graph, source) in bfs.VARIANT_NAMES
        assert np.array_equal(cv(graph, source), bfs.reference(graph, source))
