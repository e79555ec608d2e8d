// Checkpoints: every registered model round-trips (parameters, optimizer state, progress,
// the model's spec and the feature transform), a step after loading equals a step without
// the save/load, writing is atomic, loading builds the recorded model whatever the config
// says, a checkpoint written before specs were recorded still loads, and a damaged file is
// a clear error naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/base/error.h"
#include "tests/trainer/models/model_test_util.h"
#include "trainer/models/checkpoint.h"

using namespace tpuperf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

FeatureTransform some_transform() {
  FeatureTransform t;
  t.kept_columns = {0, 5, 139};
  t.log1p = {0, 1, 0};
  t.mean = {0.25, -3.5, 1e9};
  t.stddev = {1.0, 0.125, 7.0};
  return t;
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("tpuperf_ckpt_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Gives every parameter a gradient and takes one AdamW step, so the optimizer has state.
void one_step(RankingModel& m, torch::optim::AdamW& opt, double seed) {
  opt.zero_grad();
  torch::Tensor loss = torch::zeros({}, torch::kFloat32);
  for (auto& p : m.parameters()) loss = loss + (p * seed).sin().sum();
  loss.backward();
  opt.step();
}

bool same_params(torch::nn::Module& a, torch::nn::Module& b) {
  auto pa = a.parameters(), pb = b.parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i)
    if (!torch::equal(pa[i], pb[i])) return false;
  return true;
}

class CheckpointTest : public ::testing::TestWithParam<std::string> {
 protected:
  const ModelArch& arch() const {
    for (const auto& a : model_archs())
      if (a.name == GetParam()) return a;
    throw std::logic_error("no arch " + GetParam());
  }
};

// Hidden 16, 2 blocks, 2 attention heads, opcode_dim 6.
ModelOptions checkpoint_options() {
  ModelOptions opts;
  opts.hidden = 16;
  opts.layers = 2;
  opts.attention_heads = 2;
  opts.opcode_dim = 6;
  return opts;
}

}  // namespace

TEST_P(CheckpointTest, RoundTripAndContinueExactly) {
  torch::set_num_threads(1);
  const ModelOptions opts = checkpoint_options();
  torch::manual_seed(1);
  ModelPtr a = model_of(arch(), 7, opts);
  torch::optim::AdamW opt_a(a->parameters(), torch::optim::AdamWOptions(1e-2));
  one_step(*a, opt_a, 0.3);

  CheckpointMeta meta;
  meta.epochs_done = 3;
  meta.step = 42;
  meta.best_score = 0.625;
  meta.best_epoch = 2;
  meta.model = spec_of(arch(), 7, opts);
  std::string path = temp_path("roundtrip.pt");
  save_checkpoint(path, *a, &opt_a, meta, some_transform());
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(e.path().string().find(path + ".tmp"), std::string::npos) << "temporary file left";

  torch::manual_seed(2);  // different initial weights
  ModelPtr b = model_of(arch(), 7, opts);
  torch::optim::AdamW opt_b(b->parameters(), torch::optim::AdamWOptions(1e-2));
  EXPECT_FALSE(same_params(*a, *b));
  FeatureTransform t;
  CheckpointMeta got = load_checkpoint(path, *b, &opt_b, &t);
  EXPECT_TRUE(same_params(*a, *b));
  EXPECT_EQ(got.epochs_done, 3);
  EXPECT_EQ(got.step, 42);
  EXPECT_DOUBLE_EQ(got.best_score, 0.625);
  EXPECT_EQ(got.best_epoch, 2);
  EXPECT_EQ(got.model.num_node_feat, 7);
  EXPECT_EQ(got.model.arch, arch().name);
  EXPECT_EQ(got.model.kind, arch().kind);
  EXPECT_EQ(got.model.options.hidden, 16);
  EXPECT_EQ(got.model.options.layers, 2);
  EXPECT_EQ(got.model.options.opcode_dim, 6);
  EXPECT_EQ(got.model.options.attention_heads, 2);
  EXPECT_DOUBLE_EQ(got.model.options.dropout, opts.dropout);
  FeatureTransform want = some_transform();
  EXPECT_EQ(t.kept_columns, want.kept_columns);
  EXPECT_EQ(t.log1p, want.log1p);
  EXPECT_EQ(t.mean, want.mean);
  EXPECT_EQ(t.stddev, want.stddev);

  // The optimizer state came along: the next step is bit-identical on both.
  one_step(*a, opt_a, 0.7);
  one_step(*b, opt_b, 0.7);
  EXPECT_TRUE(same_params(*a, *b));

  FeatureTransform peeked;
  EXPECT_EQ(peek_checkpoint(path, &peeked).step, 42);
  EXPECT_EQ(peeked.mean, want.mean);
  fs::remove(path);
}

