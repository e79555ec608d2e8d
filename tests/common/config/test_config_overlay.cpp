// The collections: section of a config: one collection's own values of train.*, model.*
// and preprocess.prune_* keys, merged over the schema's default section, checked like
// top-level keys, overridden with --set, dumped so that the dump loads back, shown in
// --help-config; and the keys it replaced (*_by_collection, the kinds' step twins).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "common/config/config.h"
#include "tests/test_util.h"

using namespace tpuperf;
using ::testing::HasSubstr;

namespace {

// A config file in the working directory (the test's build directory), removed at the end.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text)
      : path_("test_config_overlay." + std::to_string(::getpid()) + "." + std::to_string(count_++) + ".yaml") {
    std::ofstream(path_) << text;
  }
  ~ConfigFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline int count_ = 0;
  std::string path_;
};

Config of_text(const std::string& text) {
  const ConfigFile file(text);
  return Config::load(file.path(), {});
}

std::string load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  const ConfigFile file(text);
  return error_of([&] { Config::load(file.path(), overrides); });
}

}  // namespace

TEST(ConfigOverlay, TheDefaultSectionGivesSomeCollectionsTheirOwnValues) {
  const Config c = Config::load("", {});
  EXPECT_DOUBLE_EQ(c.get_float("train.ema_decay"), 0.99);
  EXPECT_DOUBLE_EQ(c.for_collection("tile:xla").get_float("train.ema_decay"), 0.0);
  EXPECT_EQ(c.for_collection("tile:xla").get_int("train.min_steps_per_epoch"), 300);
  EXPECT_DOUBLE_EQ(c.for_collection("layout:xla:random").get_float("model.layout.dropout"), 0.3);
  EXPECT_EQ(c.for_collection("layout:xla:default").get_int("model.layout.attention_heads"), 0);
  EXPECT_EQ(c.for_collection("layout:nlp:default").get_int("train.min_steps_per_epoch"), 40);
  // A collection without an entry reads the top-level value.
  EXPECT_DOUBLE_EQ(c.for_collection("layout:nlp:default").get_float("model.layout.dropout"), 0.1);
  EXPECT_EQ(c.for_collection("layout:xla:random").get_int("train.min_steps_per_epoch"), 20);
  // Every default entry is valid where it is.
  for (const auto& d : collection_defaults())
    EXPECT_EQ(collection_key_problem(config_key(d.key), Collection::parse(d.collection).kind), "") << d.key;
}

TEST(ConfigOverlay, FileEntriesMergeOverTheDefaultSection) {
  const Config c = of_text(
      "model:\n  layout:\n    dropout: 0.2\n"
      "collections:\n"
      "  layout:nlp:random: {model.layout.dropout: 0.25, train: {lr: 0.01}}\n"
      "  layout:xla:random:\n    model:\n      layout:\n        hidden: 32\n"
      "  layout:xla:default: {model.layout.attention_heads: null}\n");
  const Config nlp = c.for_collection("layout:nlp:random");
  EXPECT_DOUBLE_EQ(nlp.get_float("model.layout.dropout"), 0.25);  // dotted
  EXPECT_DOUBLE_EQ(nlp.get_float("train.lr"), 0.01);               // nested under a dotted section
  EXPECT_EQ(nlp.get_int("model.layout.attention_heads"), 0);      // the default entry stays
  const Config xla = c.for_collection("layout:xla:random");
  EXPECT_EQ(xla.get_int("model.layout.hidden"), 32);
  EXPECT_DOUBLE_EQ(xla.get_float("model.layout.dropout"), 0.3);  // the default entry stays over the top level
  EXPECT_EQ(c.for_collection("layout:xla:default").get_int("model.layout.attention_heads"), 4);  // null: removed
  EXPECT_DOUBLE_EQ(c.for_collection("layout:nlp:default").get_float("model.layout.dropout"), 0.2);
  EXPECT_DOUBLE_EQ(c.get_float("train.lr"), 0.001);  // the top level is untouched
  // Ids are read as Collection::parse reads them; a collection mapped to null loses its section.
  const Config cleared = of_text("collections:\n  tile:xla: ~\n");
  EXPECT_DOUBLE_EQ(cleared.for_collection("tile:xla").get_float("train.ema_decay"), 0.99);
  EXPECT_EQ(cleared.for_collection("tile:xla").get_int("train.min_steps_per_epoch"), 20);
  EXPECT_DOUBLE_EQ(cleared.for_collection("layout:xla:random").get_float("model.layout.dropout"), 0.3);
  const Config none = of_text("collections: ~\n");
  EXPECT_TRUE(none.section_entries().empty());
}

