// The command line's outcomes (common/cli/): the checked number parsers every tool uses,
// --help and bad options as results rather than exits, and how run_tool / run_mpi_tool
// act on them (printed once, by the process its launcher numbered 0).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/cli/cli.h"
#include "common/cli/numbers.h"
#include "common/cli/tool_main.h"
#include "common/mpi/mpi_env.h"
#include "tests/test_util.h"

using namespace tpuperf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

// The message of the UsageError fn throws; a test failure when it throws none or an Error
// of another kind (which the tools would not print once under mpirun).
std::string usage_error_of(const std::function<void()>& fn) {
  return error_of([&] {
    try {
      fn();
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      ADD_FAILURE() << "not a UsageError: " << e.what();
      throw;
    }
  });
}

// argv for a tool called "tool" with the given arguments; keeps the strings alive.
struct Argv {
  explicit Argv(std::vector<std::string> args) : strings(std::move(args)) {
    strings.insert(strings.begin(), "tool");
    for (auto& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(strings.size()); }
  char** argv() { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

// The text of the HelpRequested that parsing args throws; nothing when it throws none.
std::optional<std::string> help_of(Cli& cli, std::vector<std::string> args) {
  Argv a(std::move(args));
  try {
    cli.parse(a.argc(), a.argv());
  } catch (const HelpRequested& help) {
    return help.text;
  }
  return std::nullopt;
}

Cli demo_cli() {
  Cli cli("tool", "does things");
  cli.option("out", "DIR", "output").option("top", "K", "best K").option("fraction", "F", "share");
  cli.positionals("FILE...", "inputs", 1);
  return cli;
}

// Sets the launcher's rank variables for one test and restores them afterwards.
class LauncherEnv {
 public:
  LauncherEnv() {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      if (v) saved_[name] = v;
      ::unsetenv(name);
    }
  }
  ~LauncherEnv() {
    for (const char* name : kNames) {
      auto it = saved_.find(name);
      if (it == saved_.end())
        ::unsetenv(name);
      else
        ::setenv(name, it->second.c_str(), 1);
    }
  }
  void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                           "SLURM_PROCID"};
  std::map<std::string, std::string> saved_;
};

int run_demo_tool(std::vector<std::string> args, bool* body_ran) {
  Argv a(std::move(args));
  // run_tool is a process's main and creates the logger, which may exist once: this test
  // process calls it several times.
  spdlog::drop("tpuperf");
  return run_tool("tool", a.argc(), a.argv(), [&](int argc, char** argv) {
    Cli cli = demo_cli();
    cli.parse(argc, argv);
    *body_ran = true;
    return kExitOk;
  });
}

}  // namespace

