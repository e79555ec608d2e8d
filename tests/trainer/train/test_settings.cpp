// Training settings read from the config: the steps of an epoch (a one-pass epoch has a
// floor per collection, else per kind; an explicit count wins), the losses per kind and
// the default models.
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

// Each (list, why): `key`=list is refused with an Error naming the key and saying why.
void expect_list_refused(const std::string& key, const std::vector<std::pair<std::string, std::string>>& bad) {
  for (const auto& [list, why] : bad) {
    try {
      settings_of({key + "=" + list});
      ADD_FAILURE() << key << "=" << list << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

TEST(TrainSettings, OnePassEpochsHaveAFloorPerKind) {
  const TrainSettings s = settings_of({"train.min_steps_per_epoch_by_collection=[]"});
  // 6 graphs, 8 per step: one step.
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:random", 1, kNoConfigCount, kManyGraphs), 20);
  EXPECT_EQ(s.steps_per_epoch("tile:xla", 5, kNoConfigCount, kManyGraphs), 60);           // the bench tree's tile fold
  EXPECT_EQ(s.steps_per_epoch("tile:xla", 714, kNoConfigCount, kManyGraphs), 714);        // the release's tile pass
  const TrainSettings floor5 =
      settings_of({"train.layout_min_steps_per_epoch=5", "train.min_steps_per_epoch_by_collection=[]"});
  EXPECT_EQ(floor5.steps_per_epoch("layout:xla:default", 2, kNoConfigCount, kManyGraphs), 5);
  EXPECT_EQ(floor5.steps_per_epoch("layout:xla:default", 26, kNoConfigCount, kManyGraphs), 26);
  EXPECT_EQ(floor5.steps_per_epoch("tile:xla", 2, kNoConfigCount, kManyGraphs), 60);
  const TrainSettings tile7 = settings_of({"train.tile_min_steps_per_epoch=7"});
  EXPECT_EQ(tile7.steps_per_epoch("tile:xla", 2, kNoConfigCount, kManyGraphs), 7);
  EXPECT_THROW(settings_of({"train.layout_min_steps_per_epoch=0"}), Error);
  EXPECT_THROW(settings_of({"train.tile_min_steps_per_epoch=0"}), Error);
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
  const TrainSettings set50 = settings_of({"train.layout_steps_per_epoch=50"});
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
  EXPECT_EQ(s.steps_per_epoch("tile:xla", 1, 1602, 1), 60);            // ceil(8 x 1602 / 256) = 51
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, kNoConfigCount, 1), 20);
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 200, 2000, 1), 200);  // a pass over the graphs wins
  const TrainSettings off = settings_of({"train.single_graph_min_config_passes_per_epoch=0"});
  EXPECT_EQ(off.steps_per_epoch("layout:xla:random", 1, 2000, 1), 20);
  const TrainSettings above = settings_of({"train.single_graph_min_config_passes_per_epoch=20"});
  EXPECT_EQ(above.steps_per_epoch("layout:xla:random", 1, 2000, 1), 188);  // the cap: ceil(12 x 2000 / 128)
  EXPECT_THROW(settings_of({"train.single_graph_min_config_passes_per_epoch=-1"}), Error);
}

TEST(TrainSettings, ACollectionsOwnFloorReplacesItsKinds) {
  const TrainSettings s = settings_of({});  // nlp:* and xla:default have a floor of 40 by default
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:default", 1, kNoConfigCount, kManyGraphs), 40);
  EXPECT_EQ(s.steps_per_epoch("layout:xla:default", 1, kNoConfigCount, kManyGraphs), 40);
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:random", 1, kNoConfigCount, kManyGraphs), 40);
  EXPECT_EQ(s.steps_per_epoch("layout:nlp:random", 57, kNoConfigCount, kManyGraphs), 57);  // a longer pass still wins
  EXPECT_EQ(s.steps_per_epoch("layout:xla:random", 1, kNoConfigCount, kManyGraphs), 20);
  const TrainSettings own = settings_of({"train.min_steps_per_epoch_by_collection=[tile:xla=3, layout:xla:default=9]",
                                         "train.layout_min_steps_per_epoch=5"});
  EXPECT_EQ(own.steps_per_epoch("tile:xla", 1, kNoConfigCount, kManyGraphs), 3);  // below the kind's floor too
  EXPECT_EQ(own.steps_per_epoch("layout:xla:default", 1, kNoConfigCount, kManyGraphs), 9);
  // The list replaced the default one.
  EXPECT_EQ(own.steps_per_epoch("layout:nlp:default", 1, kNoConfigCount, kManyGraphs), 5);
  const TrainSettings set4 = settings_of({"train.layout_steps_per_epoch=4"});
  EXPECT_EQ(set4.steps_per_epoch("layout:nlp:default", 1, kNoConfigCount, kManyGraphs), 4);
}

