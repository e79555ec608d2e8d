// Checkpoints: both model kinds round-trip (parameters, optimizer state, progress and the
// feature transform), a step after loading equals a step without the save/load, writing is
// atomic, and a damaged file is a clear error naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "trainer/train/checkpoint.h"
#include "trainer/train/fold_training.h"

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
void one_step(Ranker& r, torch::optim::AdamW& opt, double seed) {
  opt.zero_grad();
  torch::Tensor loss = torch::zeros({}, torch::kFloat32);
  for (auto& p : r.module->parameters()) loss = loss + (p * seed).sin().sum();
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

class CheckpointTest : public ::testing::TestWithParam<Kind> {};

}  // namespace

TEST_P(CheckpointTest, RoundTripAndContinueExactly) {
  torch::set_num_threads(1);
  ModelOptions opts;
  opts.hidden = 16;
  opts.layers = 2;
  opts.attention_heads = 2;
  torch::manual_seed(1);
  Ranker a = make_ranker(GetParam(), 7, opts);
  torch::optim::AdamW opt_a(a.module->parameters(), torch::optim::AdamWOptions(1e-2));
  one_step(a, opt_a, 0.3);

  CheckpointMeta meta;
  meta.epochs_done = 3;
  meta.step = 42;
  meta.best_score = 0.625;
  meta.best_epoch = 2;
  meta.num_node_feat = 7;
  std::string path = temp_path("roundtrip.pt");
  save_checkpoint(path, *a.module, &opt_a, meta, some_transform());
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(e.path().string().find(path + ".tmp"), std::string::npos) << "temporary file left";

  torch::manual_seed(2);  // different initial weights
  Ranker b = make_ranker(GetParam(), 7, opts);
  torch::optim::AdamW opt_b(b.module->parameters(), torch::optim::AdamWOptions(1e-2));
  EXPECT_FALSE(same_params(*a.module, *b.module));
  FeatureTransform t;
  CheckpointMeta got = load_checkpoint(path, *b.module, &opt_b, &t);
  EXPECT_TRUE(same_params(*a.module, *b.module));
  EXPECT_EQ(got.epochs_done, 3);
  EXPECT_EQ(got.step, 42);
  EXPECT_DOUBLE_EQ(got.best_score, 0.625);
  EXPECT_EQ(got.best_epoch, 2);
  EXPECT_EQ(got.num_node_feat, 7);
  FeatureTransform want = some_transform();
  EXPECT_EQ(t.kept_columns, want.kept_columns);
  EXPECT_EQ(t.log1p, want.log1p);
  EXPECT_EQ(t.mean, want.mean);
  EXPECT_EQ(t.stddev, want.stddev);

  // The optimizer state came along: the next step is bit-identical on both.
  one_step(a, opt_a, 0.7);
  one_step(b, opt_b, 0.7);
  EXPECT_TRUE(same_params(*a.module, *b.module));

  FeatureTransform peeked;
  EXPECT_EQ(peek_checkpoint(path, &peeked).step, 42);
  EXPECT_EQ(peeked.mean, want.mean);
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(BothKinds, CheckpointTest, ::testing::Values(Kind::Tile, Kind::Layout));

TEST(Checkpoint, DamagedFileNamesIt) {
  std::string path = temp_path("damaged.pt");
  std::ofstream(path) << "not a checkpoint";
  ModelOptions opts;
  opts.hidden = 8;
  Ranker r = make_ranker(Kind::Tile, 3, opts);
  try {
    load_checkpoint(path, *r.module, nullptr, nullptr);
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
  Ranker a = make_ranker(Kind::Layout, 5, small);
  std::string path = temp_path("shape.pt");
  save_checkpoint(path, *a.module, nullptr, CheckpointMeta{}, some_transform());
  Ranker b = make_ranker(Kind::Layout, 5, big);
  EXPECT_THROW(load_checkpoint(path, *b.module, nullptr, nullptr), Error);
  fs::remove(path);
}