TEST(ParseInt, TakesWholeNumbersWithinRange) {
  EXPECT_EQ(parse_int("n", "5"), 5);
  EXPECT_EQ(parse_int("n", "-3"), -3);
  EXPECT_EQ(parse_int("n", "0", 0, 10), 0);
  EXPECT_EQ(parse_int("n", "10", 0, 10), 10);
  EXPECT_EQ(parse_int("n", "9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parse_int<uint64_t>("seed", "18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_int<int>("threads", "2147483647", 1), 2147483647);
}

TEST(ParseInt, RejectsAnythingButTheWholeNumber) {
  for (const char* text : {"5x", "x5", " 5", "5 ", "+5", "", "0x10", "1e3", "1.0", "--5", "5-"})
    EXPECT_EQ(usage_error_of([&] { parse_int("top", text); }),
              std::string("--top expects an integer, got '") + text + "'");
}

TEST(ParseInt, RejectsValuesOutsideTheRangeOrTheType) {
  EXPECT_EQ(usage_error_of([] { parse_int<uint64_t>("seed", "-1"); }),
            "--seed expects an integer >= 0, got '-1'");
  EXPECT_EQ(usage_error_of([] { parse_int<uint64_t>("seed", "5x"); }),
            "--seed expects an integer >= 0, got '5x'");
  EXPECT_EQ(usage_error_of([] { parse_int<uint64_t>("seed", "18446744073709551616"); }),
            "--seed expects an integer >= 0, got '18446744073709551616'");
  EXPECT_EQ(usage_error_of([] { parse_int("n", "9223372036854775808"); }),
            "--n expects an integer, got '9223372036854775808'");
  EXPECT_EQ(usage_error_of([] { parse_int<int>("threads", "2147483648", 1); }),
            "--threads expects an integer >= 1, got '2147483648'");
  EXPECT_EQ(usage_error_of([] { parse_int("top", "0", 1); }),
            "--top expects an integer >= 1, got '0'");
  EXPECT_EQ(usage_error_of([] { parse_int("folds", "65", 1, 64); }),
            "--folds expects an integer in [1, 64], got '65'");
  EXPECT_EQ(usage_error_of([] { parse_int<int64_t>("delta", "1", INT64_MIN, 0); }),
            "--delta expects an integer <= 0, got '1'");
}

TEST(ParseDouble, TakesFiniteDecimalNumbersWithinRange) {
  EXPECT_DOUBLE_EQ(parse_double("f", "0.5", 0, 1), 0.5);
  EXPECT_DOUBLE_EQ(parse_double("f", "1", 0, 1, Open::Min), 1.0);
  EXPECT_DOUBLE_EQ(parse_double("f", "1e-3", 0, 1, Open::Min), 0.001);
  EXPECT_DOUBLE_EQ(parse_double("f", "-2.5", -3, 0), -2.5);
  EXPECT_DOUBLE_EQ(parse_double("f", "0", 0, 1), 0.0);
}

TEST(ParseDouble, RejectsTextNonFiniteAndOutOfRange) {
  for (const char* text : {"0.5x", " 0.5", "+0.5", "", "nan", "inf", "-inf", "1,5", "0.5 "})
    EXPECT_EQ(usage_error_of([&] { parse_double("fraction", text, 0, 1, Open::Min); }),
              std::string("--fraction expects a number in (0, 1], got '") + text + "'");
  EXPECT_EQ(usage_error_of([] { parse_double("fraction", "0", 0, 1, Open::Min); }),
            "--fraction expects a number in (0, 1], got '0'");
  EXPECT_EQ(usage_error_of([] { parse_double("fraction", "1.5", 0, 1, Open::Min); }),
            "--fraction expects a number in (0, 1], got '1.5'");
  EXPECT_EQ(usage_error_of([] { parse_double("w", "-0.1", 0, 2); }),
            "--w expects a number in [0, 2], got '-0.1'");
  EXPECT_EQ(usage_error_of([] { parse_double("w", "1e999", 0, 2); }),
            "--w expects a number in [0, 2], got '1e999'");
}

TEST(CliParse, HelpIsAResultNotAnExit) {
  Cli cli = demo_cli();
  const auto text = help_of(cli, {"--help"});  // no FILE: help needs none
  ASSERT_TRUE(text.has_value()) << "--help did not throw HelpRequested";
  EXPECT_THAT(*text, StartsWith("usage: tool [options] FILE...\n"));
  EXPECT_THAT(*text, HasSubstr("--top K"));
  EXPECT_EQ(*text, cli.help());
}

TEST(CliParse, HelpConfigListsTheConfigKeys) {
  Cli cli("tool", "s");
  cli.config_options();
  const auto text = help_of(cli, {"--help-config"});
  ASSERT_TRUE(text.has_value()) << "--help-config did not throw HelpRequested";
  EXPECT_EQ(*text, config_help());
  EXPECT_THAT(*text, HasSubstr("preprocess.folds"));
}

TEST(CliParse, MistakesAreUsageErrorsNamingTheOption) {
  auto parse = [](std::vector<std::string> args) {
    return usage_error_of([&] {
      Cli cli = demo_cli();
      Argv a(std::move(args));
      cli.parse(a.argc(), a.argv());
    });
  };
  EXPECT_EQ(parse({"--bogus", "a"}), "unknown option --bogus (see tool --help)");
  EXPECT_EQ(parse({"a", "--out"}), "option --out needs a value DIR");
  EXPECT_EQ(parse({"a", "--help=1"}), "option --help takes no value");
  EXPECT_EQ(parse({}), "missing FILE... (see tool --help)");
  // An unknown option is reported even beside --help: the command as typed is wrong.
  EXPECT_EQ(parse({"--help", "--bogus"}), "unknown option --bogus (see tool --help)");
}

TEST(CliParse, NumbersAreReadByTheCheckedParsers) {
  Cli cli = demo_cli();
  Argv a({"--top", "7", "--fraction=0.25", "in.npz"});
  cli.parse(a.argc(), a.argv());
  EXPECT_EQ(cli.get_int<int64_t>("top", 0, 1), 7);
  EXPECT_DOUBLE_EQ(cli.get_double("fraction", 1, 0, 1, Open::Min), 0.25);
  EXPECT_EQ(cli.get_int<uint64_t>("out", 42), 42u);  // not given: the fallback

  Cli bad = demo_cli();
  Argv b({"--top", "5x", "--fraction", "0", "in.npz"});
  bad.parse(b.argc(), b.argv());
  EXPECT_EQ(usage_error_of([&] { bad.get_int<int64_t>("top", 0, 1); }),
            "--top expects an integer >= 1, got '5x'");
  EXPECT_EQ(usage_error_of([&] { bad.get_double("fraction", 1, 0, 1, Open::Min); }),
            "--fraction expects a number in (0, 1], got '0'");
}

TEST(CliParse, AsUsageCheckTurnsAnOptionChecksErrorIntoAUsageError) {
  EXPECT_EQ(usage_error_of([] { as_usage_check([] { throw Error("bad collection 'x'"); }); }),
            "bad collection 'x'");
  EXPECT_EQ(usage_error_of([] { as_usage_check([] { throw UsageError("already usage"); }); }),
            "already usage");
  bool ran = false;
  as_usage_check([&] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(ToolMain, LauncherRankComesFromTheLaunchersEnvironment) {
  LauncherEnv env;
  EXPECT_EQ(launcher_rank(), 0);
  env.set("SLURM_PROCID", "3");
  EXPECT_EQ(launcher_rank(), 3);
  env.set("PMIX_RANK", "2");
  EXPECT_EQ(launcher_rank(), 2);
  env.set("OMPI_COMM_WORLD_RANK", "1");
  EXPECT_EQ(launcher_rank(), 1);
  // A value that is not a rank does not count: the next variable decides.
  env.set("OMPI_COMM_WORLD_RANK", "x1");
  EXPECT_EQ(launcher_rank(), 2);
}

TEST(ToolMain, HelpPrintsOnceAndExitsZero) {
  LauncherEnv env;
  bool body_ran = false;
  testing::internal::CaptureStdout();
  EXPECT_EQ(run_demo_tool({"--help"}, &body_ran), kExitOk);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_FALSE(body_ran);
  EXPECT_EQ(out, demo_cli().help());

  env.set("OMPI_COMM_WORLD_RANK", "1");  // another rank of the same job stays silent
  testing::internal::CaptureStdout();
  EXPECT_EQ(run_demo_tool({"--help"}, &body_ran), kExitOk);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
}

TEST(ToolMain, BadOptionIsOneLineAndExitTwo) {
  LauncherEnv env;
  bool body_ran = false;
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_demo_tool({"--bogus", "a"}, &body_ran), kExitError);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "tool: error: unknown option --bogus (see tool --help)\n");
  EXPECT_FALSE(body_ran);
}

TEST(ToolMain, MpiToolParsesBeforeMpiStarts) {
  LauncherEnv env;
  int body_runs = 0;
  auto parse = [&](int argc, char** argv) -> MpiBody {
    Cli cli = demo_cli();
    cli.parse(argc, argv);
    return [&](const MpiContext&) { return ++body_runs; };
  };
  Argv help({"--help"});
  testing::internal::CaptureStdout();
  EXPECT_EQ(run_mpi_tool("tool", help.argc(), help.argv(), parse), kExitOk);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), demo_cli().help());

  Argv bad({"--top"});
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_mpi_tool("tool", bad.argc(), bad.argv(), parse), kExitError);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "tool: error: option --top needs a value K\n");

  // Neither started MPI (so neither can leave a rank without MPI_Finalize) nor ran the body.
  int initialized = 1;
  MPI_Initialized(&initialized);
  EXPECT_EQ(initialized, 0);
  EXPECT_EQ(body_runs, 0);
}
