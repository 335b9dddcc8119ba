"""`nitro export-cpp`: the generated C++17 header compiles with -Wall -Wextra -Werror, chooses
exactly as Python (SelectorModel.predict_index) on >= 3,000 points for every model kind, and
finds a device's model as Bundle.model_for does (exact id, datasheet product, default)."""
import shutil
import subprocess

import numpy as np
import pytest

from nitro.bundle import Bundle
from nitro.bundle_build import datasheet_table
from nitro.export_cpp import export_header, namespace_for
from nitro.learn import RegressionSelector, fit_selector, make_selector
from nitro.model import KINDS, SelectorModel

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

FEATURES = ["size", "spread", "noise"]
VARIANTS = ["small", "medium", "large", "huge"]
DRIVER = r"""
#include "selector.hpp"
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
namespace ns = NAMESPACE;
// P <model> <n values>: the variant chosen; D <name>: model index and path; S <name> <values>: select
int main() {
  std::string cmd;
  double x[ns::n_features + 1];
  while (std::cin >> cmd) {
    if (cmd == "D") {
      std::string name;
      std::getline(std::cin >> std::ws, name);
      const char* path = nullptr;
      const int model = ns::model_for(name.c_str(), &path);
      std::printf("%d %s\n", model, path);
      continue;
    }
    std::size_t model = 0;
    std::string name;
    if (cmd == "P") std::cin >> model; else std::cin >> name;
    for (std::size_t j = 0; j < ns::n_features; ++j) {
      std::string t;
      std::cin >> t;
      x[j] = std::strtod(t.c_str(), nullptr);
    }
    std::printf("%d\n", cmd == "P" ? ns::predict(model, x) : ns::select(name.c_str(), x));
  }
}
"""


