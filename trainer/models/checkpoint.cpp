#include "trainer/models/checkpoint.h"


#include <cstdio>
#include <sstream>

#include "common/base/error.h"
#include "common/base/files.h"
#include "trainer/models/registry.h"

namespace tpuperf {

namespace {

torch::Tensor i64(int64_t v) { return torch::tensor({v}, torch::kInt64); }
torch::Tensor f64(double v) { return torch::tensor({v}, torch::kFloat64); }

template <typename T>
torch::Tensor vec_tensor(const std::vector<T>& v, torch::ScalarType type) {
  std::vector<double> d(v.begin(), v.end());
  return torch::tensor(d, torch::kFloat64).to(type).clone();
}

void write_transform(torch::serialize::OutputArchive& ar, const FeatureTransform& t) {
  ar.write("transform.kept_columns", vec_tensor(t.kept_columns, torch::kInt64));
  ar.write("transform.log1p", vec_tensor(t.log1p, torch::kInt64));
  ar.write("transform.mean", vec_tensor(t.mean, torch::kFloat64));
  ar.write("transform.stddev", vec_tensor(t.stddev, torch::kFloat64));
}

// Reads into a fresh tensor: InputArchive::read into an already defined tensor keeps
// that tensor's dtype and reinterprets the bytes.
torch::Tensor read_tensor(torch::serialize::InputArchive& ar, const char* key) {
  torch::Tensor t;
  ar.read(key, t);
  return t;
}

template <typename T>
std::vector<T> read_vec(torch::serialize::InputArchive& ar, const char* key) {
  torch::Tensor t = read_tensor(ar, key);
  t = t.to(torch::kFloat64).contiguous();
  const double* p = t.data_ptr<double>();
  return std::vector<T>(p, p + t.numel());
}

void write_model_spec(torch::serialize::OutputArchive& ar, const ModelSpec& m) {
  ar.write("model_spec.kind", c10::IValue(std::string(m.kind == Kind::Tile ? "tile" : "layout")));
  ar.write("model_spec.arch", c10::IValue(m.arch));
  ar.write("model_spec.hidden", i64(m.options.hidden));
  ar.write("model_spec.layers", i64(m.options.layers));
  ar.write("model_spec.dropout", f64(m.options.dropout));
  ar.write("model_spec.opcode_dim", i64(m.options.opcode_dim));
  ar.write("model_spec.attention_heads", i64(m.options.attention_heads));
  ar.write("model_spec.fused", i64(m.options.fused ? 1 : 0));
}

// Leaves m.arch empty for a checkpoint written before the spec was recorded.
void read_model_spec(torch::serialize::InputArchive& ar, ModelSpec& m) {
  c10::IValue arch;
  if (!ar.try_read("model_spec.arch", arch)) return;
  c10::IValue kind;
  ar.read("model_spec.kind", kind);
  m.kind = kind.toStringRef() == "tile" ? Kind::Tile : Kind::Layout;
  m.arch = arch.toStringRef();
  m.options.hidden = read_tensor(ar, "model_spec.hidden").item<int64_t>();
  m.options.layers = read_tensor(ar, "model_spec.layers").item<int64_t>();
  m.options.dropout = read_tensor(ar, "model_spec.dropout").item<double>();
  m.options.opcode_dim = read_tensor(ar, "model_spec.opcode_dim").item<int64_t>();
  m.options.attention_heads = read_tensor(ar, "model_spec.attention_heads").item<int64_t>();
  m.options.fused = read_tensor(ar, "model_spec.fused").item<int64_t>() != 0;
}

CheckpointMeta read_meta(torch::serialize::InputArchive& ar, FeatureTransform* transform) {
  CheckpointMeta m;
  m.epochs_done = read_tensor(ar, "meta.epochs_done").item<int64_t>();
  m.step = read_tensor(ar, "meta.step").item<int64_t>();
  m.best_score = read_tensor(ar, "meta.best_score").item<double>();
  m.best_epoch = read_tensor(ar, "meta.best_epoch").item<int64_t>();
  m.model.num_node_feat = read_tensor(ar, "meta.num_node_feat").item<int64_t>();
  read_model_spec(ar, m.model);
  if (transform) {
    transform->kept_columns = read_vec<int32_t>(ar, "transform.kept_columns");
    transform->log1p = read_vec<uint8_t>(ar, "transform.log1p");
    transform->mean = read_vec<double>(ar, "transform.mean");
    transform->stddev = read_vec<double>(ar, "transform.stddev");
  }
  return m;
}

void write_training_weights(torch::serialize::OutputArchive& ar, const std::vector<torch::Tensor>& w) {
  ar.write("training_weights.count", i64(static_cast<int64_t>(w.size())));
  for (size_t i = 0; i < w.size(); ++i) ar.write("training_weights." + std::to_string(i), w[i].detach());
}

// Empty for a checkpoint without them; each must have its parameter's shape.
std::vector<torch::Tensor> read_training_weights(torch::serialize::InputArchive& ar, torch::nn::Module& model,
                                                 const std::string& path) {
  std::vector<torch::Tensor> w;
  torch::Tensor count;
  if (!ar.try_read("training_weights.count", count)) return w;
  auto params = model.parameters();
  if (count.item<int64_t>() != static_cast<int64_t>(params.size()))
    throw Error("checkpoint's training weights do not match the model: " + std::to_string(count.item<int64_t>()) +
                    " tensors for " + std::to_string(params.size()) + " parameters",
                path);
  for (size_t i = 0; i < params.size(); ++i) {
    w.push_back(read_tensor(ar, ("training_weights." + std::to_string(i)).c_str()));
    if (!w.back().sizes().equals(params[i].sizes()))
      throw Error("checkpoint's training weight " + std::to_string(i) + " has another shape than the model's", path);
  }
  return w;
}

}  // namespace

void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta, const FeatureTransform& transform,
                     const std::vector<torch::Tensor>* training_weights) {
  torch::serialize::OutputArchive ar;
  torch::serialize::OutputArchive model_ar;
  model.save(model_ar);
  ar.write("model", model_ar);
  if (optimizer) {
    torch::serialize::OutputArchive opt_ar;
    optimizer->save(opt_ar);
    ar.write("optimizer", opt_ar);
  }
  ar.write("meta.epochs_done", i64(meta.epochs_done));
  ar.write("meta.step", i64(meta.step));
  ar.write("meta.best_score", f64(meta.best_score));
  ar.write("meta.best_epoch", i64(meta.best_epoch));
  ar.write("meta.num_node_feat", i64(meta.model.num_node_feat));
  write_model_spec(ar, meta.model);
  write_transform(ar, transform);
  if (training_weights && !training_weights->empty()) write_training_weights(ar, *training_weights);
  // Serialized in memory, then written by write_file_atomic: LibTorch's own file writer
  // throws from a destructor on a full disk, which aborts the process instead of
  // reporting the file and the reason.
  std::ostringstream bytes;
  try {
    ar.save_to(bytes);
  } catch (const c10::Error& e) {
    throw Error(std::string("cannot serialize checkpoint: ") + e.what_without_backtrace(), path);
  }
  write_file_atomic(path, bytes.str());
}

