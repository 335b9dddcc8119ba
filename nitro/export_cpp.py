"""C++ export: one self-contained C++17 header that chooses a computation's variant inside a C++
application, with no Python, NumPy or store (``nitro export-cpp NAME -o selector.hpp``).

The header holds every device's model as constant arrays, the evaluators of
``nitro/selector_eval.hpp`` copied verbatim (the very text the compiled dispatch path
``nitro._selector`` is built from, so the two cannot diverge), and the device fallback table:
``model_for(device)`` tries, as :meth:`nitro.bundle.Bundle.model_for` does, the exact device id,
then the datasheet product the name matches (same word matching as nitro's datasheet), then no
model (``select`` returns the default variant). The bundle's transfer path needs the device's
features and NumPy, so it is not exported: a device the header does not know gets the default.
``nitro/cpu_id.hpp``, copied verbatim too, forms this CPU's nitro id in C++ (as
:func:`nitro.devices.cpu_device_id`), for ``select_this_cpu``.

Generated API (namespace ``nitro_<computation>`` unless named)::

    n_features, feature_names[], n_variants, variant_names[], default_variant, n_models
    int predict(std::size_t model, const double* features)  // variant index; -1: a feature not finite
    int model_for(const char* device, const char** path = nullptr)  // model index or -1
    int select(const char* device, const double* features, const char** path = nullptr)
    int this_cpu_id(char* out, std::size_t size)   // this CPU's nitro id, as snprintf; -1: none (not Linux)
    int cpu_id_from(const char* cpuinfo, std::size_t length, long threads, const char* machine,
                    char* out, std::size_t size)   // the id of /proc/cpuinfo text (nitro/cpu_id.hpp)
    int select_this_cpu(const double* features, const char** path = nullptr)
"""
from __future__ import annotations

import json

import re
from pathlib import Path

import numpy as np

from .bundle import Bundle
from .model import EXTRA_KINDS, SelectorModel, _extra_arrays

EVALUATORS = Path(__file__).with_name("selector_eval.hpp")
CPU_ID = Path(__file__).with_name("cpu_id.hpp")      # nitro's CPU device id, formed in C++
LAYOUT = 2      # the evaluators' layout version (selector_eval.hpp's guard and namespace nitro_eval_v2)
PER_LINE = 6


def _literal(v, ctype: str) -> str:
    if ctype == "double":
        text = repr(float(v))          # shortest text that reads back as the same float64
        return text if ("." in text or "e" in text) else text + ".0"
    return str(int(v))


def _array(name: str, ctype: str, values) -> str:
    """``inline constexpr ctype name[] = {...};`` (one dummy element for an empty array: C++
    has no zero-length arrays; the model's sizes say it is empty)."""
    items = [_literal(v, ctype) for v in np.asarray(values).ravel().tolist()] or [_literal(0, ctype)]
    lines = [", ".join(items[i:i + PER_LINE]) for i in range(0, len(items), PER_LINE)]
    body = ",\n    ".join(lines)
    return f"inline constexpr {ctype} {name}[] = {{\n    {body}}};"


