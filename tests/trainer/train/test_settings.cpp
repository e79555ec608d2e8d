// Training settings read from the config: the steps of an epoch (a one-pass epoch has a
// floor, the collection's own where its collections: section sets one; an explicit count
// wins), every collection's own values, the losses per kind and the default models.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/config/config.h"
#include "common/base/error.h"
#include "common/base/files.h"
#include "trainer/models/registry.h"
#include "trainer/train/settings.h"
#include "tests/test_util.h"

namespace tpuperf {
namespace {

constexpr int64_t kNoConfigCount = 0;  // the fold's train configs unknown: the floors uncapped
constexpr int64_t kManyGraphs = 50;     // more than one train graph: no lone-graph floor

TrainSettings settings_of(std::vector<std::string> overrides) {
  register_model_choices();
  register_loss_choices();
  overrides.push_back("data.processed_dir=/tmp/p");
  overrides.push_back("output.dir=/tmp/o");
  return TrainSettings(Config::load("", overrides));
}

// "collections.<id>.<key>=<value>", an override of one collection's section entry.
std::string entry(const std::string& id, const std::string& key, const std::string& value) {
  return "collections." + id + "." + key + "=" + value;
}

std::string error_of(const std::vector<std::string>& overrides) {
  try {
    settings_of(overrides);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TrainSettings, OnePassEpochsHaveAFloor) {
  const TrainSettings s = settings_of({});
  // 6 graphs, 8 per step: one step; the floor of layout:xla:random is the top-level 20.
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, kNoConfigCount, kManyGraphs), 20);
  EXPECT_EQ(s.steps_per_epoch("tile:xla", 5, kNoConfigCount, kManyGraphs), 300);          // the bench tree's tile fold
  EXPECT_EQ(s.steps_per_epoch("tile:xla", 714, kNoConfigCount, kManyGraphs), 714);        // the release's tile pass
  const TrainSettings floor5 = settings_of({"train.min_steps_per_epoch=5"});
  EXPECT_EQ(floor5.steps_per_epoch("layout:xla:random", 2, kNoConfigCount, kManyGraphs), 5);
  EXPECT_EQ(floor5.steps_per_epoch("layout:xla:random", 26, kNoConfigCount, kManyGraphs), 26);
  EXPECT_EQ(floor5.steps_per_epoch("layout:xla:default", 2, kNoConfigCount, kManyGraphs), 40);  // its own
  EXPECT_EQ(floor5.steps_per_epoch("tile:xla", 2, kNoConfigCount, kManyGraphs), 300);
  const TrainSettings tile7 = settings_of({entry("tile:xla", "train.min_steps_per_epoch", "7")});
  EXPECT_EQ(tile7.steps_per_epoch("tile:xla", 2, kNoConfigCount, kManyGraphs), 7);
  EXPECT_THROW(settings_of({"train.min_steps_per_epoch=0"}), Error);
  EXPECT_THROW(settings_of({entry("tile:xla", "train.min_steps_per_epoch", "0")}), Error);
}

// A floor stops at train.max_config_passes_per_epoch passes over the fold's configs: one
// real layout graph of 64 configs gets 6 steps of 8 x 16 (12 passes), not 20 (40 passes).
TEST(TrainSettings, FloorsStopAtSomePassesOverTheConfigs) {
  const TrainSettings s = settings_of({});  // 12 passes, 8 graphs a step, slates 16 / 32
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, 64, kManyGraphs), 6);     // ceil(12 x 64 / 128)
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:random", 1, 64, kManyGraphs), 6);     // caps its own floor too
  EXPECT_EQ(s.steps_per_epoch("tile:xla", 1, 405, kManyGraphs), 19);            // ceil(12 x 405 / 256)
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, 2000, kManyGraphs), 20);  // 188 > the floor: no cap
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, 1, kManyGraphs), 1);      // ceil(12 / 128)
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 9, 64, kManyGraphs), 9);     // a pass over the graphs wins
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, kNoConfigCount, kManyGraphs), 20);  // no cap
  const TrainSettings off = settings_of({"train.max_config_passes_per_epoch=0"});
  EXPECT_EQ(off.steps_per_epoch("layout:xla:random", 1, 64, kManyGraphs), 20);
  const TrainSettings half = settings_of({"train.max_config_passes_per_epoch=0.5"});
  EXPECT_EQ(half.steps_per_epoch("layout:xla:random", 1, 640, kManyGraphs), 3);  // ceil(0.5 x 640 / 128)
  const TrainSettings own_cap = settings_of({entry("layout:nlp:random", "train.max_config_passes_per_epoch", "0")});
  EXPECT_EQ(own_cap.steps_per_epoch("layout:nlp:random", 1, 64, kManyGraphs), 40);  // its floor uncapped
  EXPECT_EQ(own_cap.steps_per_epoch("layout:xla:random", 1, 64, kManyGraphs), 6);
  const TrainSettings set50 = settings_of({"train.steps_per_epoch=50"});
  EXPECT_EQ(set50.steps_per_epoch("layout:xla:random", 1, 64, kManyGraphs), 50);
  EXPECT_THROW(settings_of({"train.max_config_passes_per_epoch=-1"}), Error);
}

