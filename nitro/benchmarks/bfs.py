"""Breadth-first search of directed CSR graphs: seven C++ variants (Merrill et al.'s GPU BFS
strategies as OpenMP code, plus a serial queue), the paper's five graph features, generated
graphs (grid, R-MAT, random regular, road-like) and an edge-list reader.

Every call takes ``(graph, source)``: a square ``scipy.sparse`` CSR array or matrix (values are
ignored; duplicate edges and self loops are allowed) and a source vertex, and returns the int32
BFS depth of every vertex, -1 where the source does not reach it. The variants read int32 or
int64 ``indptr`` and int32 ``indices`` in place; int64 ``indices`` are copied to int32 first.
"""
from __future__ import annotations

import os
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .. import _variants
from ..variant import CodeVariant, code_variant

_cpp = _variants.bfs
VARIANT_NAMES = ["serial_queue",
                 "expand_contract_fused", "expand_contract_iterative",
                 "contract_expand_fused", "contract_expand_iterative",
                 "two_phase_fused", "two_phase_iterative"]
KINDS = ["grid", "rmat", "random_regular", "road"]
MIN_VERTICES, MAX_VERTICES = 1 << 8, 1 << 17


# -- graphs ----------------------------------------------------------------------------------
BYTES_PER_VERTEX = 32     # building (a count and a row pointer) and a search (levels, frontiers)


def _check_memory(n: int) -> None:
    """A clear error, instead of the kernel's OOM kill, for more vertices than memory holds (an
    edge list with sparse ids: the vertex count is the largest id + 1)."""
    try:                 # Linux's estimate of what can be had without swapping (page cache included)
        with open("/proc/meminfo") as f:
            free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        return
    if n * BYTES_PER_VERTEX > free:
        raise ValueError(f"csr_graph: {n:,} vertices need about {n * BYTES_PER_VERTEX / 1e9:.1f} GB, and "
                         f"{free / 1e9:.1f} GB are free here; number the vertices densely (ids 0..n-1, e.g. "
                         "numpy.unique(ids, return_inverse=True))")

def csr_graph(sources, targets, n_vertices: int) -> sp.csr_array:
    """The CSR graph with the directed edges ``sources[i] -> targets[i]``, duplicates kept,
    int32 indices and the smallest indptr type that holds the edge count."""
    u = np.asarray(sources) if len(sources) else np.zeros(0, np.int64)
    v = np.asarray(targets) if len(targets) else np.zeros(0, np.int64)
    if u.shape != v.shape or u.ndim != 1:
        raise ValueError("csr_graph: sources and targets must be 1-D arrays of one length")
    if not (np.issubdtype(u.dtype, np.integer) and np.issubdtype(v.dtype, np.integer)):
        raise TypeError(f"csr_graph: vertex ids must be integers, got {u.dtype} and {v.dtype}")
    n = int(n_vertices)
    if not 0 <= n < 2**31:
        raise ValueError(f"csr_graph: n_vertices must be in [0, 2**31), got {n_vertices}")
    if u.size and (min(u.min(), v.min()) < 0 or max(u.max(), v.max()) >= n):
        raise ValueError(f"csr_graph: edge endpoints must be vertices in [0, {n})")
    _check_memory(n)
    order = np.argsort(u, kind="stable")
    index_type = np.int32 if u.size < 2**31 else np.int64
    indptr = np.zeros(n + 1, dtype=index_type)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    indices = v[order].astype(np.int32)
    return sp.csr_array((np.ones(u.size, dtype=np.int8), indices, indptr), shape=(n, n))


def _check_graph(graph):
    """``graph`` itself, once it is a square scipy.sparse CSR array or matrix with int32/int64
    index arrays, else an error naming what it is. O(1): the input features call it too, so that
    a dispatched call with a dense or COO graph is refused by name before a feature reads
    ``graph.indptr``."""
    if not sp.issparse(graph) or graph.format != "csr":
        raise TypeError(f"bfs graph must be a scipy.sparse CSR array or matrix, got {type(graph).__name__}"
                        + (f" in {graph.format!r} format (call .tocsr())" if sp.issparse(graph) else ""))
    n, cols = graph.shape
    if n != cols:
        raise ValueError(f"bfs graph must be square (an adjacency matrix), got shape {graph.shape}")
    if graph.indptr.dtype not in (np.int32, np.int64) or graph.indices.dtype not in (np.int32, np.int64):
        raise TypeError(f"bfs graph needs int32/int64 indptr and indices, got {graph.indptr.dtype} and "
                        f"{graph.indices.dtype}")
    return graph


def _check(graph, source) -> tuple[np.ndarray, np.ndarray, int]:
    n = _check_graph(graph).shape[0]
    indptr, indices = graph.indptr, graph.indices
    if indices.dtype == np.int64:  # scipy's int64 index arrays: one checked copy (int32 is zero-copy)
        if indices.size and not 0 <= indices.min() <= indices.max() < n:
            raise ValueError("bfs: malformed CSR graph (an index outside [0, n))")
        indices = indices.astype(np.int32)
    indptr, indices = np.ascontiguousarray(indptr), np.ascontiguousarray(indices)   # a strided view: a copy
    if isinstance(source, (bool, np.bool_)) or not isinstance(source, Integral):
        raise TypeError(f"bfs source must be an integer vertex, got {source!r}")
    if not 0 <= source < n:
        raise ValueError(f"bfs source vertex {source} out of range for a graph of {n} vertices")
    return indptr, indices, int(source)