def _string(s: str) -> str:
    """``s`` as a C++ string literal of its UTF-8 bytes: printable ASCII as itself, every other
    byte as a three-digit octal escape (which, unlike ``\\x``, cannot swallow the next digit)."""
    if "\0" in s:
        raise ValueError(f"export-cpp: the name {s!r} holds a NUL character, which a C string cannot hold")
    out = []
    for b in s.encode():
        c = chr(b)
        out.append("\\" + c if c in '"\\?' else c if 32 <= b < 127 else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _comment(s: str) -> str:
    """``s`` quoted for a ``//`` comment line: no line break, no final backslash (which would make
    the next line a comment too)."""
    return json.dumps(s)


def _device(model: SelectorModel) -> np.ndarray:
    return np.asarray(list(model.device_features.values()), dtype=np.float64)


def _units(p: dict) -> tuple[list[str], str]:
    """The ``inv_unit`` array of a model whose ``unit`` is not all 1, and its initialiser's
    trailing argument; nothing (the evaluator's null: every unit 1) otherwise."""
    if not ("unit" in p and any(u != 1.0 for u in p["unit"])):
        return [], ""
    return [_array("inv_unit", "double", 1.0 / np.asarray(p["unit"], dtype=np.float64))], ", inv_unit"


def _model_body(model: SelectorModel) -> tuple[list[str], str, int]:
    """The arrays of one model, the expression that evaluates it on ``x`` with scratch ``work``
    (a class index of the model), and the scratch size in doubles."""
    kind, p, d = model.kind, model.params, len(model.input_features)
    if kind == "constant":
        return [], str(int(p["label"])), 0
    dev = _device(model)
    if kind == "kernel":
        C = np.asarray(p["centers"], dtype=np.float64)
        W = np.asarray(p["weights"], dtype=np.float64)
        n_c, k = C.shape[0], W.shape[1]
        unit, inv_unit = _units(p)
        arrays = [_array("mean", "double", p["mean"]), _array("scale", "double", p["scale"]),
                  _array("centers_t", "double", C.T), _array("weights_t", "double", W.T),
                  _array("offset", "double", p["offset"]), *unit,
                  f"inline constexpr nitro_eval_v2::KernelModel model = {{{d}, {n_c}, {k}, mean, scale, "
                  f"{_literal(p['gamma'], 'double')}, centers_t, weights_t, offset{inv_unit}}};"]
        return arrays, "nitro_eval_v2::kernel_predict(model, x, work)", d + n_c + k
    if kind == "svc":
        sv = np.asarray(p["support_vectors"], dtype=np.float64)
        k, w = len(p["n_support"]), d + dev.size
        unit, inv_unit = _units(p)
        arrays = [_array("device", "double", dev), _array("log_mask", "unsigned char", np.asarray(p["log_mask"], dtype=int)),
                  _array("mean", "double", p["mean"]), _array("scale", "double", p["scale"]),
                  _array("sv_t", "double", sv.T),
                  _array("class_start", "std::size_t", np.concatenate([[0], np.cumsum(p["n_support"])])),
                  _array("dual_coef", "double", p["dual_coef"]), _array("intercept", "double", p["intercept"]), *unit,
                  f"inline constexpr nitro_eval_v2::SvcModel model = {{{d}, {dev.size}, device, log_mask, mean, scale, "
                  f"{_literal(p['gamma'], 'double')}, {sv.shape[0]}, sv_t, {k}, class_start, dual_coef, intercept"
                  f"{inv_unit}}};"]
        return arrays, "nitro_eval_v2::svc_predict(model, x, work)", w + sv.shape[0] + k
    a = _extra_arrays(kind, p)
    w = d + dev.size
    if kind in ("tree", "gbt"):
        cl, cr, f = (np.atleast_2d(a[key]) for key in ("cl", "cr", "f"))
        n_trees, n_nodes = cl.shape
        value = np.asarray(a["v"], dtype=np.float64)
        width = value.size // (n_trees * n_nodes)
        arrays = [_array("device", "double", dev), _array("left", "std::int64_t", cl), _array("right", "std::int64_t", cr),
                  _array("feature", "std::int64_t", f), _array("threshold", "double", np.atleast_2d(a["thr"])),
                  _array("value", "double", value)]
        trees = f"{{{n_trees}, {n_nodes}, {width}, left, right, feature, threshold, value}}"
        if kind == "tree":
            arrays.append(f"inline constexpr nitro_eval_v2::TreeModel model = {{{d}, {dev.size}, device, {trees}, true}};")
            return arrays, "nitro_eval_v2::tree_predict(model, x, work)", w
        codes = a["codes"]
        arrays.append(_array("codes", "double", codes))
        starts = ""
        if a["starts"].size:            # one booster per variant
            arrays.append(_array("variant_start", "std::size_t", a["starts"]))
            starts = ", variant_start"
        arrays.append(f"inline constexpr nitro_eval_v2::GbtModel model = {{{d}, {dev.size}, device, {trees}, "
                      f"{_literal(a['lr'], 'double')}, {_literal(a['init'], 'double')}, {codes.shape[0]}, {codes.shape[1]}, "
                      f"codes, {'true' if a['f32'] else 'false'}{starts}}};")
        return arrays, "nitro_eval_v2::gbt_predict(model, x, work)", w + codes.shape[1]
    if kind == "linear":
        k = a["b"].size
        unit, inv_unit = _units(p)
        arrays = [_array("device", "double", dev), _array("log_mask", "unsigned char", a["log"].astype(int)),
                  _array("mean", "double", a["mean"]), _array("scale", "double", a["scale"]),
                  _array("coef", "double", a["coef"]), _array("intercept", "double", a["b"]), *unit,
                  f"inline constexpr nitro_eval_v2::LinearModel model = {{{d}, {dev.size}, device, log_mask, mean, scale, "
                  f"{k}, coef, intercept, {'true' if a['choose'] == 'max' else 'false'}{inv_unit}}};"]
        return arrays, "nitro_eval_v2::linear_predict(model, x, work)", w + k
    if kind == "intervals":
        arrays = [_array("device", "double", dev), _array("thresholds", "double", a["thr"]),
                  _array("labels", "int", a["labels"]),
                  f"inline constexpr nitro_eval_v2::IntervalsModel model = {{{d}, {dev.size}, device, {a['feature']}, "
                  f"{a['thr'].size}, thresholds, labels}};"]
        return arrays, "nitro_eval_v2::intervals_predict(model, x)", 0
    raise ValueError(f"export-cpp: no C++ evaluator for model kind {kind!r} (known: constant, svc, kernel, "
                     f"{', '.join(EXTRA_KINDS)})")


def _model_namespace(i: int, device: str, model: SelectorModel, variants: list[str]) -> str:
    arrays, call, work = _model_body(model)
    variant_of = [variants.index(v) for v in model.variants]
    scratch = f"  double work[{work}];\n" if work else ""
    body = "\n".join(arrays + [_array("variant_of", "int", variant_of)])
    return (f"// {_comment(device)}: {model.kind} model over variants {', '.join(map(_comment, model.variants))}\n"
            f"namespace model_{i} {{\n{body}\n"
            f"inline int predict(const double* x) {{\n"
            f"  if (!nitro_eval_v2::all_finite(x, {len(model.input_features)})) return -1;\n"
            f"{scratch}"
            f"  return variant_of[{call}];\n}}\n}}  // namespace model_{i}\n")


NAME_MATCHING = r'''
// A device name as nitro's datasheet matches it (nitro.devices.datasheet._tokens): lower case,
// "(r)"/"(tm)" dropped, runs of other than [a-z0-9+] as word breaks, "+" as "plus", a "cpu_"
// prefix and a "_<n>t" suffix dropped, vendor noise words left out.
inline std::vector<std::string> name_tokens(const char* name) {
  std::string s;
  for (const char* c = name; *c; ++c) s += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  std::string marked;                 // "(r)" and "(tm)" as a space, left to right
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t mark = s.compare(i, 3, "(r)") == 0 ? 3 : s.compare(i, 4, "(tm)") == 0 ? 4 : 0;
    if (mark) marked += ' ';
    else marked += s[i];
    i += mark ? mark : 1;
  }
  s = marked;
  std::string slug;
  for (char c : s) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+';
    if (word) slug += c;
    else if (slug.empty() || slug.back() != '\x01') slug += '\x01';
  }
  std::string out;
  for (char c : slug) out += c == '\x01' ? std::string("_") : c == '+' ? std::string("_plus") : std::string(1, c);
  const std::size_t first = out.find_first_not_of('_');
  out = first == std::string::npos ? std::string() : out.substr(first, out.find_last_not_of('_') - first + 1);
  if (out.compare(0, 4, "cpu_") == 0) out.erase(0, 4);
  const std::size_t cut = out.rfind('_');
  if (cut != std::string::npos && out.size() > cut + 2 && out.back() == 't' &&
      out.find_first_not_of("0123456789", cut + 1) == out.size() - 1)
    out.erase(cut);
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start <= out.size()) {
    std::size_t end = out.find('_', start);
    if (end == std::string::npos) end = out.size();
    const std::string t = out.substr(start, end - start);
    bool noise = t.empty();
    for (const char* n : noise_words) noise = noise || t == n;
    if (!noise) tokens.push_back(t);
    start = end + 1;
  }
  return tokens;
}

// The datasheet product a device name matches: the longest name (in words) of a product that
// appears, word for word, in the device's name; the first such in the table on ties.
inline const char* product_of(const char* device) {
  const std::vector<std::string> query = name_tokens(device);
  const char* best = nullptr;
  std::size_t best_len = 0;
  for (const ProductName& p : product_names) {
    std::vector<std::string> words;
    for (const char* w = p.words; *w;) {
      const char* end = std::strchr(w, ' ');
      if (!end) end = w + std::strlen(w);
      words.emplace_back(w, end);
      w = *end ? end + 1 : end;
    }
    const std::size_t n = words.size();
    if (n <= best_len || n > query.size()) continue;
    for (std::size_t i = 0; i + n <= query.size(); ++i)
      if (std::equal(words.begin(), words.end(), query.begin() + static_cast<std::ptrdiff_t>(i))) {
        best = p.product;
        best_len = n;
        break;
      }
  }
  return best;
}

// This device's model index, or -1 (then the default variant runs): the exact device id, else
// a device of the same datasheet product. *path (if given) says which: "exact", "product",
// "default".
inline int model_for(const char* device, const char** path = nullptr) {
  if (device == nullptr) device = "";      // no name: no exact or product match
  for (const Device& d : devices)
    if (d.model >= 0 && std::strcmp(d.id, device) == 0) {
      if (path) *path = "exact";
      return d.model;
    }
  if (const char* product = product_of(device))
    for (const Device& d : devices)
      if (d.model >= 0 && d.product && std::strcmp(d.product, product) == 0) {
        if (path) *path = "product";
        return d.model;
      }
  if (path) *path = "default";
  return -1;
}

// The device name select() looked up last on this thread, its model index and path: a name
// matched to a datasheet product is tokenised on the heap (about 19 us), so select() redoes
// model_for only when the name changes. Trivially destructible: no TLS guard, no allocation.
struct LastLookup {
  char name[128];        // names of 128 bytes or more are looked up on every call
  int model;
  const char* path;
  bool valid;
};

// The variant index to run for features on device: its model's choice, else (no model for
// the device, or a feature that is not finite) the default variant. *path: how the model was
// found ("exact", "product"), or "default" where the default variant runs.
inline int select(const char* device, const double* features, const char** path = nullptr) {
  thread_local LastLookup last{};
  if (device == nullptr) device = "";
  if (!last.valid || std::strcmp(last.name, device) != 0) {
    const char* found = nullptr;
    const int index = model_for(device, &found);
    const std::size_t n = std::strlen(device);
    last.valid = n < sizeof(last.name);
    if (last.valid) std::memcpy(last.name, device, n + 1);
    last.model = index;
    last.path = found;
  }
  const int model = last.model;
  const int chosen = model >= 0 ? predict(static_cast<std::size_t>(model), features) : -1;
  if (path) *path = chosen >= 0 ? last.path : "default";
  return chosen >= 0 ? chosen : default_variant;
}

// nitro's id of the CPU this process runs on (nitro.devices.cpu_device_id(); see cpu_id.hpp),
// and the id of given /proc/cpuinfo text and CPU count.
using nitro_cpu_v1::cpu_id_from;
using nitro_cpu_v1::this_cpu_id;

// select() for the CPU this process runs on, by its id (this_cpu_id, which counts the CPUs this
// process may use on each call); where it has none (not Linux), the default variant.
inline int select_this_cpu(const double* features, const char** path = nullptr) {
  char id[3 * nitro_cpu_v1::kMaxValue + 64];     // any id this_cpu_id forms fits
  const int n = this_cpu_id(id, sizeof id);
  return select(n >= 0 ? id : nullptr, features, path);
}
'''


# C++ keywords (to C++20) and alternative tokens, and the namespaces the standard keeps for itself:
# none can name the header's namespace.
CPP_RESERVED = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class
compl const const_cast constexpr continue decltype default delete do double dynamic_cast else enum
explicit export extern false float for friend goto if inline int long mutable namespace new noexcept
not not_eq nullptr operator or or_eq private protected public register reinterpret_cast return short
signed sizeof static static_assert static_cast struct switch template this thread_local throw true try
typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
char8_t co_await co_return co_yield concept consteval constinit requires
std posix""".split())


def namespace_error(ns: str) -> str | None:
    """Why ``ns`` cannot name the header's namespace, or ``None``: not an identifier, a C++
    keyword (to C++20), a namespace the standard reserves (``std``, ``posix``, ``std2``…), or an
    identifier reserved to the implementation at global scope (a double underscore, or an
    underscore first)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ns):
        return "is not a C++ identifier"
    if ns in CPP_RESERVED or re.fullmatch(r"std[0-9]+", ns):
        return "is a C++ keyword or a namespace the standard reserves"
    if "__" in ns or ns.startswith("_"):
        return "is reserved to the C++ implementation (a double underscore, or an underscore first)"
    return None