TEST(ConfigOverlay, EntriesAreCheckedLikeTopLevelKeys) {
  const auto bad = [](const std::string& section) { return load_error("collections:\n" + section); };
  EXPECT_THAT(bad("  layout:xla:fast: {train.lr: 0.1}\n"), HasSubstr("key 'collections.layout:xla:fast'"));
  EXPECT_THAT(bad("  layout:xla:fast: {train.lr: 0.1}\n"), HasSubstr("layout:xla:fast"));
  EXPECT_THAT(bad("  tile:xla: {train.lrr: 0.1}\n"),
              HasSubstr("key 'collections.tile:xla.train.lrr': unknown config key"));
  EXPECT_THAT(bad("  tile:xla: {train.lr: 5}\n"),
              HasSubstr("key 'collections.tile:xla.train.lr': value 5 is out of range [1e-07, 1]"));
  EXPECT_THAT(bad("  tile:xla: {train.epochs: many}\n"),
              HasSubstr("key 'collections.tile:xla.train.epochs': expected an integer, got 'many'"));
  EXPECT_THAT(bad("  tile:xla: {data.raw_dir: /x}\n"),
              HasSubstr("key 'collections.tile:xla.data.raw_dir': is not per collection"));
  EXPECT_THAT(bad("  layout:nlp:random: {preprocess.folds: 3}\n"),
              HasSubstr("key 'collections.layout:nlp:random.preprocess.folds': is not per collection"));
  EXPECT_THAT(bad("  tile:xla: {preprocess.prune_hops: 2}\n"), HasSubstr("tile graphs are not pruned"));
  EXPECT_THAT(bad("  tile:xla: {model.layout.dropout: 0.2}\n"),
              HasSubstr("key 'collections.tile:xla.model.layout.dropout': a tile collection does not read it"));
  EXPECT_THAT(bad("  layout:nlp:random: {train.tile_slate: 8}\n"), HasSubstr("a layout collection does not read it"));
  EXPECT_THAT(bad("  tile:xla: {train.threads_per_rank: 2}\n"), HasSubstr("is one per process"));
  EXPECT_THAT(bad("  tile:xla: [train.lr]\n"), HasSubstr("collections.tile:xla': expected a map"));
  EXPECT_THAT(load_error("collections: [tile:xla]\n"), HasSubstr("key 'collections': expected a map"));
  // The file is named.
  const ConfigFile file("collections:\n  tile:xla: {train.lr: 5}\n");
  EXPECT_THAT(error_of([&] { Config::load(file.path(), {}); }), HasSubstr(file.path() + ": key 'collections.tile:xla"));
}

TEST(ConfigOverlay, SetOverridesEntriesSectionsAndRemovesWithNull) {
  const Config c = Config::load("", {"collections.layout:xla:random.model.layout.dropout=0.4",
                                     "collections.layout:nlp:default.train={lr: 0.02, epochs: 3}",
                                     "collections.tile:xla.train.ema_decay=null",
                                     "collections.layout:nlp:random=null"});
  EXPECT_DOUBLE_EQ(c.for_collection("layout:xla:random").get_float("model.layout.dropout"), 0.4);
  EXPECT_DOUBLE_EQ(c.for_collection("layout:nlp:default").get_float("train.lr"), 0.02);
  EXPECT_EQ(c.for_collection("layout:nlp:default").get_int("train.epochs"), 3);
  EXPECT_DOUBLE_EQ(c.for_collection("tile:xla").get_float("train.ema_decay"), 0.99);
  EXPECT_EQ(c.for_collection("tile:xla").get_int("train.min_steps_per_epoch"), 300);
  EXPECT_EQ(c.for_collection("layout:nlp:random").get_int("model.layout.attention_heads"), 4);
  // --set wins over the file, and the value's origin is --set (for errors about it).
  const ConfigFile file("collections:\n  layout:xla:random: {model.layout.dropout: 0.2, train.lr: 0.01}\n");
  const Config both = Config::load(file.path(), {"collections.layout:xla:random.model.layout.dropout=0.5"});
  const Config xla = both.for_collection("layout:xla:random");
  EXPECT_DOUBLE_EQ(xla.get_float("model.layout.dropout"), 0.5);
  EXPECT_EQ(xla.origin("model.layout.dropout"), "--set");
  EXPECT_EQ(xla.origin("train.lr"), file.path());
  EXPECT_EQ(xla.key_path("train.lr"), "collections.layout:xla:random.train.lr");
  EXPECT_EQ(xla.key_path("train.epochs"), "train.epochs");
  EXPECT_EQ(xla.origin("model.layout.hidden"), "");
  const Error located = xla.located(Error("too big", "", "train.lr"));
  EXPECT_STREQ(located.what(), (file.path() + ": key 'collections.layout:xla:random.train.lr': too big").c_str());
  EXPECT_THAT(error_of([] { Config::load("", {"collections.tile:xla.train.lr=7"}); }),
              HasSubstr("--set: key 'collections.tile:xla.train.lr': value 7 is out of range"));
  EXPECT_THAT(error_of([] { Config::load("", {"collections.tile:abc.train.lr=0.1"}); }),
              HasSubstr("--set: key 'collections.tile:abc'"));
  EXPECT_THAT(error_of([] { Config::load("", {"collections.tile:xla.model.tile.depth=3"}); }),
              HasSubstr("key 'collections.tile:xla.model.tile.depth': unknown config key"));
}