namespace {

std::vector<std::string> every_arch_name() {
  std::vector<std::string> names;
  for (const auto& a : model_archs()) names.push_back(a.name);
  return names;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(EveryModel, CheckpointTest, ::testing::ValuesIn(every_arch_name()));

namespace {

// The layout models' parameter names, shapes and order are those of the checkpoints they
// have written (by name for the weights; by position for the optimizer state and the
// training weights): a change here breaks loading or resuming them. checkpoint_options(),
// 7 node features.
std::vector<std::string> parameter_list(const std::string& arch) {
  ModelSpec spec;
  spec.kind = Kind::Layout;
  spec.arch = arch;
  spec.num_node_feat = 7;
  spec.options = checkpoint_options();
  std::vector<std::string> list;
  for (const auto& p : make_model(spec)->named_parameters()) {
    std::string sizes;
    for (int64_t d : p.value().sizes()) sizes += (sizes.empty() ? "" : "x") + std::to_string(d);
    list.push_back(p.key() + " " + sizes);
  }
  return list;
}

}  // namespace

TEST(Checkpoint, LayoutModelsKeepTheirParameterList) {
  const std::vector<std::string> sage = {
      "encoder.opcode.weight 121x6", "encoder.input.weight 16x13", "encoder.input.bias 16",
      "encoder.out.weight 16x16", "encoder.out.bias 16", "config_embed.weight 126x16",
      "config_out.weight 16x16", "config_out.bias 16", "sage0.linear.weight 16x48",
      "sage0.linear.bias 16", "sage0.norm.weight 16", "sage0.norm.bias 16",
      "sage1.linear.weight 16x48", "sage1.linear.bias 16", "sage1.norm.weight 16",
      "sage1.norm.bias 16", "readout.pool_proj.weight 16x32", "readout.pool_proj.bias 16",
      "readout.hidden.weight 16x16", "readout.hidden.bias 16", "readout.score.weight 1x16",
      "readout.score.bias 1", "readout.attention.qkv.weight 48x16", "readout.attention.qkv.bias 48",
      "readout.attention.proj.weight 16x16", "readout.attention.proj.bias 16",
      "readout.attention.norm.weight 16", "readout.attention.norm.bias 16"};
  EXPECT_EQ(parameter_list("sage"), sage);
  // The default: sage's list with two pools (the configurable nodes apart) into the
  // readout, then the shape features' map and the wide term.
  std::vector<std::string> context = sage;
  context[16] = "readout.pool_proj.weight 16x64";
  for (const char* p : {"shape_in.weight 16x27", "shape_in.bias 16", "wide.weight 153x16", "wide.bias 153"})
    context.push_back(p);
  EXPECT_EQ(parameter_list("sage_shape_context"), context);
}

// A checkpoint of a retired model fails to load with an error naming the file, the model
// and that it was retired.
TEST(Checkpoint, RetiredModelIsAClearError) {
  const ModelOptions opts = small_options();
  ModelPtr a = model_of(default_arch(Kind::Layout), 5, opts);
  CheckpointMeta meta;
  meta.model = spec_of(default_arch(Kind::Layout), 5, opts);
  meta.model.arch = retired_model_archs().at(0).name;
  const std::string path = temp_path("retired.pt");
  save_checkpoint(path, *a, nullptr, meta, some_transform());
  try {
    load_trained_model(path, spec_of(default_arch(Kind::Layout), 5, opts), true, nullptr);
    ADD_FAILURE() << "a checkpoint of a retired model loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("'" + meta.model.arch + "' was retired"));
  }
  fs::remove(path);
}

// Prediction builds the model a checkpoint records, not the one the config names now
// (another architecture and width here), and either path loads it.
TEST(Checkpoint, LoadBuildsTheRecordedModel) {
  ModelOptions opts = small_options();
  const ModelArch& late = model_archs()[1];
  ASSERT_EQ(late.name, "late_join");
  ModelPtr a = model_of(late, 5, opts);
  CheckpointMeta meta;
  meta.model = spec_of(late, 5, opts);
  const std::string path = temp_path("recorded.pt");
  save_checkpoint(path, *a, nullptr, meta, some_transform());
  ModelOptions other = small_options();
  other.hidden = 8;
  const ModelSpec configured = spec_of(default_arch(Kind::Tile), 99, other);
  for (bool fused : {true, false}) {
    ModelPtr b = load_trained_model(path, configured, fused, nullptr);
    EXPECT_TRUE(same_params(*a, *b));
    EXPECT_FALSE(b->is_training());
  }
  fs::remove(path);
}

// A checkpoint as tpuperf wrote it before model specs were recorded (model, optimizer-less,
// meta and transform keys only) loads with the configured architecture and its own width.
TEST(Checkpoint, CheckpointWithoutASpecLoadsWithTheConfiguredModel) {
  const ModelOptions opts = small_options();
  ModelPtr a = model_of(default_arch(Kind::Layout), 5, opts);
  torch::serialize::OutputArchive ar, model_ar;
  a->save(model_ar);
  ar.write("model", model_ar);
  ar.write("meta.epochs_done", torch::tensor({int64_t{4}}));
  ar.write("meta.step", torch::tensor({int64_t{40}}));
  ar.write("meta.best_score", torch::tensor({0.5}, torch::kFloat64));
  ar.write("meta.best_epoch", torch::tensor({int64_t{3}}));
  ar.write("meta.num_node_feat", torch::tensor({int64_t{5}}));
  const FeatureTransform t = some_transform();
  ar.write("transform.kept_columns", torch::tensor(std::vector<int64_t>{0, 5, 139}));
  ar.write("transform.log1p", torch::tensor(std::vector<int64_t>{0, 1, 0}));
  ar.write("transform.mean", torch::tensor(t.mean, torch::kFloat64));
  ar.write("transform.stddev", torch::tensor(t.stddev, torch::kFloat64));
  const std::string path = temp_path("old.pt");
  ar.save_to(path);
  CheckpointMeta meta;
  FeatureTransform got;
  ModelPtr b = load_trained_model(path, spec_of(default_arch(Kind::Layout), 0, opts), true, &got, &meta);
  EXPECT_TRUE(same_params(*a, *b));
  EXPECT_EQ(meta.model.arch, "");
  EXPECT_EQ(meta.model.num_node_feat, 5);
  EXPECT_EQ(meta.step, 40);
  EXPECT_EQ(got.mean, t.mean);
  fs::remove(path);
}

TEST(Checkpoint, DamagedFileNamesIt) {
  std::string path = temp_path("damaged.pt");
  std::ofstream(path) << "not a checkpoint";
  ModelOptions opts;
  opts.hidden = 8;
  ModelPtr r = model_of(default_arch(Kind::Tile), 3, opts);
  try {
    load_checkpoint(path, *r, nullptr, nullptr);
    FAIL() << "a damaged checkpoint loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("cannot load checkpoint"));
  }
  fs::remove(path);
}

TEST(Checkpoint, ModelOfAnotherShapeIsAnError) {
  ModelOptions small, big;
  small.hidden = 8;
  big.hidden = 16;
  ModelPtr a = model_of(default_arch(Kind::Layout), 5, small);
  std::string path = temp_path("shape.pt");
  save_checkpoint(path, *a, nullptr, CheckpointMeta{}, some_transform());
  ModelPtr b = model_of(default_arch(Kind::Layout), 5, big);
  EXPECT_THROW(load_checkpoint(path, *b, nullptr, nullptr), Error);
  fs::remove(path);
}

// With weight averaging the model entry holds the average (what prediction loads) and the
// training weights ride along for --resume; a checkpoint without them gives none back, and
// training weights of another model are an error naming the file.
TEST(Checkpoint, TrainingWeightsRoundTripBesideTheAverage) {
  const ModelOptions opts = small_options();
  torch::manual_seed(1);
  ModelPtr averaged = model_of(default_arch(Kind::Layout), 5, opts);
  torch::manual_seed(2);
  ModelPtr training = model_of(default_arch(Kind::Layout), 5, opts);
  std::vector<torch::Tensor> weights;
  for (const auto& p : training->parameters()) weights.push_back(p.detach().clone());
  CheckpointMeta meta;
  meta.model = spec_of(default_arch(Kind::Layout), 5, opts);
  const std::string path = temp_path("averaged.pt");
  save_checkpoint(path, *averaged, nullptr, meta, some_transform(), &weights);

  torch::manual_seed(3);
  ModelPtr b = model_of(default_arch(Kind::Layout), 5, opts);
  std::vector<torch::Tensor> got;
  load_checkpoint(path, *b, nullptr, nullptr, &got);
  EXPECT_TRUE(same_params(*averaged, *b));
  ASSERT_EQ(got.size(), weights.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::equal(got[i], weights[i])) << i;
  ModelPtr predicted = load_trained_model(path, spec_of(default_arch(Kind::Layout), 5, opts), true, nullptr);
  EXPECT_TRUE(same_params(*averaged, *predicted));

  const std::string plain = temp_path("plain.pt");
  save_checkpoint(plain, *averaged, nullptr, meta, some_transform());
  got.assign(1, torch::zeros({1}));
  load_checkpoint(plain, *b, nullptr, nullptr, &got);
  EXPECT_TRUE(got.empty());

  weights.pop_back();
  save_checkpoint(path, *averaged, nullptr, meta, some_transform(), &weights);
  try {
    load_checkpoint(path, *b, nullptr, nullptr, &got);
    FAIL() << "training weights of another model loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("training weights do not match"));
  }
  fs::remove(path);
  fs::remove(plain);
}