def namespace_for(computation: str) -> str:
    """The default namespace: ``nitro_`` and the computation's name, other characters as ``_``
    (never two in a row: a double underscore is reserved)."""
    return re.sub(r"_{2,}", "_", "nitro_" + (re.sub(r"[^0-9A-Za-z_]", "_", computation) or "selector"))


def header_guard(ns: str, computation: str) -> str:
    """The header's include guard: the layout version, a digest of the computation's name and
    the namespace as it is (``Foo`` and ``foo`` are two namespaces), so that two
    computations whose names map to one namespace (``a-b``, ``a_b``) do not skip one another's
    header silently: included together, they fail to compile (give one ``--namespace``)."""
    import hashlib
    digest = hashlib.sha256(computation.encode()).hexdigest()[:8].upper()
    return f"NITRO_SELECTOR_HPP_V{LAYOUT}_{digest}_{ns}"      # ns has no "_" first: no "__"


def export_header(bundle: Bundle, namespace: str | None = None) -> str:
    """The C++17 header text of ``bundle``'s device models and fallback table."""
    ns = namespace or namespace_for(bundle.computation)
    why = namespace_error(ns)
    if why:
        raise ValueError(f"export-cpp: namespace {ns!r} {why}: give another with --namespace")
    ids = list(bundle.devices)
    models = [_model_namespace(i, d, bundle.model(d), bundle.variants) for i, d in enumerate(ids)]
    from .bundle import _tokens as tokens_of
    product_rows = [(product, " ".join(tokens_of(name))) for product, row in bundle.datasheet.items()
                    for name in row.get("names", []) if tokens_of(name)]
    noise = sorted(_noise_words())
    device_rows = ",\n    ".join(
        f"{{{_string(d)}, {_string(bundle.devices[d]['product']) if bundle.devices[d].get('product') else 'nullptr'}, {i}}}"
        for i, d in enumerate(ids)) or '{"", nullptr, -1}'
    product_table = ",\n    ".join(f"{{{_string(p)}, {_string(w)}}}" for p, w in product_rows) or '{"", ""}'
    cases = "\n".join(f"    case {i}: return model_{i}::predict(features);" for i in range(len(ids)))
    guard = header_guard(ns, bundle.computation)
    return f"""// Generated by `nitro export-cpp` from computation {_comment(bundle.computation)}: choose a variant from
// input features in C++ (C++17, no dependency). Do not edit: export again after tuning.
// Build with -O3 (GCC vectorises the RBF loops from -O3 on); for AVX2 add -march=native, or
// define NITRO_EVAL_CLONES as __attribute__((target_clones("avx2", "default"))) before including.
// Models: {", ".join(f"{_comment(d)} ({bundle.model(d).kind})" for d in ids) or "none"}.
#ifndef {guard}
#define {guard}

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

{EVALUATORS.read_text()}
{CPU_ID.read_text()}
namespace {ns} {{

inline constexpr std::size_t n_features = {len(bundle.input_features)};
inline constexpr const char* feature_names[] = {{{", ".join(_string(f) for f in bundle.input_features) or '""'}}};
inline constexpr std::size_t n_variants = {len(bundle.variants)};
inline constexpr const char* variant_names[] = {{{", ".join(_string(v) for v in bundle.variants)}}};
inline constexpr int default_variant = {bundle.variants.index(bundle.default)};
inline constexpr std::size_t n_models = {len(ids)};

{"".join(models)}
// The variant index model `model` chooses for features[0..n_features), or -1 when a feature
// is not finite (or there is no such model).
inline int predict(std::size_t model, const double* features) {{
  switch (model) {{
{cases}
    default: return -1;
  }}
}}

// Devices with a model: nitro's device id, its datasheet product (or null), its model index.
struct Device {{
  const char* id;
  const char* product;
  int model;
}};
inline constexpr Device devices[] = {{
    {device_rows}}};

// Every datasheet name of every product, as its words separated by spaces.
struct ProductName {{
  const char* product;
  const char* words;
}};
inline constexpr ProductName product_names[] = {{
    {product_table}}};
inline constexpr const char* noise_words[] = {{{", ".join(_string(w) for w in noise)}}};
{NAME_MATCHING}
}}  // namespace {ns}

#endif  // {guard}
"""