// A fold of one train graph (a graph tuned on its own configs) trains at least
// train.single_graph_min_config_passes_per_epoch (8) passes over its configs an epoch,
// within the 12-pass cap; folds of more graphs keep their floors (the bench tree's layout
// folds have 6-7 graphs of 10^4-10^5 configs).
TEST(TrainSettings, ALoneGraphTrainsSomePassesOverItsConfigs) {
  const TrainSettings s = settings_of({});  // 8 graphs a step, slates 16 / 32
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, 2000, 1), 125);  // ceil(8 x 2000 / 128)
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, 2000, 2), 20);   // two graphs: the floor alone
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, 60000, 7), 20);  // a bench-tree fold
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:default", 1, 702, 1), 44);   // ceil(8 x 702 / 128) > its floor 40
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:default", 1, 500, 1), 40);   // 32 is below its own floor
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, 64, 1), 6);      // the cap still applies
  EXPECT_EQ(s.steps_per_epoch("tile:xla", 1, 1602, 1), 76);            // its floor 300, capped: ceil(12 x 1602 / 256)
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, kNoConfigCount, 1), 20);
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 200, 2000, 1), 200);  // a pass over the graphs wins
  const TrainSettings off = settings_of({"train.single_graph_min_config_passes_per_epoch=0"});
  EXPECT_EQ(off.steps_per_epoch("layout:xla:random", 1, 2000, 1), 20);
  const TrainSettings above = settings_of({"train.single_graph_min_config_passes_per_epoch=20"});
  EXPECT_EQ(above.steps_per_epoch("layout:xla:random", 1, 2000, 1), 188);  // the cap: ceil(12 x 2000 / 128)
  EXPECT_THROW(settings_of({"train.single_graph_min_config_passes_per_epoch=-1"}), Error);
}

// The floors stop where a rank's epoch would process more than
// train.max_node_configs_per_epoch (10^8) node-configs: a fold of one 7,223-node graph of
// 20,000 configs on one rank (8 x 16 configs a step: 924,544 node-configs) plans 108
// steps, not 1,250; the Baselines bench's lone graphs (2,000 configs, 2 ranks) keep theirs.
TEST(TrainSettings, FloorsStopAtWhatARankCanProcessInAnEpoch) {
  const TrainSettings s = settings_of({});
  const double big = 7223.0 * 128;  // one rank's node-configs a step
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, 20000, 1), 1250);
  EXPECT_EQ(s.steps_per_epoch_by_cost("layout:xla:random", 1, 20000, 1, big), 108);  // floor(1e8 / 924,544)
  EXPECT_EQ(s.steps_per_epoch_by_cost("layout:xla:random", 1, 2000, 1, big / 2), 125);  // 2 ranks: not cut
  EXPECT_EQ(s.steps_per_epoch_by_cost("layout:xla:random", 300, 20000, 1, big), 300);  // a pass over the graphs wins
  EXPECT_EQ(s.steps_per_epoch_by_cost("layout:xla:random", 1, 20000, 1, 1e9), 1);      // at least one step
  EXPECT_EQ(s.steps_per_epoch_by_cost("layout:xla:random", 1, 20000, 1, 0.0), 1250);   // cost unknown: uncapped
  const TrainSettings off = settings_of({"train.max_node_configs_per_epoch=0"});
  EXPECT_EQ(off.steps_per_epoch_by_cost("layout:xla:random", 1, 20000, 1, big), 1250);
  const TrainSettings set = settings_of({"train.steps_per_epoch=500"});
  EXPECT_EQ(set.steps_per_epoch_by_cost("layout:xla:random", 1, 20000, 1, big), 500);  // set steps are kept
  const TrainSettings own = settings_of({entry("layout:xla:random", "train.max_node_configs_per_epoch", "2e8")});
  EXPECT_EQ(own.steps_per_epoch_by_cost("layout:xla:random", 1, 20000, 1, big), 216);
  EXPECT_THROW(settings_of({"train.max_node_configs_per_epoch=-1"}), Error);
}