TEST(TrainSettings, BadCollectionFloorsNameTheKeyAndTheEntry) {
  for (const char* bad : {"[layout:nlp:random]", "[layout:nlp:random=0]", "[layout:nlp:random=4x]",
                          "[layout:nlp:fast=40]", "[tile:xla=2, tile:xla=3]", "[tile:xla=99999999999]",
                          "[tile:xla=-3]"}) {
    try {
      settings_of({std::string("train.min_steps_per_epoch_by_collection=") + bad});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      const std::string what = e.what(), key = "train.min_steps_per_epoch_by_collection";
      EXPECT_NE(what.find(key), std::string::npos) << what;
      EXPECT_EQ(what.find(key), what.rfind(key)) << what;  // named once
      const std::string entry = std::string(bad).substr(1, std::string(bad).find_first_of(",]") - 1);
      EXPECT_NE(what.find(entry.substr(0, entry.find('='))), std::string::npos) << what;
    }
  }
  // Steps are bounded as the kinds' floors are, with the Int keys' messages.
  const auto floors = [](const std::string& list) {
    return settings_of({"train.min_steps_per_epoch_by_collection=" + list});
  };
  EXPECT_EQ(floors("[tile:xla=1000000000]").steps_per_epoch("tile:xla", 1, kNoConfigCount, kManyGraphs), 1000000000);
  for (const char* bad : {"[tile:xla=1000000001]", "[tile:xla=-3]"}) {
    try {
      floors(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of range [1, 1000000000]"), std::string::npos) << e.what();
    }
  }
  try {
    floors("[tile:xla=4x]");
    ADD_FAILURE() << "4x was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in 'tile:xla=4x': expected an integer"), std::string::npos) << e.what();
  }
  try {
    floors("[tile:xla]");
    ADD_FAILURE() << "an entry without steps was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected collection=steps, got 'tile:xla'"), std::string::npos) << e.what();
  }
  const auto spaced = settings_of({"train.min_steps_per_epoch_by_collection=[tile:xla = 7]"});
  EXPECT_EQ(spaced.steps_per_epoch("tile:xla", 1, kNoConfigCount, kManyGraphs), 7);
}

// model.layout.dropout_by_collection replaces model.layout.dropout for the collections it
// names: by default layout:xla:random trains at 0.3, the other layout collections at the
// kind's 0.1; [] gives every collection the kind's.
TEST(TrainSettings, LayoutDropoutPerCollection) {
  const TrainSettings s = settings_of({});
  EXPECT_DOUBLE_EQ(s.model_spec("layout:xla:random", 5).options.dropout, 0.3);
  EXPECT_DOUBLE_EQ(s.model_spec("layout:xla:default", 5).options.dropout, 0.1);
  EXPECT_DOUBLE_EQ(s.model_spec("layout:nlp:random", 5).options.dropout, 0.1);
  EXPECT_DOUBLE_EQ(s.model_spec("tile:xla", 5).options.dropout, 0.1);
  EXPECT_EQ(s.model_spec("layout:nlp:default", 5).num_node_feat, 5);
  const TrainSettings none = settings_of({"model.layout.dropout_by_collection=[]", "model.layout.dropout=0.2"});
  for (const char* c : {"layout:xla:random", "layout:nlp:default"})
    EXPECT_DOUBLE_EQ(none.model_spec(c, 5).options.dropout, 0.2) << c;
  const TrainSettings own = settings_of({"model.layout.dropout_by_collection=[layout:nlp:random = 0]"});
  EXPECT_DOUBLE_EQ(own.model_spec("layout:nlp:random", 5).options.dropout, 0.0);
  EXPECT_DOUBLE_EQ(own.model_spec("layout:xla:random", 5).options.dropout, 0.1);  // the list replaced the default
  expect_list_refused("model.layout.dropout_by_collection",
                      {{"[layout:nlp:random]", "expected collection=dropout, got 'layout:nlp:random'"},
                       {"[layout:nlp:random=0.95]", "in 'layout:nlp:random=0.95': value 0.95 is out of range [0, 0.9]"},
                       {"[layout:nlp:random=high]", "expected a number"},
                       {"[layout:xla:random=0.2, layout:xla:random=0.3]", "given twice"},
                       {"[tile:xla=0.2]", "tile:xla is not a layout collection"}});
}