TEST(ConfigOverlay, TheDumpHoldsTheSectionsAndLoadsBack) {
  const Config c = Config::load("", {"collections.layout:xla:random.train.lr=0.01",
                                     "collections.tile:xla.train.ema_decay=null",
                                     "collections.layout:nlp:random.preprocess.prune_hops=2"});
  const std::string dump = c.dump();
  EXPECT_THAT(dump, HasSubstr("collections:\n  tile:xla:\n    train.ema_decay: null\n    train.min_steps_per_epoch: 300\n"));
  EXPECT_THAT(dump, HasSubstr("  layout:xla:random:\n    train.lr: 0.01"));
  const ConfigFile file(dump);
  const Config back = Config::load(file.path(), {});
  EXPECT_EQ(back.dump(), dump);
  for (const char* id : {"tile:xla", "layout:xla:random", "layout:nlp:random", "layout:nlp:default"})
    EXPECT_EQ(back.for_collection(id).dump(), c.for_collection(id).dump()) << id;
  EXPECT_EQ(back.section_entries(), c.section_entries());
  EXPECT_EQ(back.value_text("collections.layout:xla:random.train.lr"), "0.01");
  EXPECT_EQ(back.value_text("collections.tile:xla.train.ema_decay"), "null");
  // A prefix selects the section entries under it too: the preprocessing's digests of
  // preprocess.prune_hops see a collection's own hops.
  EXPECT_EQ(c.dump({"preprocess.prune_hops"}),
            "preprocess:\n  prune_hops: 1\ncollections:\n  layout:nlp:random:\n    preprocess.prune_hops: 2\n");
  EXPECT_NE(c.digest({"preprocess.prune_hops"}), Config::load("", {}).digest({"preprocess.prune_hops"}));
  EXPECT_EQ(c.digest({"preprocess.folds"}), Config::load("", {}).digest({"preprocess.folds"}));
  EXPECT_EQ(Config::load("", {}).dump({"data.", "preprocess."}).find("\ncollections:"), std::string::npos);
}

TEST(ConfigOverlay, HelpShowsTheSyntaxAndTheDefaults) {
  const std::string help = collections_help();
  EXPECT_THAT(help, HasSubstr("collections: {layout:xla:random: {model.layout.dropout: 0.3}}"));
  EXPECT_THAT(help, HasSubstr("--set collections.layout:xla:random.model.layout.dropout=0.3"));
  EXPECT_THAT(help, HasSubstr("null"));
  for (const auto& d : collection_defaults())
    EXPECT_THAT(help, HasSubstr(d.collection + ": " + d.key + ": " + d.value_yaml));
}

// A user's config that still uses a replaced key is refused with how to write it now.
TEST(ConfigOverlay, ReplacedKeysInAUsersConfigSayHowToWriteThem) {
  EXPECT_THAT(load_error("train:\n  ema_decay_by_collection: [layout:nlp:random=0.9]\n"),
              HasSubstr("key 'train.ema_decay_by_collection': was replaced by the collections: section (see "
                        "--help-config); write collections: {tile:xla: {train.ema_decay: null}, layout:nlp:random: "
                        "{train.ema_decay: 0.9}}"));
  EXPECT_THAT(load_error("model:\n  layout:\n    dropout_by_collection: [layout:xla:random=0.3]\n"),
              HasSubstr("write collections: {layout:xla:random: {model.layout.dropout: 0.3}}"));
  EXPECT_THAT(load_error("preprocess:\n  prune_hops_by_collection: []\n"),
              HasSubstr("this value is the default: remove it"));
  EXPECT_THAT(load_error("train:\n  tile_min_steps_per_epoch: 7\n"),
              HasSubstr("write collections: {tile:xla: {train.min_steps_per_epoch: 7}}"));
  EXPECT_THAT(load_error("train:\n  layout_min_steps_per_epoch: 7\n"),
              HasSubstr("'train.layout_min_steps_per_epoch': was renamed; write train.min_steps_per_epoch: 7"));
  EXPECT_THAT(error_of([] { Config::load("", {"train.min_steps_per_epoch_by_collection=[layout:nlp:random=9]"}); }),
              HasSubstr("--set: key 'train.min_steps_per_epoch_by_collection': was replaced"));
}

