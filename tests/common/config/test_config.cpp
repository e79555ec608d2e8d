// The config loader: the schema's defaults, files and --set overrides, and the errors that
// name file, key and reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/config/config.h"
#include "common/base/error.h"
#include "tests/test_util.h"

using namespace tpuperf;
using ::testing::HasSubstr;

namespace {

std::string write_temp(const std::string& text) {
  char tmpl[] = "/tmp/tpuperf_config_XXXXXX";
  int fd = mkstemp(tmpl);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  return tmpl;
}

}  // namespace

TEST(Config, DefaultsComeFromTheSchema) {
  Config c = Config::load("", {});
  EXPECT_EQ(c.get_int("preprocess.prune_hops"), 1);
  EXPECT_EQ(c.get_string("preprocess.dedup"), "min");
  EXPECT_EQ(c.get_list("data.collections").size(), 5u);
  EXPECT_TRUE(c.get_bool("preprocess.log_columns"));
  EXPECT_DOUBLE_EQ(c.get_float("preprocess.shard_mb"), 256.0);
}

TEST(Config, FileValuesThenOverrides) {
  std::string path = write_temp(
      "data:\n  raw_dir: /x/npz\n  collections: [tile:xla]\npreprocess:\n  folds: 3\n");
  Config c = Config::load(path, {"preprocess.folds=4", "data.collections=[layout:nlp:random, tile:xla]"});
  EXPECT_EQ(c.get_path("data.raw_dir"), "/x/npz");
  EXPECT_EQ(c.get_int("preprocess.folds"), 4);
  EXPECT_EQ(c.get_list("data.collections"), (std::vector<std::string>{"layout:nlp:random", "tile:xla"}));
  std::remove(path.c_str());
}