def problem(n, seed):
    """Four variants whose times depend on a heavy-tailed size and a signed spread."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([10 ** rng.uniform(2, 7, n), rng.normal(size=n), rng.uniform(0, 1, n)])
    s = np.log10(X[:, 0])
    T = np.column_stack([10 ** (s - 5) + 1e-3, 10 ** (0.5 * s - 3) * (1 + 0.5 * (X[:, 1] > 0)), 10 ** (s - 4.6),
                         10 ** (0.8 * s - 4) * (1 + (X[:, 1] < -1))])
    return X, T * np.exp(rng.normal(0, 0.05, T.shape))


def kernel_model(rng):
    """A kernel model (the Kronecker learner's export) over the variants in another order."""
    n = 330          # not a multiple of 8 or 16: the distance, exp and dot loops have tails
    return SelectorModel(variants=VARIANTS[::-1], input_features=FEATURES, kind="kernel", params={
        "mean": [8.0, 0.0, 0.4], "scale": [2.5, 0.6, 0.2], "gamma": 0.5, "centers": rng.normal(size=(n, 3)).tolist(),
        "weights": rng.normal(size=(n, 4)).tolist(), "offset": [0.0, 0.1, -0.1, 0.05],
        "unit": [1.0, 1e-3, 1.0]})                 # one feature in a unit of its own (preprocessing.input_units)


@pytest.fixture(scope="module")
def bundle():
    """One device per model kind (and an SVM with device features), named after datasheet products."""
    X, T = problem(160, 0)
    rng = np.random.default_rng(5)
    models = {name: SelectorModel.from_estimator(fit_selector(make_selector(name), X, T), FEATURES, variants=VARIANTS)
              for name in ("svm", "regression", "costmin", "lsq", "tree", "threshold")}
    millions = X * [1e-6, 1.0, 1.0]     # a size in millions: logged in a unit of its own (``unit``)
    models["costmin"] = SelectorModel.from_estimator(fit_selector(make_selector("costmin"), millions, T), FEATURES,
                                                     variants=VARIANTS)
    Xd = np.hstack([millions, np.repeat([[4.0], [16.0]], 80, axis=0)])
    est = fit_selector(make_selector("svm"), Xd, T)
    models["svm-device"] = SelectorModel.from_estimator(est, FEATURES, variants=VARIANTS, device_features={"cores": 16.0})
    assert all(models[n].params["unit"][0] < 1e-3 for n in ("costmin", "svm-device"))
    models["kernel"] = kernel_model(rng)
    models["gbt-per-variant"] = SelectorModel.from_estimator(RegressionSelector(per_variant=True, max_iter=40).fit(X, T),
                                                             FEATURES, variants=VARIANTS)
    models["constant"] = SelectorModel(variants=["huge", "small"], input_features=FEATURES, kind="constant",
                                       params={"label": 1})
    products = ["tesla_p100", "tesla_v100_sxm2", "titan_v", "geforce_gtx_980", "tesla_k40m", "tesla_k20c",
                "geforce_gtx_480", "tesla_c2075", "geforce_gtx_770", "tesla_t4"]
    ids = {name: f"{products[i]}-node{i}" for i, name in enumerate(models)}
    b = Bundle.build("my-solver", VARIANTS, FEATURES, "medium", {ids[n]: m for n, m in models.items()},
                     info={ids[n]: {"product": products[i]} for i, n in enumerate(models)},
                     datasheet=datasheet_table())
    assert {m.kind for m in models.values()} == set(KINDS)
    return b


@pytest.fixture(scope="module")
def driver(bundle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cpp")
    (tmp / "selector.hpp").write_text(export_header(bundle))
    (tmp / "driver.cpp").write_text(DRIVER.replace("NAMESPACE", namespace_for(bundle.computation)))
    build = subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(tmp / "driver"),
                            str(tmp / "driver.cpp")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]

    run_dir = tmp

    def run(lines):
        out = subprocess.run([str(tmp / "driver")], input="\n".join(lines) + "\n", capture_output=True, text=True,
                             check=True)
        return out.stdout.split("\n")[:len(lines)]
    run.dir = run_dir
    return run


def test_header_compiles_warning_free_when_optimised_for_this_cpu(driver):
    """-O3 -march=native propagates the models' constant sizes into the loops (GCC then warns
    about loops it can prove odd things of); the header must stay clean there too."""
    build = subprocess.run(["g++", "-std=c++17", "-O3", "-march=native", "-Wall", "-Wextra", "-Werror", "-c",
                            "-o", str(driver.dir / "driver.o"), str(driver.dir / "driver.cpp")],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]


def test_header_compiles_warning_free_as_cpp20(driver):
    """GCC 12 at -O2 warned (-Wrestrict) in the name matching's std::string::replace under C++20."""
    build = subprocess.run(["g++", "-std=c++20", "-O2", "-Wall", "-Wextra", "-Werror", "-c",
                            "-o", str(driver.dir / "driver20.o"), str(driver.dir / "driver.cpp")],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]


def test_odd_names_stay_inside_their_strings_and_comments(bundle, tmp_path):
    """Device and variant names from a store can hold line breaks, quotes, backslashes and
    non-ASCII text: none may end a comment line early or a string literal."""
    odd_devices = ["gpu\nint evil = 1;", "ends in a backslash \\", "cr\rlf", "t\u00e9sla_p100 \"quoted\"", "??=x"]
    model = next(iter(bundle.devices.values()))["model"]
    odd = Bundle.build("odd", ["a\\", "b\nint x;"], FEATURES, "a\\",
                       {d: SelectorModel(["a\\", "b\nint x;"], FEATURES, "constant", {"label": 1}) for d in odd_devices},
                       datasheet=datasheet_table())
    (tmp_path / "selector.hpp").write_text(export_header(odd, "odd"))
    (tmp_path / "main.cpp").write_text(
        '#include "selector.hpp"\n#include <cstdio>\nint main() {\n  const double x[3] = {1, 2, 3};\n' +
        "".join(f"  std::printf(\"%d %d\\n\", odd::model_for({s}), odd::select({s}, x));\n"
                for s in [json_c(d) for d in odd_devices]) +
        '  std::printf("%d %s\\n", odd::select(nullptr, x), odd::variant_names[1]);\n}\n')
    build = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "main"),
                            str(tmp_path / "main.cpp")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    out = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:len(odd_devices)] == [f"{i} 1" for i in range(len(odd_devices))]   # each found by its exact name
    assert out[len(odd_devices)] == "0 b\nint x;".split("\n")[0] and out[len(odd_devices) + 1] == "int x;"
    with pytest.raises(ValueError, match="NUL character"):
        export_header(Bundle.build("nul", VARIANTS, FEATURES, "small", {"gpu\0": model}), "nul")


def json_c(name: str) -> str:
    """``name`` as a C++ string literal written independently of the exporter (UTF-8 bytes, octal escapes)."""
    return '"' + "".join(f"\\{b:03o}" for b in name.encode()) + '"'