// Settings tpuperf recorded before the section (a run's train_config.yaml, a manifest's
// settings) read their replaced keys as what they meant.
TEST(ConfigOverlay, RecordedSettingsOfOlderVersionsTranslate) {
  // The old defaults, as an old train_config.yaml wrote them: the same effective values.
  const Config old = Config::from_text(
      "preprocess:\n  prune_hops: 1\n  prune_hops_by_collection: []\n"
      "train:\n  ema_decay: 0.99\n  ema_decay_by_collection: [tile:xla=0]\n  steps_per_epoch: 0\n"
      "  tile_steps_per_epoch: 0\n  layout_steps_per_epoch: 0\n  tile_min_steps_per_epoch: 60\n"
      "  layout_min_steps_per_epoch: 20\n"
      "  min_steps_per_epoch_by_collection: [layout:nlp:random=40, layout:nlp:default=40, layout:xla:default=40]\n"
      "model:\n  layout:\n    dropout: 0.1\n    dropout_by_collection: [layout:xla:random=0.3]\n"
      "    attention_heads: 4\n    attention_heads_by_collection: [layout:xla:default=0, layout:nlp:random=0]\n",
      "old/train_config.yaml");
  // The defaults of then; tile:xla's floor has been 300 since docs/experiments E36.
  const Config now = Config::load("", {"collections.tile:xla.train.min_steps_per_epoch=60"});
  for (const Collection& c : Collection::all())
    EXPECT_EQ(old.for_collection(c.id()).dump({"train.", "model.", "preprocess."}),
              now.for_collection(c.id()).dump({"train.", "model.", "preprocess."}))
        << c.id();
  // Other values: each entry as its collection's, the lists replacing the old defaults.
  const Config other = Config::from_text(
      "train:\n  tile_min_steps_per_epoch: 30\n  layout_steps_per_epoch: 12\n"
      "  ema_decay_by_collection: [layout:nlp:random=0.5]\n"
      "  min_steps_per_epoch_by_collection: [tile:xla=9]\n"
      "preprocess:\n  prune_hops_by_collection: [layout:xla:default = 2]\n",
      "old/settings.yaml");
  EXPECT_EQ(other.for_collection("tile:xla").get_int("train.min_steps_per_epoch"), 9);  // the list after the kind's
  EXPECT_EQ(other.for_collection("layout:nlp:default").get_int("train.min_steps_per_epoch"), 20);
  EXPECT_EQ(other.for_collection("layout:nlp:default").get_int("train.steps_per_epoch"), 12);
  EXPECT_EQ(other.for_collection("tile:xla").get_int("train.steps_per_epoch"), 0);
  EXPECT_DOUBLE_EQ(other.for_collection("tile:xla").get_float("train.ema_decay"), 0.99);
  EXPECT_DOUBLE_EQ(other.for_collection("layout:nlp:random").get_float("train.ema_decay"), 0.5);
  EXPECT_EQ(other.for_collection("layout:xla:default").get_int("preprocess.prune_hops"), 2);
  EXPECT_EQ(other.for_collection("layout:xla:random").get_int("preprocess.prune_hops"), 1);
  // A bad entry of a replaced list names the file, and the entry it became or the list.
  EXPECT_THAT(error_of([] { Config::from_text("train:\n  ema_decay_by_collection: [tile:xla=2]\n", "old.yaml"); }),
              HasSubstr("old.yaml: key 'collections.tile:xla.train.ema_decay': value 2 is out of range"));
  EXPECT_THAT(error_of([] { Config::from_text("train:\n  ema_decay_by_collection: [tile:abc=0]\n", "old.yaml"); }),
              HasSubstr("old.yaml: key 'train.ema_decay_by_collection': in 'tile:abc=0'"));
}
