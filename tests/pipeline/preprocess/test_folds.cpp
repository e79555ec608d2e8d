// Model families and the fold assignment: family-grouped and size-balanced, or graph by
// graph when the families cannot fill the folds (preprocess.fold_by).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "common/base/error.h"
#include "pipeline/preprocess/folds.h"

using namespace tpuperf;

TEST(Folds, FamilyOfRealLookingNames) {
  EXPECT_EQ(model_family("resnet50.4x4.fp16"), "resnet");
  EXPECT_EQ(model_family("bert_en_cased_L-12_H-768_A-12_batch_size_16_test"), "bert");
  EXPECT_EQ(model_family("alexnet_train_batch_32_-1bae27a41d70f4dc"), "alexnet");
  EXPECT_EQ(model_family("efficientnet_b0_batch_32"), "efficientnet");
  EXPECT_EQ(model_family("inception_v3.2x2.bf16"), "inception");
  EXPECT_EQ(model_family("mlperf_bert_batch_24_2x2"), "mlperf");
  EXPECT_EQ(model_family("ResNet-RS.v2"), "resnet");
  EXPECT_EQ(model_family("unet_3d.4x4.bf16"), "unet");
  EXPECT_EQ(model_family("3d_unet.x"), "3d_unet.x");  // non-letter start: its own family
  EXPECT_EQ(model_family("_private"), "_private");
  EXPECT_EQ(model_family(""), "");
}

namespace {

struct Synthetic {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
};

// 30 families of 1..12 graphs each, sizes 1..1000.
Synthetic synthetic_set(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> members(1, 12), size(1, 1000);
  Synthetic s;
  for (int f = 0; f < 30; ++f) {
    std::string family;
    for (int x = f; ; x /= 26) {  // letters only: "a", "b", ..., "ba", ...
      family += static_cast<char>('a' + x % 26);
      if (x < 26) break;
    }
    family = "model" + family;
    int m = members(rng);
    for (int i = 0; i < m; ++i) {
      s.names.push_back(family + (i % 2 ? "_batch_" : ".") + std::to_string(i) + "x2");
      s.sizes.push_back(size(rng));
    }
  }
  return s;
}

}  // namespace

TEST(Folds, SameFamilySameFoldAndBalanced) {
  Synthetic s = synthetic_set(1);
  const int k = 5;
  const FoldAssignment a = assign_folds(s.names, s.sizes, k, 42);
  EXPECT_EQ(a.rule, FoldBy::Family);
  EXPECT_EQ(a.note, "");
  const std::vector<int>& folds = a.folds;
  ASSERT_EQ(folds.size(), s.names.size());
  std::map<std::string, int> family_fold;
  std::map<std::string, int64_t> family_size;
  std::vector<int64_t> load(k, 0);
  for (size_t i = 0; i < folds.size(); ++i) {
    ASSERT_GE(folds[i], 0);
    ASSERT_LT(folds[i], k);
    std::string fam = model_family(s.names[i]);
    auto [it, inserted] = family_fold.emplace(fam, folds[i]);
    EXPECT_EQ(it->second, folds[i]) << s.names[i];
    family_size[fam] += s.sizes[i];
    load[folds[i]] += s.sizes[i];
  }
  EXPECT_EQ(family_fold.size(), 30u);
  // Greedy to the lightest fold: the spread never exceeds the largest family.
  int64_t largest = 0;
  for (auto& [f, sz] : family_size) largest = std::max(largest, sz);
  auto [mn, mx] = std::minmax_element(load.begin(), load.end());
  EXPECT_LE(*mx - *mn, largest);
  EXPECT_GT(*mn, 0);
}

TEST(Folds, DeterministicAndOrderIndependent) {
  Synthetic s = synthetic_set(2);
  std::vector<int> a = assign_folds(s.names, s.sizes, 4, 7).folds;
  std::vector<int> b = assign_folds(s.names, s.sizes, 4, 7).folds;
  EXPECT_EQ(a, b);
  // Shuffle the input: every graph keeps its fold.
  std::vector<size_t> perm(s.names.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(99));
  Synthetic t;
  for (size_t i : perm) {
    t.names.push_back(s.names[i]);
    t.sizes.push_back(s.sizes[i]);
  }
  std::vector<int> c = assign_folds(t.names, t.sizes, 4, 7).folds;
  for (size_t j = 0; j < perm.size(); ++j) EXPECT_EQ(c[j], a[perm[j]]) << t.names[j];
}