def _wrap(name):
    fn = getattr(_cpp, name)

    def variant(graph, source):
        indptr, indices, s = _check(graph, source)
        return fn(indptr, indices, s)
    variant.__name__ = name
    variant.__doc__ = f"BFS depths from source, C++ variant {name}"
    return variant


VARIANTS = {name: _wrap(name) for name in VARIANT_NAMES}


def reference(graph, source) -> np.ndarray:
    """Level-synchronous BFS in NumPy: each level gathers all out-edges of the frontier."""
    indptr, indices, source = _check(graph, source)
    depth = np.full(graph.shape[0], -1, dtype=np.int32)
    depth[source] = 0
    frontier = np.array([source])
    level = 0
    while frontier.size:
        starts, ends = indptr[frontier], indptr[frontier + 1]
        counts = ends - starts
        edge = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(starts, counts)
        neighbours = indices[edge]
        frontier = np.unique(neighbours[depth[neighbours] == -1])
        level += 1
        depth[frontier] = level
    return depth


def baseline(graph, source) -> np.ndarray:
    """What a SciPy user would call: ``csgraph.breadth_first_order``, with the depths read off
    its BFS order (the parents of consecutive vertices come in order, so levels are contiguous).
    The arguments are checked as the variants check them: SciPy itself printed an ignored
    IndexError for a source out of range and returned -1 everywhere."""
    _check(graph, source)
    order, parents = csgraph.breadth_first_order(graph, source, directed=True, return_predecessors=True)
    position = np.empty(graph.shape[0], dtype=np.int64)
    position[order] = np.arange(order.size)
    parent_position = position[parents[order[1:]]]
    depth = np.full(graph.shape[0], -1, dtype=np.int32)
    begin, end, level = 0, 1, 0
    while begin < end:
        depth[order[begin:end]] = level
        begin, end = end, 1 + int(np.searchsorted(parent_position, end))
        level += 1
    return depth


# -- input features (the paper's: #Vertices, #Edges, AvgOutDeg, Deg-SD, MaxDeviation) -------------
def n_vertices(graph, source=None) -> float:
    return float(_check_graph(graph).shape[0])


def n_edges(graph, source=None) -> float:
    return float(_check_graph(graph).indptr[-1])


def avg_out_degree(graph, source=None) -> float:
    return float(_check_graph(graph).indptr[-1]) / max(1, graph.shape[0])


def degree_sd(graph, source=None) -> float:
    return float(np.diff(_check_graph(graph).indptr).std()) if graph.shape[0] else 0.0


def max_deviation(graph, source=None) -> float:
    """Largest out-degree minus the mean out-degree."""
    if not _check_graph(graph).shape[0]:
        return 0.0
    return float(np.diff(graph.indptr).max()) - avg_out_degree(graph)


FEATURES = {"vertices": n_vertices, "edges": n_edges, "avg_out_deg": avg_out_degree,
            "deg_sd": degree_sd, "max_deviation": max_deviation}


def make_code_variant(name: str = "bfs") -> CodeVariant:
    return code_variant(name, VARIANTS, FEATURES, default="expand_contract_iterative", reference=reference)


# -- generated graphs ------------------------------------------------------------------------------
def _grid_edges(rows: int, cols: int, keep: float, rng: np.random.Generator):
    """Both directions of the 4-neighbour grid's edges, each undirected edge kept with ``keep``."""
    ids = np.arange(rows * cols).reshape(rows, cols)
    u = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    v = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    if keep < 1:
        mask = rng.random(u.size) < keep
        u, v = u[mask], v[mask]
    return np.concatenate([u, v]), np.concatenate([v, u])


