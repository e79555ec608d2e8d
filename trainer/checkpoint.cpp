#include "trainer/checkpoint.h"

#include <unistd.h>

#include <cstdio>

#include "common/error.h"
#include "common/files.h"

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

template <typename T>
std::vector<T> read_vec(torch::serialize::InputArchive& ar, const char* key) {
  torch::Tensor t;
  ar.read(key, t);
  t = t.to(torch::kFloat64).contiguous();
  const double* p = t.data_ptr<double>();
  return std::vector<T>(p, p + t.numel());
}

CheckpointMeta read_meta(torch::serialize::InputArchive& ar, FeatureTransform* transform) {
  CheckpointMeta m;
  torch::Tensor t;
  ar.read("meta.epochs_done", t), m.epochs_done = t.item<int64_t>();
  ar.read("meta.step", t), m.step = t.item<int64_t>();
  ar.read("meta.best_score", t), m.best_score = t.item<double>();
  ar.read("meta.best_epoch", t), m.best_epoch = t.item<int64_t>();
  ar.read("meta.num_node_feat", t), m.num_node_feat = t.item<int64_t>();
  if (transform) {
    transform->kept_columns = read_vec<int32_t>(ar, "transform.kept_columns");
    transform->log1p = read_vec<uint8_t>(ar, "transform.log1p");
    transform->mean = read_vec<double>(ar, "transform.mean");
    transform->stddev = read_vec<double>(ar, "transform.stddev");
  }
  return m;
}

}  // namespace

void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta, const FeatureTransform& transform) {
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
  ar.write("meta.num_node_feat", i64(meta.num_node_feat));
  write_transform(ar, transform);
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    ar.save_to(tmp);
  } catch (const c10::Error& e) {
    std::remove(tmp.c_str());
    throw Error(std::string("cannot write checkpoint: ") + e.what_without_backtrace(), path);
  }
  rename_durable(tmp, path);
}

CheckpointMeta load_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer* optimizer, FeatureTransform* transform) {
  try {
    torch::serialize::InputArchive ar;
    ar.load_from(path);
    torch::serialize::InputArchive model_ar;
    ar.read("model", model_ar);
    model.load(model_ar);
    if (optimizer) {
      torch::serialize::InputArchive opt_ar;
      ar.read("optimizer", opt_ar);
      optimizer->load(opt_ar);
    }
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

}  // namespace tpuperf