TEST(Config, UnknownKeyNamesTheFullPathAndFile) {
  std::string path = write_temp("preprocess:\n  prune_hopz: 2\n");
  std::string msg = error_of([&] { Config::load(path, {}); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("preprocess.prune_hopz"));
  EXPECT_THAT(msg, HasSubstr("unknown config key"));
  std::remove(path.c_str());
}

TEST(Config, UnknownSectionAndOverrideKeyAreErrors) {
  EXPECT_THAT(error_of([] { Config::load("", {"trian.epochs=3"}); }), HasSubstr("trian.epochs"));
  EXPECT_THAT(error_of([] { Config::load("", {"preprocess=3"}); }), HasSubstr("is a section"));
  EXPECT_THAT(error_of([] { Config::load("", {"nokeyvalue"}); }), HasSubstr("KEY=VALUE"));
}

TEST(Config, TypesRangesAndChoicesAreChecked) {
  EXPECT_THAT(error_of([] { Config::load("", {"preprocess.folds=abc"}); }),
              HasSubstr("expected an integer"));
  EXPECT_THAT(error_of([] { Config::load("", {"preprocess.folds=0"}); }), HasSubstr("out of range"));
  EXPECT_THAT(error_of([] { Config::load("", {"preprocess.prune_hops=-2"}); }),
              HasSubstr("out of range"));
  EXPECT_THAT(error_of([] { Config::load("", {"preprocess.dedup=median"}); }),
              HasSubstr("not one of: min, mean, first"));
  EXPECT_THAT(error_of([] { Config::load("", {"data.collections=[tile:tpu]"}); }),
              HasSubstr("tile:tpu"));
  EXPECT_THAT(error_of([] { Config::load("", {"preprocess.log_columns=maybe"}); }),
              HasSubstr("true or false"));
  EXPECT_THAT(error_of([] { Config::load("", {"preprocess.shard_mb=[1,2]"}); }),
              HasSubstr("single value"));
}

// What an Int key takes, also for numbers a key holds inside list entries.
TEST(Config, IntegersParseAsAnIntKeysValuesDo) {
  const ConfigKey& folds = config_key("preprocess.folds");  // 1..64
  EXPECT_EQ(parse_config_int("7", folds), 7);
  EXPECT_EQ(parse_config_int("64", folds), 64);
  EXPECT_THAT(error_of([&] { parse_config_int("65", folds); }), HasSubstr("out of range [1, 64]"));
  for (const char* bad : {"", "4x", "1.5", "3 ", "99999999999999999999"})
    EXPECT_THAT(error_of([&] { parse_config_int(bad, folds); }), HasSubstr("expected an integer")) << bad;
  EXPECT_THAT(error_of([&] { parse_config_int("0", folds); }), HasSubstr("preprocess.folds"));
  EXPECT_THAT(error_of([] { config_key("preprocess.no_such_key"); }), HasSubstr("preprocess.no_such_key"));
}

TEST(Config, NumbersParseAsAFloatKeysValuesDo) {
  const ConfigKey& dropout = config_key("model.layout.dropout");  // 0..0.9
  EXPECT_DOUBLE_EQ(parse_config_float("0.3", dropout), 0.3);
  EXPECT_DOUBLE_EQ(parse_config_float("9e-1", dropout), 0.9);
  EXPECT_THAT(error_of([&] { parse_config_float("0.95", dropout); }), HasSubstr("out of range [0, 0.9]"));
  for (const char* bad : {"", "0.3x", "nan", "inf", "0.3 "})
    EXPECT_THAT(error_of([&] { parse_config_float(bad, dropout); }), HasSubstr("expected a number")) << bad;
  EXPECT_THAT(error_of([&] { parse_config_float("-1", dropout); }), HasSubstr("model.layout.dropout"));
}

TEST(Config, KnowsWhichKeysTheFileAndOverridesGave) {
  const std::string path = write_temp("train:\n  lr: 0.002\n");
  const Config c = Config::load(path, {"train.epochs=3"});
  EXPECT_TRUE(c.given("train.lr"));
  EXPECT_TRUE(c.given("train.epochs"));
  EXPECT_FALSE(c.given("train.seed"));  // the schema's default
  EXPECT_EQ(c.origin("train.lr"), path);
  EXPECT_EQ(c.origin("train.epochs"), "--set");
  EXPECT_EQ(c.origin("train.seed"), "");
  EXPECT_EQ(Config::load(path, {"train.lr=0.1"}).origin("train.lr"), "--set");  // the override wins
  const std::string saved = write_temp("");
  c.save(saved);
  EXPECT_TRUE(Config::load(saved, {}).given("train.seed"));  // a saved config gives every key
}

TEST(Config, InvalidYamlNamesFileAndLine) {
  std::string path = write_temp("data:\n  raw_dir: [unclosed\n");
  std::string msg = error_of([&] { Config::load(path, {}); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("invalid YAML"));
  std::remove(path.c_str());
}

TEST(Config, MissingFileIsAClearError) {
  EXPECT_THAT(error_of([] { Config::load("/nonexistent/cfg.yaml", {}); }),
              HasSubstr("/nonexistent/cfg.yaml"));
}

TEST(Config, DumpReloadsToTheSameValues) {
  Config a = Config::load("", {"preprocess.folds=7", "data.raw_dir=/d i r/x", "preprocess.shard_mb=0.5"});
  std::string path = write_temp(a.dump());
  Config b = Config::load(path, {});
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_EQ(b.get_int("preprocess.folds"), 7);
  EXPECT_EQ(b.get_path("data.raw_dir"), "/d i r/x");
  EXPECT_DOUBLE_EQ(b.get_float("preprocess.shard_mb"), 0.5);
  std::remove(path.c_str());
}

TEST(Config, DigestCoversOnlyTheSelectedPrefixes) {
  Config a = Config::load("", {});
  Config b = Config::load("", {"train.epochs=99"});
  Config c = Config::load("", {"preprocess.prune_hops=2"});
  EXPECT_EQ(a.digest({"preprocess."}), b.digest({"preprocess."}));
  EXPECT_NE(a.digest({"preprocess."}), c.digest({"preprocess."}));
  EXPECT_EQ(a.dump({"preprocess."}).find("train"), std::string::npos);
}

TEST(Config, HomeIsExpanded) {
  setenv("HOME", "/home/tester", 1);
  Config c = Config::load("", {"data.raw_dir=~/data/npz"});
  EXPECT_EQ(c.get_path("data.raw_dir"), "/home/tester/data/npz");
}

TEST(Config, ShippedConfigsLoad) {
  for (const char* name : {"demo.yaml", "tpugraphs.yaml"}) {
    Config c = Config::load(std::string(TPUPERF_SOURCE_DIR) + "/configs/" + name, {});
    EXPECT_FALSE(c.get_path("data.raw_dir").empty()) << name;
  }
}