CheckpointMeta load_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer* optimizer, FeatureTransform* transform,
                               std::vector<torch::Tensor>* training_weights) {
  try {
    torch::serialize::InputArchive ar;
    ar.load_from(path);
    torch::serialize::InputArchive model_ar;
    ar.read("model", model_ar);
    // Module::load replaces tensors without checking shapes: check them ourselves, so a
    // checkpoint of a differently sized model is an error, not a silently broken model.
    std::vector<std::pair<std::string, std::vector<int64_t>>> expected;
    for (const auto& p : model.named_parameters()) expected.push_back({p.key(), p.value().sizes().vec()});
    model.load(model_ar);
    auto loaded = model.named_parameters();
    for (const auto& [name, sizes] : expected) {
      const torch::Tensor* t = loaded.find(name);
      if (!t || t->sizes().vec() != sizes)
        throw Error("checkpoint does not match the model: parameter " + name + " has another shape", path);
    }
    if (optimizer) {
      torch::serialize::InputArchive opt_ar;
      ar.read("optimizer", opt_ar);
      optimizer->load(opt_ar);
    }
    if (training_weights) *training_weights = read_training_weights(ar, model, path);
    return read_meta(ar, transform);
  } catch (const c10::Error& e) {
    throw Error(std::string("cannot load checkpoint: ") + e.what_without_backtrace(), path);
  }
}

CheckpointMeta peek_checkpoint(const std::string& path, FeatureTransform* transform) {
  try {
    torch::serialize::InputArchive ar;
    ar.load_from(path);
    return read_meta(ar, transform);
  } catch (const c10::Error& e) {
    throw Error(std::string("cannot load checkpoint: ") + e.what_without_backtrace(), path);
  }
}

std::shared_ptr<RankingModel> load_trained_model(const std::string& path, const ModelSpec& fallback, bool fused,
                                                 FeatureTransform* transform, CheckpointMeta* meta) {
  CheckpointMeta m = peek_checkpoint(path, transform);
  ModelSpec spec = m.model.arch.empty() ? fallback : m.model;
  spec.num_node_feat = m.model.num_node_feat;
  spec.options.fused = fused;
  ModelPtr model;
  try {
    model = make_model(spec);
  } catch (Error& e) {
    throw e.with_file(path);
  }
  load_checkpoint(path, *model, nullptr, nullptr);
  model->eval();
  if (meta) *meta = m;
  return model;
}

}  // namespace tpuperf
