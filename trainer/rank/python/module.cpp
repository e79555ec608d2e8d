// tpuperf._core: the ranker library (tpuperf/ranker.h) and the C++ readers of what a run
// writes (metrics.csv, submission.csv), for Python. The package tpuperf (tpuperf/__init__.py)
// is the public face: it checks and converts the caller's arrays, so this layer takes them
// exactly as the C++ API's vectors hold them (C-contiguous, the API's dtypes) and copies
// them into those vectors once. Results leave without a copy: their vectors become the
// numpy arrays' buffers.
//
// Every call into the ranker runs with the GIL released. A Ranker is not thread-safe, so
// each Python Ranker has a mutex: Python threads sharing one take turns, threads with
// their own rank in parallel.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "common/base/log.h"
#include "common/graph/graph.h"
#include "common/graph/processed_graph.h"
#include "tpuperf/ranker.h"
#include "trainer/eval/metrics_log.h"
#include "trainer/eval/report.h"
#include "trainer/eval/submission.h"

namespace py = pybind11;

namespace tpuperf {
namespace {

// tpuperf._core.Error (tpuperf.Error): a ValueError whose reason, file and key are
// attributes, as tpuperf::Error holds them. Created once and never freed (the module lives
// as long as the interpreter).
PyObject* error_type = nullptr;

py::object python_error(const Error& e) {
  py::object exc = py::reinterpret_borrow<py::object>(error_type)(e.what());
  exc.attr("reason") = e.reason();
  exc.attr("file") = e.file();
  exc.attr("key") = e.key();
  return exc;
}

void translate_errors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const Error& e) {
    PyErr_SetObject(error_type, python_error(e).ptr());
  } catch (const std::bad_alloc&) {
    throw;  // pybind11's MemoryError
  } catch (const std::exception& e) {
    // LibTorch's and the standard library's errors carry a reason only.
    PyErr_SetObject(error_type, python_error(Error(e.what())).ptr());
  }
}

// Array results without a copy: the vector moves into a capsule that owns the buffer.
template <typename T>
py::array_t<T> to_numpy(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule free_it(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), free_it);
}

// arrays[key] as the C++ API's vector. The package has already checked its dtype, layout
// and shape (so `ensure` converts nothing); this is the one copy RankGraph's vectors need.
template <typename T>
std::vector<T> vector_of(const py::dict& arrays, const char* key) {
  if (!arrays.contains(key)) return {};
  const auto a = py::array_t<T, py::array::c_style>::ensure(arrays[key]);
  if (!a) throw Error("is not an array of the expected dtype", "", key);
  return std::vector<T>(a.data(), a.data() + a.size());
}

RankGraph rank_graph(const std::string& name, const py::dict& g) {
  RankGraph r;
  r.name = name;
  r.node_feat = vector_of<float>(g, "node_feat");
  r.num_nodes = static_cast<int64_t>(r.node_feat.size() / kNodeFeatDim);
  r.node_opcode = vector_of<uint8_t>(g, "node_opcode");
  r.edge_index = vector_of<int64_t>(g, "edge_index");
  r.node_splits = vector_of<int64_t>(g, "node_splits");
  return r;
}

TileCandidates tile_candidates(const py::dict& c) { return {vector_of<float>(c, "config_feat")}; }

LayoutCandidates layout_candidates(const py::dict& c) {
  return {vector_of<int64_t>(c, "node_config_ids"), vector_of<int8_t>(c, "node_config_feat")};
}

py::dict ranking_dict(Ranking&& r) {
  py::dict d;
  d["order"] = to_numpy(std::move(r.order));
  d["score"] = to_numpy(std::move(r.score));
  d["collection"] = r.collection;
  d["name"] = r.name;
  d["unique_configs"] = r.unique_configs;
  d["folds"] = r.folds;
  return d;
}