def _noise_words() -> set[str]:
    from .devices.datasheet import _NOISE
    return set(_NOISE)


def bundle_from_store(store, name: str, devices=None, default: str | None = None, models_given=None) -> Bundle:
    """The stored models of computation ``name`` (of ``devices``, default: every device with
    rows that has a model), and ``models_given`` (``{device: SelectorModel}``, such as files
    written by ``nitro tune-from-source -o``, which replace a stored model of their device), as a
    bundle without transfer blocks, with each device's datasheet product and the datasheet's
    names for the product fallback."""
    from .bundle_build import datasheet_table
    from .devices import datasheet

    meta = store.meta(name)
    wanted = list(devices) if devices else store.devices(name)
    models_given = dict(models_given or {})
    models = {}
    for d in wanted:
        stored = store.selector_model(name, d)
        if stored is None:
            if devices and d not in models_given:
                raise ValueError(f"{name}: device {d!r} has no stored model (tune it, or build a bundle, "
                                 f"which fits one: nitro bundle build)")
            continue
        models[d] = stored
    models.update(models_given)
    if not models:
        raise ValueError(f"{name}: no device has a stored model")
    info = {}
    for d in models:
        row = datasheet.lookup(d)
        info[d] = {"product": row["id"] if row else None}
    return Bundle.build(name, meta["variants"], meta["features"], default or meta["variants"][0], models, info=info,
                        datasheet={k: {"kind": v["kind"], "names": v["names"]} for k, v in datasheet_table().items()},
                        provenance={"built_from": store.name, "for": "export-cpp"})


def narrowed(bundle: Bundle, devices=None, default: str | None = None) -> Bundle:
    """``bundle`` with only the models of ``devices`` (every one when not given) and ``default``
    as the variant that runs without a model (the bundle's when not given), for a header."""
    devices = list(devices) if devices else list(bundle.devices)
    unknown = [d for d in devices if d not in bundle.devices]
    if unknown:
        raise ValueError(f"the bundle has no model of {', '.join(map(repr, unknown))}; "
                         f"its devices: {', '.join(bundle.devices)}")
    if default is not None and default not in bundle.variants:
        raise ValueError(f"--default {default!r} is not one of the bundle's variants {bundle.variants}")
    return Bundle(bundle.computation, bundle.variants, bundle.input_features, default or bundle.default,
                  {d: {**bundle.devices[d], "model": bundle.model(d)} for d in devices}, datasheet=bundle.datasheet, provenance=bundle.provenance)


def write_header(bundle: Bundle, path, namespace: str | None = None) -> Path:
    from .bundle import check_output_folder
    path = Path(path)
    check_output_folder(path)
    path.write_text(export_header(bundle, namespace))
    return path