def grid(n: int, rng: np.random.Generator) -> sp.csr_array:
    """A 2-D grid of about ``n`` vertices, aspect ratio up to 1:8 (diameter ~ 2 sqrt(n) or more)."""
    aspect = rng.uniform(1, 8)
    rows = max(1, int(round(np.sqrt(n / aspect))))
    cols = max(1, n // rows)
    return csr_graph(*_grid_edges(rows, cols, 1.0, rng), rows * cols)


def road(n: int, rng: np.random.Generator) -> sp.csr_array:
    """A road-like network: a grid with 15-35% of its streets removed and a few long edges
    (highways) between random vertices, both directions."""
    rows = max(1, int(np.sqrt(n)))
    cols = max(1, n // rows)
    u, v = _grid_edges(rows, cols, rng.uniform(0.65, 0.85), rng)
    size = rows * cols
    long = max(1, size // 2000)
    a, b = rng.integers(0, size, long), rng.integers(0, size, long)
    return csr_graph(np.concatenate([u, a, b]), np.concatenate([v, b, a]), size)


def rmat(n: int, rng: np.random.Generator, edge_factor: int | None = None,
         probabilities=(0.57, 0.19, 0.19, 0.05)) -> sp.csr_array:
    """An R-MAT power-law graph with Graph500's parameters: 2**scale vertices (scale = round(log2 n)),
    ``edge_factor`` (default 4 to 16) times as many directed edges, vertex labels permuted."""
    scale = max(1, int(round(np.log2(max(n, 2)))))
    m = (edge_factor or int(rng.integers(4, 17))) << scale
    a, b, c, _ = probabilities
    u = np.zeros(m, dtype=np.int64)
    v = np.zeros(m, dtype=np.int64)
    for bit in range(scale):
        r = rng.random(m)
        down = r >= a + b                                     # quadrants c and d: source bit set
        right = ((r >= a) & (r < a + b)) | (r >= a + b + c)   # quadrants b and d: target bit set
        u |= down.astype(np.int64) << bit
        v |= right.astype(np.int64) << bit
    perm = rng.permutation(1 << scale)
    return csr_graph(perm[u], perm[v], 1 << scale)


def random_regular(n: int, rng: np.random.Generator, degree: int | None = None) -> sp.csr_array:
    """A random directed graph whose vertices all have out- and in-degree ``degree`` (default 2
    to 16): the union of ``degree`` random permutations."""
    k = degree or int(rng.integers(2, 17))
    u = np.tile(np.arange(n), k)
    v = np.concatenate([rng.permutation(n) for _ in range(k)])
    return csr_graph(u, v, n)


GENERATORS = {"grid": grid, "rmat": rmat, "random_regular": random_regular, "road": road}


def make_graph(kind: str, n: int, rng: np.random.Generator) -> sp.csr_array:
    """One generated graph of about ``n`` vertices."""
    if kind not in GENERATORS:
        raise ValueError(f"unknown graph kind {kind!r}; known: {KINDS}")
    return GENERATORS[kind](n, rng)


def pick_source(graph, rng: np.random.Generator) -> int:
    """A random vertex with out-edges (any vertex when none has)."""
    candidates = np.flatnonzero(np.diff(graph.indptr))
    return int(rng.choice(candidates)) if candidates.size else int(rng.integers(graph.shape[0]))


def make_inputs(count: int, seed: int, min_vertices: int = MIN_VERTICES, max_vertices: int = MAX_VERTICES):
    """``count`` ``(graph, source)`` pairs, vertex counts log-uniform in [min, max], kinds in turn;
    returns ``(args, ids)``. Deterministic for a seed."""
    if count < 0 or min_vertices < 1 or max_vertices < min_vertices:
        raise ValueError("make_inputs: need count >= 0 and 1 <= min_vertices <= max_vertices")
    rng = np.random.default_rng(seed)
    args, ids = [], []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        n = int(np.exp(rng.uniform(np.log(min_vertices), np.log(max_vertices))))
        graph = make_graph(kind, n, rng)
        args.append((graph, pick_source(graph, rng)))
        ids.append(f"s{seed}-{i:04d}-{kind}-{graph.shape[0]}v{graph.nnz}e")
    return args, ids


def train_test_inputs(n_train: int = 48, n_test: int = 48, seed: int = 0):
    """Disjoint training and test sets (different seeds; ids never coincide)."""
    return make_inputs(n_train, seed=2 * seed + 1), make_inputs(n_test, seed=2 * seed + 2)


# -- edge-list files -------------------------------------------------------------------------------
def read_edge_list(path: str | os.PathLike, n_vertices: int | None = None) -> sp.csr_array:
    """A graph from a text file of ``u v`` lines (one directed edge each, 0-based vertex ids,
    whitespace separated; blank lines and text after ``#`` are ignored). The vertex count is
    ``n_vertices`` or one more than the largest id."""
    sources, targets = [], []
    with open(path, "rb") as f:             # read as bytes: a line that is not UTF-8 is named
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{os.fspath(path)}, line {number}: not UTF-8 text: {raw[:60]!r}") from None
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            where = f"{os.fspath(path)}, line {number}"
            if len(fields) != 2:
                raise ValueError(f"{where}: expected two vertex ids 'u v', got {len(fields)} fields: {line.strip()!r}")
            try:
                u, v = int(fields[0]), int(fields[1])
            except ValueError:
                raise ValueError(f"{where}: vertex ids must be integers, got {line.strip()!r}") from None
            if u < 0 or v < 0 or max(u, v) >= 2**31 - 1:
                raise ValueError(f"{where}: vertex ids must be in [0, 2**31 - 1), got {line.strip()!r}")
            sources.append(u)
            targets.append(v)
    largest = max(max(sources, default=-1), max(targets, default=-1))
    if n_vertices is None:
        if largest < 0:
            raise ValueError(f"{os.fspath(path)}: no edges, and n_vertices not given")
        n_vertices = largest + 1
    elif largest >= n_vertices:
        raise ValueError(f"{os.fspath(path)}: vertex id {largest} is not below n_vertices={n_vertices}")
    return csr_graph(np.array(sources, dtype=np.int64), np.array(targets, dtype=np.int64), n_vertices)
