// The command-line parser: options, flags, repeated --set, positionals, and the errors of
// bad usage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/cli/cli.h"
#include "tests/test_util.h"

using namespace tpuperf;
using ::testing::HasSubstr;

TEST(Cli, ParsesOptionsFlagsAndPositionals) {
  Cli cli("tool", "does things");
  cli.option("out", "DIR", "output").flag("json", "json output").positionals("FILE...", "inputs", 1);
  cli.config_options();
  const char* argv[] = {"tool", "--out=/o", "a.npz", "--json", "--set", "x.y=1", "--set", "z=2", "b.npz"};
  cli.parse(9, const_cast<char**>(argv));
  EXPECT_EQ(cli.get("out"), "/o");
  EXPECT_TRUE(cli.has("json"));
  EXPECT_EQ(cli.get_all("set"), (std::vector<std::string>{"x.y=1", "z=2"}));
  EXPECT_EQ(cli.args(), (std::vector<std::string>{"a.npz", "b.npz"}));
}

TEST(Cli, BadUsageIsAnError) {
  auto parse = [](std::vector<const char*> argv) {
    return error_of([&] {
      Cli cli("tool", "s");
      cli.option("out", "DIR", "output");
      cli.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
    });
  };
  EXPECT_THAT(parse({"tool", "--bogus"}), HasSubstr("unknown option --bogus"));
  EXPECT_THAT(parse({"tool", "--out"}), HasSubstr("needs a value DIR"));
  EXPECT_THAT(parse({"tool", "--out", "a", "--out", "b"}), HasSubstr("given twice"));
  EXPECT_THAT(parse({"tool", "stray"}), HasSubstr("unexpected argument 'stray'"));
}