// The default collections: section gives tile:xla, the nlp collections and xla:default a
// floor of their own; an entry replaces it, null removes it (the top-level floor again).
TEST(TrainSettings, ACollectionsOwnFloorReplacesTheTopLevelOne) {
  const TrainSettings s = settings_of({});
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:default", 1, kNoConfigCount, kManyGraphs), 40);
  EXPECT_EQ(s.steps_per_epoch("layout:xla:default", 1, kNoConfigCount, kManyGraphs), 40);
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:random", 1, kNoConfigCount, kManyGraphs), 40);
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:random", 57, kNoConfigCount, kManyGraphs), 57);  // a longer pass still wins
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, kNoConfigCount, kManyGraphs), 20);
  const TrainSettings own = settings_of({entry("tile:xla", "train.min_steps_per_epoch", "3"),
                                         entry("layout:xla:default", "train.min_steps_per_epoch", "9"),
                                         entry("layout:nlp:default", "train.min_steps_per_epoch", "null"),
                                         "train.min_steps_per_epoch=5"});
  EXPECT_EQ(own.steps_per_epoch("tile:xla", 1, kNoConfigCount, kManyGraphs), 3);
  EXPECT_EQ(own.steps_per_epoch("layout:xla:default", 1, kNoConfigCount, kManyGraphs), 9);
  EXPECT_EQ(own.steps_per_epoch("layout:nlp:default", 1, kNoConfigCount, kManyGraphs), 5);  // removed: the top level's
  EXPECT_EQ(own.steps_per_epoch("layout:nlp:random", 1, kNoConfigCount, kManyGraphs), 40);  // untouched
  const TrainSettings set4 = settings_of({entry("layout:nlp:default", "train.steps_per_epoch", "4")});
  EXPECT_EQ(set4.steps_per_epoch("layout:nlp:default", 1, kNoConfigCount, kManyGraphs), 4);
  EXPECT_EQ(set4.steps_per_epoch("layout:nlp:random", 1, kNoConfigCount, kManyGraphs), 40);
}

// By default layout:xla:random trains at dropout 0.3, the other layout collections at the
// kind's 0.1; removing its entry gives it the kind's.
TEST(TrainSettings, LayoutDropoutPerCollection) {
  const TrainSettings s = settings_of({});
  EXPECT_DOUBLE_EQ(s.model_spec("layout:xla:random", 5).options.dropout, 0.3);
  EXPECT_DOUBLE_EQ(s.model_spec("layout:xla:default", 5).options.dropout, 0.1);
  EXPECT_DOUBLE_EQ(s.model_spec("layout:nlp:random", 5).options.dropout, 0.1);
  EXPECT_DOUBLE_EQ(s.model_spec("tile:xla", 5).options.dropout, 0.1);
  EXPECT_EQ(s.model_spec("layout:nlp:default", 5).num_node_feat, 5);
  EXPECT_DOUBLE_EQ(s.kind_model_spec(Kind::Layout, 5).options.dropout, 0.1);  // the top level's
  const TrainSettings none =
      settings_of({entry("layout:xla:random", "model.layout.dropout", "null"), "model.layout.dropout=0.2"});
  for (const char* c : {"layout:xla:random", "layout:nlp:default"})
    EXPECT_DOUBLE_EQ(none.model_spec(c, 5).options.dropout, 0.2) << c;
  const TrainSettings own = settings_of({entry("layout:nlp:random", "model.layout.dropout", "0")});
  EXPECT_DOUBLE_EQ(own.model_spec("layout:nlp:random", 5).options.dropout, 0.0);
  EXPECT_DOUBLE_EQ(own.model_spec("layout:xla:random", 5).options.dropout, 0.3);  // entries merge over the default
  EXPECT_NE(error_of({entry("layout:nlp:random", "model.layout.dropout", "0.95")})
                .find("key 'collections.layout:nlp:random.model.layout.dropout': value 0.95 is out of range [0, 0.9]"),
            std::string::npos);
  EXPECT_NE(error_of({entry("tile:xla", "model.layout.dropout", "0.2")})
                .find("key 'collections.tile:xla.model.layout.dropout': a tile collection does not read it"),
            std::string::npos);
}