def test_every_model_kind_chooses_as_python(bundle, driver):
    rng = np.random.default_rng(2)
    # inside the training ranges (counts, millions), far outside, signed/small values, extremes of log1p's range
    extremes = np.array([[0.0, 0.0, 0.0], [5e-324, -1e-310, 1e-300], [1e30, -1e30, 3e38], [1e15, -1e-9, -0.0]])
    X = np.vstack([problem(3000, 3)[0], np.column_stack([10 ** rng.uniform(-2, 10, 500), rng.normal(0, 5, 500),
                                                         rng.uniform(-3, 3, 500)]),
                   problem(1000, 4)[0] * [1e-6, 1.0, 1.0], extremes])        # the sizes in millions too
    for i, (device, entry) in enumerate(bundle.devices.items()):
        model = entry["model"]
        expected = [bundle.variants.index(model.variants[c]) for c in model.predict_index(X)]
        got = driver([f"P {i} " + " ".join(repr(float(v)) for v in x) for x in X])
        assert [int(g) for g in got] == expected, f"{device} ({model.kind})"
        if model.kind != "constant":
            assert len(set(expected)) >= 2, f"{device}: the points reach one choice only"


def test_devices_fall_back_as_the_bundle_does(bundle, driver):
    names = [*bundle.devices, "NVIDIA Tesla P100 PCIe 16GB", "Tesla V100-SXM2-16GB", "TITAN V", "Tesla K40m",
             "NVIDIA GeForce GTX 980", "NVIDIA A100-SXM4-40GB", "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz",
             "AMD EPYC 7763 64-Core Processor", "cpu_amd_epyc_7763_2t", "unknown device", "tesla"]
    ids = list(bundle.devices)
    for name, line in zip(names, driver([f"D {name}" for name in names])):
        model, info = bundle.model_for(name, query=False)
        index, path = line.split()
        assert path == info["path"], name
        assert (int(index) == -1) if model is None else (ids[int(index)] == (info.get("as") or info["device"])), name


def test_select_runs_the_default_on_unknown_devices_and_bad_values(bundle, driver):
    default = bundle.variants.index(bundle.default)
    svm = list(bundle.devices)[0]
    x = [1e5, 0.5, 0.3]
    chosen = bundle.devices[svm]["model"].predict_index([x])[0]
    lines = [f"S {svm} 100000 0.5 0.3", "S no-such-device 100000 0.5 0.3", f"S {svm} nan 0.5 0.3"]
    assert [int(v) for v in driver(lines)] == [bundle.variants.index(bundle.devices[svm]["model"].variants[chosen]),
                                               default, default]


def test_select_remembers_the_last_name_only_while_it_repeats(bundle, driver):
    """select() keeps the last name's lookup (per thread): names that change, repeat, come back
    in the same buffer, or are too long to keep choose as Bundle.model_for's model does."""
    x = [1e3, 0.5, 0.3]
    product = "Tesla_P100-PCIE-16GB"          # found by datasheet product: the lookup that costs
    names = [list(bundle.devices)[1], product, product, "no-such-device", product, product + "-x" * 70,
             product + "-x" * 70, list(bundle.devices)[0], product]
    expected = []
    for name in names:
        model = bundle.model_for(name, query=False)[0]
        expected.append(bundle.variants.index(model.predict([x])[0]) if model else bundle.variants.index(bundle.default))
    assert len(set(expected)) >= 2
    assert [int(v) for v in driver([f"S {name} 1000 0.5 0.3" for name in names])] == expected


@pytest.mark.parametrize("name", ["not a name", "std", "std2", "class", "concept", "__mine", "_Mine", "_mine", "a__b", "1st"])
def test_a_bad_namespace_is_refused(bundle, name):
    with pytest.raises(ValueError, match="namespace"):
        export_header(bundle, namespace=name)


def test_the_default_namespace_is_a_valid_one_for_any_computation_name():
    assert namespace_for("spmv") == "nitro_spmv" and namespace_for("my--solver_") == "nitro_my_solver_"
    assert namespace_for("__x") == "nitro_x"


def test_headers_of_namespaces_alike_but_for_case_compile_together_and_alike_names_refuse_to(tmp_path):
    """The guard carries the layout version, the namespace as it is and the computation: Foo
    and foo each keep their header; a-b and a_b (one namespace) fail to compile together
    instead of the second header being skipped without a word."""
    from nitro.export_cpp import EVALUATORS, LAYOUT
    assert f"namespace nitro_eval_v{LAYOUT} {{" in EVALUATORS.read_text()
    assert f"#define NITRO_SELECTOR_EVAL_HPP_V{LAYOUT}\n" in EVALUATORS.read_text()

    def header(computation, label, namespace=None):
        b = Bundle.build(computation, VARIANTS, FEATURES, "small",
                         {"dev": SelectorModel(VARIANTS, FEATURES, "constant", {"label": label})})
        (tmp_path / f"{computation}.hpp").write_text(export_header(b, namespace))

    def build(*computations, call):
        (tmp_path / "main.cpp").write_text("".join(f'#include "{c}.hpp"\n' for c in computations) +
                                           "#include <cstdio>\nint main() {\n  const double x[3] = {1, 2, 3};\n"
                                           f"  std::printf(\"{'%d ' * len(call)}\\n\", {', '.join(call)});\n}}\n")
        return subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "main"),
                               str(tmp_path / "main.cpp")], capture_output=True, text=True)
    header("Foo", 1, "Foo")
    header("foo", 2, "foo")
    assert build("Foo", "foo", call=['Foo::select("dev", x)', 'foo::select("dev", x)']).returncode == 0
    assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True).stdout.split() == ["1", "2"]
    header("a-b", 1)
    header("a_b", 2)
    assert namespace_for("a-b") == namespace_for("a_b")
    assert "redefinition" in build("a-b", "a_b", call=['nitro_a_b::select("dev", x)']).stderr