TEST(Folds, SeedBreaksTiesOnly) {
  // Ten families of equal size: the seed decides their order, balance stays perfect.
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  for (char f = 'a'; f < 'a' + 10; ++f) {
    names.push_back(std::string("net") + f + "1");
    sizes.push_back(10);
  }
  bool differs = false;
  std::vector<int> base = assign_folds(names, sizes, 5, 0).folds;
  for (uint64_t seed = 1; seed < 20; ++seed) {
    std::vector<int> f = assign_folds(names, sizes, 5, seed).folds;
    std::vector<int> count(5, 0);
    for (int x : f) ++count[x];
    for (int c : count) EXPECT_EQ(c, 2);
    differs |= f != base;
  }
  EXPECT_TRUE(differs);
}

TEST(Folds, FamiliesStayTogetherWhenThereAreEnough) {
  std::vector<std::string> names = {"resnet50.a", "resnet101.b", "bert_x"};
  const FoldAssignment a = assign_folds(names, {5, 5, 4}, 2, 0);
  EXPECT_EQ(a.rule, FoldBy::Family);
  EXPECT_EQ(a.folds, (std::vector<int>{0, 0, 1}));  // the largest family to the first fold
}

// A tree whose names all start with the same word (a user's own dumps, the featurizer's
// output): one family cannot fill 5 folds, so auto deals graphs, balanced, and says why;
// fold_by=family refuses instead of leaving folds empty.
TEST(Folds, OneFamilyFallsBackToGraphs) {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  for (int i = 0; i < 20; ++i) names.push_back("fusion_" + std::to_string(i)), sizes.push_back(10 + i % 3);
  const FoldAssignment a = assign_folds(names, sizes, 5, 0);
  EXPECT_EQ(a.rule, FoldBy::Graph);
  EXPECT_NE(a.note.find("1 model family for 5 folds"), std::string::npos) << a.note;
  std::vector<int> count(5, 0);
  for (int f : a.folds) ++count[f];
  for (int c : count) EXPECT_EQ(c, 4);
  EXPECT_THROW(assign_folds(names, sizes, 5, 0, FoldBy::Family), Error);
  EXPECT_EQ(assign_folds(names, sizes, 5, 0, FoldBy::Graph).folds, a.folds);
}

// Enough families, but one holds most of the data: family folds would leave some nearly
// empty, so auto deals graphs; fold_by=family keeps the families as asked.
TEST(Folds, DominantFamilyFallsBackToGraphs) {
  std::vector<std::string> names = {"big_a", "big_b", "big_c", "big_d", "big_e", "big_f", "x_1", "y_1", "z_1"};
  std::vector<int64_t> sizes = {100, 100, 100, 100, 100, 100, 10, 10, 10};
  const FoldAssignment a = assign_folds(names, sizes, 3, 0);
  EXPECT_EQ(a.rule, FoldBy::Graph);
  EXPECT_NE(a.note.find("lightest family fold"), std::string::npos) << a.note;
  std::vector<int64_t> load(3, 0);
  for (size_t i = 0; i < names.size(); ++i) load[a.folds[i]] += sizes[i];
  EXPECT_EQ(*std::min_element(load.begin(), load.end()), 210);
  const FoldAssignment f = assign_folds(names, sizes, 3, 0, FoldBy::Family);
  EXPECT_EQ(f.rule, FoldBy::Family);
  EXPECT_EQ(f.folds[0], f.folds[5]);
}

TEST(Folds, FewerGraphsThanFoldsSaysWhichStayEmpty) {
  const FoldAssignment a = assign_folds({"a1", "b1"}, {3, 4}, 4, 0);
  EXPECT_EQ(a.rule, FoldBy::Graph);
  EXPECT_NE(a.note.find("2 fold(s) hold no graph"), std::string::npos) << a.note;
  EXPECT_NE(a.folds[0], a.folds[1]);
  EXPECT_EQ(parse_fold_by("graph"), FoldBy::Graph);
  EXPECT_THROW(parse_fold_by("families"), Error);
}

TEST(Folds, Errors) {
  EXPECT_THROW(assign_folds({"a"}, {1}, 0, 0), Error);
  EXPECT_THROW(assign_folds({"a", "b"}, {1}, 2, 0), Error);
  EXPECT_THROW(assign_folds({"a"}, {-1}, 2, 0), Error);
  EXPECT_TRUE(assign_folds({}, {}, 3, 0).folds.empty());
}