// By default layout:xla:default and layout:nlp:random have no attention heads, the others
// the kind's 4. Heads that do not divide the collection's width are refused naming the
// section's entry.
TEST(TrainSettings, LayoutAttentionHeadsPerCollection) {
  const TrainSettings s = settings_of({});
  for (const char* c : {"layout:xla:default", "layout:nlp:random"})
    EXPECT_EQ(s.model_spec(c, 5).options.attention_heads, 0) << c;
  for (const char* c : {"layout:xla:random", "layout:nlp:default"})
    EXPECT_EQ(s.model_spec(c, 5).options.attention_heads, 4) << c;
  EXPECT_DOUBLE_EQ(s.model_spec("layout:xla:default", 5).options.dropout, 0.1);  // only the heads differ
  const TrainSettings own = settings_of({entry("layout:nlp:random", "model.layout.attention_heads", "8")});
  EXPECT_EQ(own.model_spec("layout:nlp:random", 5).options.attention_heads, 8);
  EXPECT_EQ(own.model_spec("layout:xla:default", 5).options.attention_heads, 0);
  const std::string bad = error_of({entry("layout:nlp:random", "model.layout.attention_heads", "3")});
  EXPECT_EQ(bad.find("--set: key 'collections.layout:nlp:random.model.layout.attention_heads': must divide "
                     "model.layout.hidden (64)"),
            0u)
      << bad;
  // A width of the collection's own that the top-level heads do not divide: the model's check
  // names the heads and the width it failed.
  const std::string narrow = error_of({entry("layout:xla:random", "model.layout.hidden", "6")});
  EXPECT_NE(narrow.find("key 'model.layout.attention_heads': must divide model.layout.hidden (6)"), std::string::npos)
      << narrow;
}

// Every train.* key a collection's folds read can be the collection's own: the settings of
// its folds (of()) read them through its section.
TEST(TrainSettings, ACollectionsSettingsReadItsSection) {
  const TrainSettings s = settings_of({entry("layout:nlp:default", "train.lr", "0.01"),
                                       entry("layout:nlp:default", "train.layout_slate", "8"),
                                       entry("tile:xla", "train.tile_loss", "listmle"),
                                       entry("tile:xla", "model.tile.hidden", "32")});
  EXPECT_DOUBLE_EQ(s.of("layout:nlp:default").lr, 0.01);
  EXPECT_DOUBLE_EQ(s.of("layout:nlp:random").lr, 0.001);
  EXPECT_DOUBLE_EQ(s.lr, 0.001);
  EXPECT_EQ(s.of("layout:nlp:default").slate(Kind::Layout), 8);
  EXPECT_EQ(s.of("layout:xla:random").slate(Kind::Layout), 16);
  EXPECT_EQ(s.of("tile:xla").loss(Kind::Tile).name, "listmle");
  EXPECT_EQ(s.loss(Kind::Tile).name, "hinge");
  EXPECT_EQ(s.model_spec("tile:xla", 3).options.hidden, 32);
  EXPECT_EQ(s.tile_model.options.hidden, 64);
  // A collection's settings answer for their own collection (fold training reads them so).
  const TrainSettings& nlp = s.of("layout:nlp:default");
  EXPECT_EQ(&nlp.of("layout:nlp:default"), &nlp);
  EXPECT_EQ(nlp.steps_per_epoch("layout:nlp:default", 1, kNoConfigCount, kManyGraphs), 40);
  EXPECT_THROW(nlp.of("tile:xla"), Error);
  EXPECT_NE(error_of({entry("tile:xla", "train.threads_per_rank", "2")}).find("is one per process"), std::string::npos);
}

// By default tile:xla trains without weight averaging, the layout collections at 0.99.
TEST(TrainSettings, WeightAveragingPerCollection) {
  const TrainSettings s = settings_of({});
  EXPECT_DOUBLE_EQ(s.ema_decay_of("tile:xla"), 0.0);
  for (const char* c : {"layout:xla:random", "layout:xla:default", "layout:nlp:random", "layout:nlp:default"})
    EXPECT_DOUBLE_EQ(s.ema_decay_of(c), 0.99) << c;
  const TrainSettings own = settings_of({entry("layout:nlp:random", "train.ema_decay", "0.9"),
                                         entry("tile:xla", "train.ema_decay", "null"), "train.ema_decay=0.5"});
  EXPECT_DOUBLE_EQ(own.ema_decay_of("layout:nlp:random"), 0.9);
  EXPECT_DOUBLE_EQ(own.ema_decay_of("tile:xla"), 0.5);  // its entry removed
  EXPECT_DOUBLE_EQ(own.ema_decay_of("layout:xla:random"), 0.5);
  // Errors about a collection's averaging name the key its decay came from.
  EXPECT_EQ(s.ema_decay_key_of("tile:xla"), "collections.tile:xla.train.ema_decay");
  EXPECT_EQ(s.ema_decay_key_of("layout:xla:random"), "train.ema_decay");
  EXPECT_EQ(own.ema_decay_key_of("layout:nlp:random"), "collections.layout:nlp:random.train.ema_decay");
  EXPECT_EQ(own.ema_decay_key_of("tile:xla"), "train.ema_decay");
  EXPECT_NE(error_of({entry("tile:xla", "train.ema_decay", "1")}).find("value 1 is out of range [0, 0.99999]"),
            std::string::npos);
}