// model.layout.attention_heads_by_collection replaces model.layout.attention_heads for the
// collections it names: by default layout:xla:default and layout:nlp:random have none, the
// others the kind's 4.
TEST(TrainSettings, LayoutAttentionHeadsPerCollection) {
  const TrainSettings s = settings_of({});
  for (const char* c : {"layout:xla:default", "layout:nlp:random"})
    EXPECT_EQ(s.model_spec(c, 5).options.attention_heads, 0) << c;
  for (const char* c : {"layout:xla:random", "layout:nlp:default"})
    EXPECT_EQ(s.model_spec(c, 5).options.attention_heads, 4) << c;
  EXPECT_DOUBLE_EQ(s.model_spec("layout:xla:default", 5).options.dropout, 0.1);  // only the heads differ
  const TrainSettings own = settings_of({"model.layout.attention_heads_by_collection=[layout:nlp:random=8]"});
  EXPECT_EQ(own.model_spec("layout:nlp:random", 5).options.attention_heads, 8);
  EXPECT_EQ(own.model_spec("layout:xla:default", 5).options.attention_heads, 4);  // the list replaced the default
  expect_list_refused("model.layout.attention_heads_by_collection",
                      {{"[layout:nlp:random=3]", "must divide model.layout.hidden (64)"},
                       {"[layout:nlp:random=-1]", "out of range [0, 64]"},
                       {"[tile:xla=0]", "tile:xla is not a layout collection"}});
}

// train.ema_decay_by_collection replaces train.ema_decay for the collections it names, of
// either kind: by default tile:xla trains without averaging, the layout collections at 0.99.
TEST(TrainSettings, WeightAveragingPerCollection) {
  const TrainSettings s = settings_of({});
  EXPECT_DOUBLE_EQ(s.ema_decay_of("tile:xla"), 0.0);
  for (const char* c : {"layout:xla:random", "layout:xla:default", "layout:nlp:random", "layout:nlp:default"})
    EXPECT_DOUBLE_EQ(s.ema_decay_of(c), 0.99) << c;
  const TrainSettings own =
      settings_of({"train.ema_decay_by_collection=[layout:nlp:random=0.9]", "train.ema_decay=0.5"});
  EXPECT_DOUBLE_EQ(own.ema_decay_of("layout:nlp:random"), 0.9);
  EXPECT_DOUBLE_EQ(own.ema_decay_of("tile:xla"), 0.5);  // the list replaced the default
  EXPECT_DOUBLE_EQ(own.ema_decay_of("layout:xla:random"), 0.5);
  // Errors about a collection's averaging name the key its decay came from.
  EXPECT_EQ(s.ema_decay_key_of("tile:xla"), "train.ema_decay_by_collection");
  EXPECT_EQ(s.ema_decay_key_of("layout:xla:random"), "train.ema_decay");
  EXPECT_EQ(own.ema_decay_key_of("layout:nlp:random"), "train.ema_decay_by_collection");
  EXPECT_EQ(own.ema_decay_key_of("tile:xla"), "train.ema_decay");
  expect_list_refused("train.ema_decay_by_collection",
                      {{"[tile:xla]", "expected collection=decay, got 'tile:xla'"},
                       {"[tile:xla=1]", "in 'tile:xla=1': value 1 is out of range [0, 0.99999]"},
                       {"[tile:xla=0, tile:xla=0.5]", "given twice"},
                       {"[tile:abc=0]", "tile:abc"}});
}

// The settings' errors say where the bad value came from: the config file or --set.
TEST(TrainSettings, ErrorsNameTheFileOrTheOverride) {
  register_model_choices();
  register_loss_choices();
  const TempDir dir("settings");
  const std::string path = dir.file("run.yaml");
  write_file_atomic(path, "model:\n  layout:\n    attention_heads_by_collection: [tile:xla=0]\n");
  const auto error_of = [&](std::vector<std::string> overrides) -> std::string {
    try {
      const TrainSettings s(Config::load(path, overrides));
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string dirs[] = {"data.processed_dir=/tmp/p", "output.dir=/tmp/o"};
  const std::string heads = "model.layout.attention_heads_by_collection";
  const std::string not_layout = "': tile:xla is not a layout collection";
  EXPECT_EQ(error_of({dirs[0], dirs[1]}), path + ": key '" + heads + not_layout);
  EXPECT_EQ(error_of({dirs[0], dirs[1], heads + "=[tile:xla=1]"}), "--set: key '" + heads + not_layout);
  const std::string bad_heads = error_of({dirs[0], dirs[1], heads + "=[]", "model.layout.attention_heads=3"});
  EXPECT_EQ(bad_heads.find("--set: key 'model.layout.attention_heads': "), 0u) << bad_heads;
  EXPECT_EQ(error_of({heads + "=[]"}), "key 'data.processed_dir': is not set");  // the schema's default
  EXPECT_EQ(error_of({heads + "=[]", dirs[0], dirs[1]}), "(no error)");
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

TEST(TrainSettings, ExplicitStepsWinOverThePassAndTheFloor) {
  const TrainSettings s = settings_of({"train.steps_per_epoch=3", "train.tile_steps_per_epoch=7"});
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