def test_export_from_the_store_takes_the_stored_models(bundle, store):
    from nitro.export_cpp import bundle_from_store
    store.declare("my-solver", VARIANTS, FEATURES)
    ids = list(bundle.devices)[:2]
    for d in ids:
        store.put_model("my-solver", d, bundle.devices[d]["model"].to_dict())
    got = bundle_from_store(store, "my-solver", devices=ids, default="medium")
    assert list(got.devices) == ids and got.default == "medium"
    assert [got.devices[d]["model"].to_dict() for d in ids] == [bundle.devices[d]["model"].to_dict() for d in ids]
    assert got.devices[ids[0]]["product"] == bundle.devices[ids[0]]["product"]     # from the datasheet
    with pytest.raises(ValueError, match="no stored model"):
        bundle_from_store(store, "my-solver", devices=[*ids, "tesla_k20c-elsewhere"])


def test_cli_writes_the_header_from_a_bundle_file(bundle, tmp_path, capsys):
    from nitro.cli import main
    path = bundle.save(tmp_path / "solver.nitro.json")
    out = tmp_path / "selector.hpp"
    assert main(["export-cpp", "my-solver", "--bundle", str(path), "-o", str(out), "--namespace", "solver"]) == 0
    assert "namespace solver {" in out.read_text() and "selector.hpp" in capsys.readouterr().out
    assert main(["export-cpp", "other", "--bundle", str(path), "-o", str(out)]) == 2
    assert "holds 'my-solver', not 'other'" in capsys.readouterr().err
    first = list(bundle.devices)[0]
    assert main(["export-cpp", "my-solver", "--bundle", str(path), "-o", str(out), "--default", "huge",
                 "--devices", first]) == 0
    header = out.read_text()
    assert "default_variant = 3;" in header and "n_models = 1;" in header and first in header
    assert "default huge" in capsys.readouterr().out
    assert main(["export-cpp", "my-solver", "--bundle", str(path), "-o", str(out), "--devices", "nope"]) == 2
    assert "the bundle has no model of 'nope'" in capsys.readouterr().err
    assert main(["export-cpp", "my-solver", "--bundle", str(path), "-o", str(out), "--default", "zzz"]) == 2
    assert "--default 'zzz' is not one of the bundle's variants" in capsys.readouterr().err


def test_cli_takes_a_model_file_written_by_tune_from_source(bundle, tmp_path, capsys):
    """A read-only store user writes the model to a file (tune-from-source -o) and exports it."""
    import json

    from nitro.cli import main
    from nitro.store import Store
    Store().declare("my-solver-from-a-file", VARIANTS, FEATURES)          # the CLI's default store
    device = list(bundle.devices)[0]
    model = bundle.devices[device]["model"]
    d = model.to_dict()
    d["provenance"] = {**d.get("provenance", {}), "target": "gpu_only_in_a_file"}
    path = tmp_path / "model.json"
    path.write_text(json.dumps(d))
    out = tmp_path / "selector.hpp"
    assert main(["export-cpp", "my-solver-from-a-file", "--model", str(path), "-o", str(out)]) == 0
    assert '"gpu_only_in_a_file"' in out.read_text() and "gpu_only_in_a_file" in capsys.readouterr().out
    del d["provenance"]["target"]
    path.write_text(json.dumps(d))
    assert main(["export-cpp", "my-solver-from-a-file", "--model", str(path), "-o", str(out)]) == 2
    assert "names no target device" in capsys.readouterr().err
    assert main(["export-cpp", "my-solver-from-a-file", "--model", str(path), "--bundle", str(path),
                 "-o", str(out)]) == 2
    assert "give one or the other" in capsys.readouterr().err
