"""`nitro export-cpp`: the generated C++17 header compiles with -Wall -Wextra -Werror, chooses
exactly as Python (SelectorModel.predict_index) on >= 3,000 points for every model kind, and
finds a device's model as Bundle.model_for does (exact id, datasheet product, default)."""
import os
import shutil
import subprocess
import sys

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
// P <model> <n values>: the variant chosen; D <name>: model index and path; S <name> <values>: select;
// Q <name> <values>: select's variant and path
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
    if (cmd == "Q") {
      const char* path = nullptr;
      const int v = ns::select(name.c_str(), x, &path);
      std::printf("%d %s\n", v, path);
      continue;
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
    model = bundle.model(next(iter(bundle.devices)))
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
    for i, device in enumerate(bundle.devices):
        model = bundle.model(device)
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
    chosen = bundle.model(svm).predict_index([x])[0]
    lines = [f"S {svm} 100000 0.5 0.3", "S no-such-device 100000 0.5 0.3", f"S {svm} nan 0.5 0.3"]
    assert [int(v) for v in driver(lines)] == [bundle.variants.index(bundle.model(svm).variants[chosen]),
                                               default, default]
    # the path says what ran: a feature that is not finite runs the default, not the exact model
    assert driver([f"Q {svm} 100000 0.5 0.3", f"Q {svm} nan 0.5 0.3", f"Q {svm} 100000 inf 0.3",
                   "Q no-such-device 100000 0.5 0.3"]) == \
        [f"{bundle.variants.index(bundle.devices[svm]['model'].variants[chosen])} exact", f"{default} default",
         f"{default} default", f"{default} default"]


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
        store.put_model("my-solver", d, bundle.model(d).to_dict())
    got = bundle_from_store(store, "my-solver", devices=ids, default="medium")
    assert list(got.devices) == ids and got.default == "medium"
    assert [got.model(d).to_dict() for d in ids] == [bundle.model(d).to_dict() for d in ids]
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
    model = bundle.model(device)
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
    assert main(["export-cpp", "my-solver-from-a-file", "--model", str(tmp_path / "new_gpu.json"),
                 "-o", str(out)]) == 2
    assert f"no model file {tmp_path / 'new_gpu.json'} (nitro tune-from-source" in capsys.readouterr().err
    # --model is repeatable: a file that is no model (a bundle, a broken one) is named in the error
    (tmp_path / "ok.json").write_text(json.dumps({**d, "provenance": {"target": "gpu_a"}}))
    bundle.save(tmp_path / "bundle.json")
    d["params"] = {"label": -1}
    d["kind"] = "constant"
    (tmp_path / "broken.json").write_text(json.dumps(d))
    for bad, message in (("bundle.json", "a bundle of models, not one model"), ("broken.json", "invalid label")):
        assert main(["export-cpp", "my-solver-from-a-file", "--model", str(tmp_path / "ok.json"),
                     "--model", str(tmp_path / bad), "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"nitro: error: model file {tmp_path / bad}: " in err and message in err, err


CPU_DRIVER = r"""
#include "selector.hpp"
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
namespace ns = NAMESPACE;
// this: this CPU's id; from THREADS MACHINE < cpuinfo: the id of the text; short: this id into
// 9 bytes; select: select_this_cpu's variant and path
int main(int argc, char** argv) {
  const std::string mode = argv[1];
  char id[512];
  if (mode == "this") {
    const int n = ns::this_cpu_id(id, sizeof id);
    std::printf("%d %s\n", n, id);
  } else if (mode == "short") {
    char small[9];
    std::printf("%d %s\n", ns::this_cpu_id(small, sizeof small), small);
  } else if (mode == "file") {         // file PATH THREADS MACHINE: the id of a cpuinfo file, as read from /proc
    nitro_cpu_v1::Fields f{};
    if (!nitro_cpu_v1::read_fields(argv[2], f)) return 1;
    const int n = nitro_cpu_v1::id_of(f, std::atol(argv[3]), argv[4], id, sizeof id);
    std::printf("%d %s\n", n, id);
  } else if (mode == "from") {
    const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    const int n = ns::cpu_id_from(text.data(), text.size(), std::atol(argv[2]), argv[3], id, sizeof id);
    std::printf("%d %s\n", n, id);
  } else {
    const double x[ns::n_features] = {};
    const char* path = nullptr;
    const int v = ns::select_this_cpu(x, &path);
    std::printf("%s %s\n", ns::variant_names[v], path);
  }
  (void)argc;
}
"""


def cpu_driver(tmp, bundle_, *flags):
    """The CPU id driver, built on a header of bundle_."""
    (tmp / "selector.hpp").write_text(export_header(bundle_))
    (tmp / "cpu.cpp").write_text(CPU_DRIVER.replace("NAMESPACE", namespace_for(bundle_.computation)))
    build = subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", *flags, "-o", str(tmp / "cpu"),
                            str(tmp / "cpu.cpp")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]

    def run(*args, text_in="", prefix=()):
        out = subprocess.run([*prefix, str(tmp / "cpu"), *args], input=text_in.encode(), capture_output=True,
                             check=True)
        return out.stdout.decode().rstrip("\n")
    return run


@pytest.fixture(scope="module")
def cpu_run(bundle, tmp_path_factory):
    return cpu_driver(tmp_path_factory.mktemp("cpu"), bundle)


linux = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="the CPU id reads Linux's /proc")


def python_cpu_id(prefix=()):
    """nitro.devices.cpu_device_id() in a fresh Python process (under taskset when prefixed)."""
    return subprocess.run([*prefix, sys.executable, "-c", "from nitro.devices import cpu_device_id as c; print(c())"],
                          capture_output=True, text=True, check=True).stdout.strip()


@linux
def test_this_cpu_id_is_pythons(cpu_run):
    from nitro.devices import cpu_device_id
    here = cpu_device_id()
    assert cpu_run("this") == f"{len(here)} {here}"
    assert cpu_run("short") == f"{len(here)} {here[:8]}"       # cut short as snprintf does, full length returned


@linux
@pytest.mark.skipif(shutil.which("taskset") is None, reason="needs taskset")
def test_this_cpu_id_counts_the_cpus_this_process_may_use(cpu_run):
    one = python_cpu_id(("taskset", "-c", "0"))
    assert one.endswith("_1t")
    assert cpu_run("this", prefix=("taskset", "-c", "0")) == f"{len(one)} {one}"


CPUINFO = {
    "intel with a model number": "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\n"
                                 "model name\t: Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz\nflags\t\t: fpu vme\n\n"
                                 "processor\t: 1\nmodel name\t: Another CPU\n",
    "amd epyc, generic": "processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n",
    "qemu virtual": "cpu family\t: 6\nmodel\t\t: 6\nmodel name\t: QEMU Virtual CPU version 2.5+\n",
    "a clock only": "cpu family\t: 6\nmodel\t\t: 79\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n",
    "clocks of all kinds": "cpu family : 6\nmodel : 85\nmodel name : Xeon CPU @2.2ghz @ 1 MHZ @\u00a03.0\u2009GHz @ x\n",
    "a clock that is none": "cpu family : 6\nmodel : 85\nmodel name : Xeon CPU @ 2.2 THz\n",
    "odd characters": "cpu family\t: 6\nmodel\t\t: 1\nmodel name\t:  \u00a0Intel\u00ae  Core\u2122 i7-8700K\t"
                      "CPU \u2014 \u2018x\u2019 __ \u0130\u212a-(tm)\u00a0\u2003\n",
    "a hypervisor in odd case": "cpu family : 6\nmodel : 2\nmodel name : Common KVM processor\n",
    "a dotless i and a kelvin sign": "cpu family : 6\nmodel : 2\nmodel name : V\u0131rtual \u212aVM 9\n",
    "a missing model name": "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\ncpu family : 8\nmodel : 3\n",
    "an empty model name": "model name\t:\ncpu family\t: 6\nmodel\t\t: 1\nmodel name\t: Later\n",
    "no family": "model name : AMD EPYC\nmodel : 17\n",
    "a family not a number": "model name : AMD EPYC\ncpu family : 2a\nmodel : 17\n",
    "other line breaks": "cpu family : 25\r\nmodel : 1\rmodel name : AMD \u2028EPYC\x1cmodel name : x\n",
    "colons in the value": "  model name  :  A: B:9 \nmodel : 3\ncpu family : 4\n",
    "nothing": "",
}


@linux
@pytest.mark.parametrize("case", list(CPUINFO))
def test_cpu_id_from_text_is_pythons(cpu_run, case):
    import platform

    from nitro.devices.cpu import cpu_id_from, cpuinfo_fields
    text = CPUINFO[case]
    for threads in (1, 2, 128):
        expected = cpu_id_from(cpuinfo_fields(text), threads)
        assert cpu_run("from", str(threads), platform.machine(), text_in=text) == f"{len(expected)} {expected}", case


def test_cpu_ids_of_the_table_are_the_ones_nitro_records():
    """The table's cases are what they say (so that the C++ comparison covers each rule)."""
    import platform

    from nitro.devices.cpu import cpu_id_from, cpuinfo_fields

    def cid(case):
        return cpu_id_from(cpuinfo_fields(CPUINFO[case]), 2)
    assert cid("intel with a model number") == "cpu_intel_r_xeon_r_platinum_8380_cpu_2_30ghz_2t"
    assert cid("amd epyc, generic") == "cpu_amd_epyc_family25_model17_2t"
    assert cid("qemu virtual") == "cpu_qemu_virtual_cpu_version_2_5_family6_model6_2t"
    assert cid("a clock only") == "cpu_intel_r_xeon_r_cpu_2_20ghz_family6_model79_2t"
    assert cid("a clock that is none") == "cpu_xeon_cpu_2_2_thz_2t"
    assert cid("odd characters") == "cpu_intel_core_i7_8700k_cpu_x_i_k_tm_2t"
    assert cid("a dotless i and a kelvin sign").endswith("_family6_model2_2t")
    machine = {"model name": platform.machine(), "cpu family": "8", "model": "3"}       # as Arm's /proc/cpuinfo
    assert cid("a missing model name") == cpu_id_from(machine, 2)
    assert cid("an empty model name") == cpu_id_from({**machine, "cpu family": "6", "model": "1"}, 2)   # not "Later"
    assert cid("clocks of all kinds") == "cpu_xeon_cpu_2_2ghz_1_mhz_3_0_ghz_x_family6_model85_2t"
    assert cid("no family") == "cpu_amd_epyc_2t"


@linux
def test_a_header_from_a_store_with_this_cpus_model_selects_it(store, tmp_path):
    """select_this_cpu finds the model stored under this CPU's id (exact); under taskset -c 0 the
    id ends in _1t, another device: its model if the store has one, else the fallback."""
    from nitro.devices import cpu_device_id
    from nitro.export_cpp import bundle_from_store
    here = cpu_device_id()
    store.declare("cpu-solver", VARIANTS, FEATURES)
    store.put_model("cpu-solver", here, SelectorModel(VARIANTS, FEATURES, "constant", {"label": 2}).to_dict())
    store.put_model("cpu-solver", "tesla_t4-node", SelectorModel(VARIANTS, FEATURES, "constant", {"label": 3}).to_dict())
    b = bundle_from_store(store, "cpu-solver", devices=[here, "tesla_t4-node"], default="small")
    run = cpu_driver(tmp_path, b)
    assert run("select") == "large exact"
    if shutil.which("taskset") and not here.endswith("_1t"):
        one = python_cpu_id(("taskset", "-c", "0"))
        model, info = b.model_for(one, query=False)
        expected = VARIANTS[model.predict_index([[0.0] * 3])[0]] if model is not None else "small"
        assert run("select", prefix=("taskset", "-c", "0")) == f"{expected} {info['path']}"


@linux
def test_a_cpuinfo_file_is_read_in_blocks_as_python_reads_it_whole(cpu_run, tmp_path):
    """/proc/cpuinfo is read 16 KiB at a time up to the first value of each field: lines across
    blocks, a flags line longer than a block before the model name, many processors."""
    import platform

    from nitro.devices.cpu import cpu_id_from, cpuinfo_fields
    block = "processor\t: {i}\nflags\t\t: " + "avx512 " * 300 + "\n"
    texts = {
        "long flags first": "flags : " + "x" * (16384 - 8) + "model name : no " + "x" * 40000 + "\n" + CPUINFO["a clock only"],
        "a line of exactly a block": "bugs : " + "y" * (16384 - 7) + "\n" + CPUINFO["amd epyc, generic"],
        "many processors, the name late": "".join(block.format(i=i) for i in range(40)) + CPUINFO["qemu virtual"],
        "fields across blocks": "x" * 16380 + "\ncpu family : 6\nmodel : 9\nmodel name : Common CPU\n",
    }
    for case, text in texts.items():
        (tmp_path / "cpuinfo").write_text(text)
        expected = cpu_id_from(cpuinfo_fields(text), 3)
        assert cpu_run("file", str(tmp_path / "cpuinfo"), "3", platform.machine()) == f"{len(expected)} {expected}", case
    long_name = "model name : " + "Z" * 300 + "\n"          # over the 255 bytes kept of a value: no id, not a wrong one
    assert cpu_run("from", "2", "x", text_in=long_name) == "-1 "


def test_off_linux_the_header_compiles_and_says_it_has_no_cpu_id(tmp_path):
    """Without __linux__ (as on macOS or Windows) there is no id: -1, and select_this_cpu runs
    the default; the id of given cpuinfo text is still formed."""
    b = Bundle.build("off-linux", VARIANTS, FEATURES, "medium",
                     {"cpu_x_2t": SelectorModel(VARIANTS, FEATURES, "constant", {"label": 3})})
    run = cpu_driver(tmp_path, b, "-U__linux__")
    assert run("this") == "-1 " and run("select") == "medium default"
    assert run("from", "4", "arm64", text_in=CPUINFO["amd epyc, generic"]) == "32 cpu_amd_epyc_family25_model17_4t"