AdaptOptions adapt_options(const std::string& method, int64_t steps, double lr, int64_t slate, uint64_t seed) {
  AdaptOptions o;
  if (method != "blend" && method != "finetune")
    throw Error("is '" + method + "': blend or finetune", "", "method");
  o.method = method == "finetune" ? AdaptMethod::FineTune : AdaptMethod::Blend;
  o.steps = steps;
  o.lr = lr;
  o.slate = slate;
  o.seed = seed;
  return o;
}

SuggestOptions suggest_options(int64_t count, double exploration, double diversity, std::vector<int64_t> exclude) {
  SuggestOptions o;
  o.count = count;
  o.exploration = exploration;
  o.diversity = diversity;
  o.exclude = std::move(exclude);
  return o;
}

py::dict suggestion_dict(Suggestion&& s) {
  py::dict d;
  d["configs"] = to_numpy(std::move(s.configs));
  d["score"] = to_numpy(std::move(s.score));
  d["uncertainty"] = to_numpy(std::move(s.uncertainty));
  d["collection"] = s.collection;
  d["name"] = s.name;
  d["candidates"] = s.candidates;
  return d;
}

py::dict adaptation_dict(const Adaptation& a) {
  py::dict d;
  d["graph"] = a.graph;
  d["measured_configs"] = a.measured_configs;
  d["method"] = a.method;
  d["seed"] = a.seed;
  d["seconds"] = a.seconds;
  d["blend"] = a.blend;
  d["weight_run"] = a.weight_run;
  d["weight_fit"] = a.weight_fit;
  d["cv_folds"] = a.cv_folds;
  d["cv_tau_run"] = a.cv_tau_run;
  d["cv_tau"] = a.cv_tau;
  d["steps"] = a.steps;
  d["lr"] = a.lr;
  d["slate"] = a.slate;
  d["loss"] = a.loss;
  d["first_loss"] = a.first_loss;
  d["last_loss"] = a.last_loss;
  return d;
}

// One Ranker and the lock its callers take turns on.
struct PyRanker {
  explicit PyRanker(Ranker&& r) : ranker(std::move(r)) {}
  Ranker ranker;
  std::mutex busy;

  bool tile() const { return ranker.collection().rfind("tile:", 0) == 0; }

  // fn(ranker) without the GIL and with the lock (taken after the GIL is released, so a
  // thread waiting for it never blocks the others' Python).
  template <typename Fn>
  auto locked(Fn&& fn) {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> hold(busy);
    return fn(ranker);
  }

  py::dict rank(const std::string& name, const py::dict& graph, const py::dict& candidates) {
    const RankGraph g = rank_graph(name, graph);
    if (tile()) {
      const TileCandidates c = tile_candidates(candidates);
      return ranking_dict(locked([&](const Ranker& r) { return r.rank(g, c); }));
    }
    const LayoutCandidates c = layout_candidates(candidates);
    return ranking_dict(locked([&](const Ranker& r) { return r.rank(g, c); }));
  }

  py::dict rank_file(const std::string& path) {
    return ranking_dict(locked([&](const Ranker& r) { return r.rank_file(path); }));
  }

  std::unique_ptr<PyRanker> adapted(const std::string& name, const py::dict& graph, const py::dict& measured,
                                    const std::vector<double>& runtimes, const AdaptOptions& o) {
    const RankGraph g = rank_graph(name, graph);
    if (tile()) {
      const TileCandidates c = tile_candidates(measured);
      return std::make_unique<PyRanker>(locked([&](const Ranker& r) { return r.adapted(g, c, runtimes, o); }));
    }
    const LayoutCandidates c = layout_candidates(measured);
    return std::make_unique<PyRanker>(locked([&](const Ranker& r) { return r.adapted(g, c, runtimes, o); }));
  }

  std::unique_ptr<PyRanker> adapted_file(const std::string& path, const AdaptOptions& o) {
    return std::make_unique<PyRanker>(locked([&](const Ranker& r) { return r.adapted_file(path, o); }));
  }