// The settings' errors say where the bad value came from: the config file or --set.
TEST(TrainSettings, ErrorsNameTheFileOrTheOverride) {
  register_model_choices();
  register_loss_choices();
  const TempDir dir("settings");
  const std::string path = dir.file("run.yaml");
  write_file_atomic(path, "collections:\n  layout:nlp:default:\n    model.layout.attention_heads: 3\n");
  const auto error_of = [&](std::vector<std::string> overrides) -> std::string {
    try {
      const TrainSettings s(Config::load(path, overrides));
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string dirs[] = {"data.processed_dir=/tmp/p", "output.dir=/tmp/o"};
  const std::string heads = "collections.layout:nlp:default.model.layout.attention_heads";
  const std::string not_dividing = "': must divide model.layout.hidden (64)";
  EXPECT_EQ(error_of({dirs[0], dirs[1]}), path + ": key '" + heads + not_dividing);
  EXPECT_EQ(error_of({dirs[0], dirs[1], heads + "=6"}), "--set: key '" + heads + not_dividing);
  const std::string bad_heads = error_of({dirs[0], dirs[1], heads + "=null", "model.layout.attention_heads=3"});
  EXPECT_EQ(bad_heads.find("--set: key 'model.layout.attention_heads': "), 0u) << bad_heads;
  EXPECT_EQ(error_of({heads + "=null"}), "key 'data.processed_dir': is not set");  // the schema's default
  EXPECT_EQ(error_of({heads + "=null", dirs[0], dirs[1]}), "(no error)");
}

TEST(TrainSettings, LossPerKind) {
  const TrainSettings s = settings_of({});
  EXPECT_EQ(s.loss(Kind::Tile).name, "hinge");
  EXPECT_EQ(s.loss(Kind::Layout).name, "listmle");
  const TrainSettings gap = settings_of({"train.layout_loss=pairwise_gap", "train.hinge_margin=0.5"});
  EXPECT_EQ(gap.loss(Kind::Layout).name, "pairwise_gap");
  EXPECT_EQ(gap.loss(Kind::Tile).name, "hinge");
  EXPECT_EQ(gap.loss(Kind::Tile).margin, 0.5);
  // An unknown name is refused naming its key (the schema's choices, or find_loss).
  for (const char* key : {"train.tile_loss", "train.layout_loss"}) {
    try {
      settings_of({std::string(key) + "=mse"});
      FAIL() << key << "=mse was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

// train.eval_every scores after every k-th epoch and always after the last; a
// collection's section can set its own.
TEST(TrainSettings, EvaluationEveryFewEpochsAndAfterTheLast) {
  const auto scored = [](const TrainSettings& s) {
    std::vector<int64_t> out;
    for (int64_t e = 0; e < s.epochs; ++e)
      if (s.evaluates_after(e)) out.push_back(e + 1);
    return out;
  };
  EXPECT_EQ(scored(settings_of({"train.epochs=4"})), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(scored(settings_of({"train.epochs=5", "train.eval_every=2"})), (std::vector<int64_t>{2, 4, 5}));
  EXPECT_EQ(scored(settings_of({"train.epochs=3", "train.eval_every=10"})), (std::vector<int64_t>{3}));
  const TrainSettings own = settings_of({"train.epochs=6", entry("tile:xla", "train.eval_every", "3")});
  EXPECT_EQ(scored(own.of("tile:xla")), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(scored(own.of("layout:xla:random")).size(), 6u);
  EXPECT_THROW(settings_of({"train.eval_every=0"}), Error);
}

TEST(TrainSettings, ExplicitStepsWinOverThePassAndTheFloor) {
  const TrainSettings s = settings_of({"train.steps_per_epoch=3", entry("tile:xla", "train.steps_per_epoch", "7")});
  EXPECT_EQ(s.steps_per_epoch("tile:xla", 500, kNoConfigCount, kManyGraphs), 7);
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:default", 500, kNoConfigCount, kManyGraphs), 3);
}

TEST(TrainSettings, DefaultModelsAreTheShapeAwareOnes) {
  const TrainSettings s = settings_of({});
  EXPECT_EQ(s.tile_model.arch, "early_join_shape");
  EXPECT_EQ(s.layout_model.arch, "sage_shape_context");
  EXPECT_EQ(settings_of({"model.layout.arch=sage"}).layout_model.arch, "sage");
}

}  // namespace
}  // namespace tpuperf