  py::dict suggest(const std::string& name, const py::dict& graph, const py::dict& candidates,
                   const SuggestOptions& o) {
    const RankGraph g = rank_graph(name, graph);
    if (tile()) {
      const TileCandidates c = tile_candidates(candidates);
      return suggestion_dict(locked([&](const Ranker& r) { return r.suggest(g, c, o); }));
    }
    const LayoutCandidates c = layout_candidates(candidates);
    return suggestion_dict(locked([&](const Ranker& r) { return r.suggest(g, c, o); }));
  }

  py::dict suggest_file(const std::string& path, const SuggestOptions& o) {
    return suggestion_dict(locked([&](const Ranker& r) { return r.suggest_file(path, o); }));
  }

  py::object adaptation() const {
    const Adaptation* a = ranker.adaptation();
    if (!a) return py::none();
    return adaptation_dict(*a);
  }
};

std::unique_ptr<PyRanker> load_ranker(const std::string& run_dir, const std::string& collection, int threads,
                                      bool fused, bool keep_freed_memory) {
  RankerOptions o;
  o.threads = threads;
  o.fused = fused;
  o.keep_freed_memory = keep_freed_memory;
  py::gil_scoped_release nogil;  // loading reads every fold's checkpoint
  return std::make_unique<PyRanker>(Ranker(run_dir, collection, o));
}

// metrics.csv as columns: numbers as numpy arrays (NaN = not measured), collection and
// split as lists (the package makes them numpy string arrays).
py::dict metrics_columns(const std::vector<MetricsRow>& rows) {
  py::dict d;
  auto numbers = [&](const char* name, auto value) {
    std::vector<decltype(value(MetricsRow{}))> column;
    for (const MetricsRow& r : rows) column.push_back(value(r));
    d[name] = to_numpy(std::move(column));
  };
  py::list collection, split;
  for (const MetricsRow& r : rows) collection.append(r.collection), split.append(r.split);
  d["collection"] = collection;
  d["split"] = split;
  numbers("fold", [](const MetricsRow& r) { return static_cast<int64_t>(r.fold); });
  numbers("epoch", [](const MetricsRow& r) { return static_cast<int64_t>(r.epoch); });
  numbers("step", [](const MetricsRow& r) { return r.step; });
  numbers("loss", [](const MetricsRow& r) { return r.loss; });
  numbers("score", [](const MetricsRow& r) { return r.score; });
  numbers("configs_per_s", [](const MetricsRow& r) { return r.configs_per_s; });
  numbers("elapsed_s", [](const MetricsRow& r) { return r.elapsed_s; });
  numbers("slowdown_1", [](const MetricsRow& r) { return r.slowdown[0]; });
  numbers("slowdown_5", [](const MetricsRow& r) { return r.slowdown[1]; });
  numbers("slowdown_10", [](const MetricsRow& r) { return r.slowdown[2]; });
  numbers("slowdown_5_own", [](const MetricsRow& r) { return r.slowdown_5_own; });
  return d;
}

// The figures report.md's cross-validation column shows, from metrics.csv's rows.
py::dict cv_summary(const std::string& metrics_path, const std::string& collection) {
  const std::vector<MetricsRow> rows = read_metrics(metrics_path);
  py::dict kept;
  for (const auto& [fold, row] : kept_oof_rows(rows, collection)) kept[py::int_(fold)] = row->epoch;
  const auto slow = kept_oof_slowdowns(rows, collection);
  py::dict d;
  d["cv_score"] = cv_score(rows, collection);
  d["kept_epoch"] = kept;
  d["kept_oof_slowdown"] = py::make_tuple(slow[0], slow[1], slow[2]);
  return d;
}

py::dict submission_dict(Submission&& s) {
  py::dict d;
  for (auto& [id, configs] : s) d[py::str(id)] = to_numpy(std::move(configs));
  return d;
}

// A shard's node_config_packed (any shape) as the release's node_config_feat: one more
// trailing axis of the 18 layout values, int8.
py::array_t<int8_t> unpack_layout(const py::array_t<uint64_t, py::array::c_style | py::array::forcecast>& packed) {
  std::vector<py::ssize_t> shape(packed.shape(), packed.shape() + packed.ndim());
  shape.push_back(kLayoutConfigDim);
  py::array_t<int8_t> out(shape);
  const uint64_t* in = packed.data();
  int8_t* values = out.mutable_data();
  for (py::ssize_t i = 0; i < packed.size(); ++i) unpack_layout_values(in[i], values + i * kLayoutConfigDim);
  return out;
}

}  // namespace
}  // namespace tpuperf

PYBIND11_MODULE(_core, m) {
  using namespace tpuperf;
  m.doc() = "tpuperf's C++ core; use the package tpuperf, which documents every call.";
  error_type = PyErr_NewException("tpuperf.Error", PyExc_ValueError, nullptr);
  m.attr("Error") = py::handle(error_type);
  py::register_exception_translator(translate_errors);
  // tpuperf's logger, set up as the tools set it up: to stderr in their format (an
  // adaptation logs a line).
  init_logging(-1, "info");
  m.def("set_log_level", &set_log_level, py::arg("level"),
        "trace, debug, info (the default), warn, error, critical or off.");
  m.def("error", [](const std::string& reason, const std::string& file, const std::string& key) {
    return python_error(Error(reason, file, key));
  }, "A tpuperf.Error built (and its message formatted) as tpuperf::Error builds it.");

  m.attr("node_feat_dim") = kNodeFeatDim;
  m.attr("tile_config_dim") = kTileConfigDim;
  m.attr("layout_config_dim") = kLayoutConfigDim;
  m.attr("default_adapt_steps") = kDefaultAdaptSteps;
  m.attr("default_adapt_lr_fraction") = kDefaultAdaptLrFraction;
  m.attr("blend_max_measured") = kBlendMaxMeasured;
  m.attr("blend_min_measured") = kBlendMinMeasured;

  py::class_<PyRanker>(m, "Ranker")
      .def(py::init(&load_ranker), py::arg("run_dir"), py::arg("collection"), py::arg("threads"), py::arg("fused"),
           py::arg("keep_freed_memory"))
      .def_property_readonly("collection", [](const PyRanker& r) { return r.ranker.collection(); })
      .def_property_readonly("folds", [](const PyRanker& r) { return r.ranker.folds(); })
      .def_property_readonly("adaptation", &PyRanker::adaptation)
      .def("rank", &PyRanker::rank, py::arg("name"), py::arg("graph"), py::arg("candidates"))
      .def("rank_file", &PyRanker::rank_file, py::arg("path"))
      .def("adapted",
           [](PyRanker& r, const std::string& name, const py::dict& graph, const py::dict& measured,
              const std::vector<double>& runtimes, const std::string& method, int64_t steps, double lr, int64_t slate,
              uint64_t seed) {
             return r.adapted(name, graph, measured, runtimes, adapt_options(method, steps, lr, slate, seed));
           })
      .def("adapted_file",
           [](PyRanker& r, const std::string& path, const std::string& method, int64_t steps, double lr,
              int64_t slate, uint64_t seed) {
             return r.adapted_file(path, adapt_options(method, steps, lr, slate, seed));
           })
      .def("suggest",
           [](PyRanker& r, const std::string& name, const py::dict& graph, const py::dict& candidates, int64_t count,
              double exploration, double diversity, std::vector<int64_t> exclude) {
             return r.suggest(name, graph, candidates, suggest_options(count, exploration, diversity, std::move(exclude)));
           })
      .def("suggest_file", [](PyRanker& r, const std::string& path, int64_t count, double exploration,
                              double diversity, std::vector<int64_t> exclude) {
        return r.suggest_file(path, suggest_options(count, exploration, diversity, std::move(exclude)));
      });

  m.def("trained_collections", &trained_collections, py::arg("run_dir"));
  m.def("read_metrics", [](const std::string& path) { return metrics_columns(read_metrics(path)); });
  m.def("cv_summary", &cv_summary, py::arg("metrics_path"), py::arg("collection"));
  m.def("read_submission", [](const std::string& path) { return submission_dict(read_submission(path)); });
  m.def("unpack_layout_values", &unpack_layout, py::arg("packed"));
}
