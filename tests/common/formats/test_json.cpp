// common/formats/json.h: the writer's escaping and numbers, round trips through the parser, the
// layouts, the nesting limit and errors that name the offset; Python's json and PyYAML
// read what the writer writes as the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "common/base/error.h"
#include "common/formats/json.h"
#include "tests/test_util.h"

namespace tpuperf {
namespace {

std::string json_quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

std::string number(double v) {
  std::string out;
  append_json_number(out, v);
  return out;
}

std::string round_trip(const std::string& s) {
  const JsonValue v = parse_json(json_quoted(s), "test");
  EXPECT_EQ(v.type, JsonValue::Type::String);
  return v.text;
}

// The message of the Error that parsing text throws ("" if none).
std::string parse_error(const std::string& text, int max_depth = kJsonMaxDepth) {
  try {
    parse_json(text, "doc.json", max_depth);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Json, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_quoted("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(json_quoted("line\nnext\ttab"), R"("line\nnext\ttab")");
  EXPECT_EQ(json_quoted(std::string("\x00\x01\x1f\r\b\f", 6)), R"("\u0000\u0001\u001f\u000d\u0008\u000c")");
  EXPECT_EQ(json_quoted("del \x7f"), R"("del \u007f")");
  EXPECT_EQ(json_quoted("/ stays"), R"("/ stays")");
}

TEST(Json, EscapesWhatYamlReadsDifferently) {
  EXPECT_EQ(json_quoted("c1 \xc2\x85 \xc2\x80 \xc2\x9f"), R"("c1 \u0085 \u0080 \u009f")");
  EXPECT_EQ(json_quoted("ls \xe2\x80\xa8 ps \xe2\x80\xa9"), R"("ls \u2028 ps \u2029")");
}

TEST(Json, PassesOtherUtf8Through) {
  const std::string s = "caf\xc3\xa9 \xc2\xa0 \xe2\x80\x94 \xe6\x97\xa5 \xf0\x9f\x98\x80";
  EXPECT_EQ(json_quoted(s), "\"" + s + "\"");
}

TEST(Json, StringsRoundTrip) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (const std::string& s :
       {std::string(), std::string("plain"), all, std::string("\xe2\x80\xa8\xe2\x80\xa9\xc2\x85"),
        std::string("\xf0\x9f\x98\x80 emoji"), std::string("a\\u0041 not an escape")})
    EXPECT_EQ(round_trip(s), s);
}

TEST(Json, ParsesEscapesAndSurrogatePairs) {
  const JsonValue v = parse_json(R"("\u0041\/\b\f\n\r\t\"\\ \u00e9 \ud83d\ude00")", "t");
  EXPECT_EQ(v.text, "A/\b\f\n\r\t\"\\ \xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_NE(parse_error(R"("\ud83d alone")"), "");
  EXPECT_NE(parse_error(R"("\ude00 alone")"), "");
  EXPECT_NE(parse_error(R"("\ud83d\u0041")"), "");
}

TEST(Json, IntegersAtTheExtremes) {
  JsonWriter w;
  w.begin_array()
      .value(std::numeric_limits<int64_t>::min())
      .value(std::numeric_limits<int64_t>::max())
      .value(std::numeric_limits<uint64_t>::max())
      .value(uint8_t{200})
      .value(-1)
      .end_array();
  EXPECT_EQ(w.str(), "[-9223372036854775808, 9223372036854775807, 18446744073709551615, 200, -1]");
  const JsonValue v = parse_json(w.str(), "t");
  int64_t lo = 0, hi = 0;
  uint64_t u = 0;
  ASSERT_TRUE(json_to_int64(v.items[0], lo));
  ASSERT_TRUE(json_to_int64(v.items[1], hi));
  ASSERT_TRUE(json_to_uint64(v.items[2], u));
  EXPECT_EQ(lo, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(hi, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(u, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(json_to_int64(v.items[2], lo));  // beyond int64
  EXPECT_FALSE(json_to_uint64(v.items[4], u));  // negative
  EXPECT_FALSE(json_to_int64(parse_json("1.5", "t"), lo));
  EXPECT_FALSE(json_to_int64(parse_json("1e3", "t"), lo));
  EXPECT_FALSE(json_to_int64(parse_json("\"7\"", "t"), lo));
}

TEST(Json, DoublesAreShortestAndKeepADot) {
  EXPECT_EQ(number(2.0), "2.0");
  EXPECT_EQ(number(-0.0), "-0.0");
  EXPECT_EQ(number(0.1), "0.1");
  EXPECT_EQ(number(1e-300), "1.0e-300");
  EXPECT_EQ(number(2.5e10), "2.5e+10");
  EXPECT_EQ(number(2e10), "2.0e+10");
  EXPECT_EQ(number(123456.0), "123456.0");
  EXPECT_EQ(number(1e300), "1.0e+300");
  EXPECT_EQ(number(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_THROW(number(std::numeric_limits<double>::quiet_NaN()), Error);
  EXPECT_THROW(number(std::numeric_limits<double>::infinity()), Error);
}

TEST(Json, DoublesRoundTripBitForBit) {
  // The manifest's transforms: means and stddevs of every magnitude, subnormals included.
  const std::vector<double> values = {0.0, -0.0, 1.0, 0.1, 1.0 / 3, -2.5e-8, 1e-300,
                                      4.9406564584124654e-324, 2.2250738585072014e-308,
                                      1.7976931348623157e308, 123456789.123456789, 6.02214076e23};
  JsonWriter w;
  w.array(values);
  const JsonValue v = parse_json(w.str(), "t");
  ASSERT_EQ(v.items.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    double x = 0;
    ASSERT_TRUE(json_to_double(v.items[i], x)) << v.items[i].text;
    EXPECT_EQ(std::signbit(x), std::signbit(values[i]));
    EXPECT_EQ(x, values[i]) << v.items[i].text;
  }
  double x = 0;
  EXPECT_FALSE(json_to_double(parse_json("1e999", "t"), x));
}

TEST(Json, WriterWritesNullForNonFiniteDoubles) {
  JsonWriter w;
  w.begin_object().key("nan").value(std::numeric_limits<double>::quiet_NaN()).key("ok").value(true).end_object();
  EXPECT_EQ(w.str(), R"({"nan": null, "ok": true})");
}

TEST(Json, InlineAndOnePerLineLayouts) {
  JsonWriter w;
  w.begin_object(JsonLayout::OnePerLine);
  w.key("a").value(1);
  w.key("list").begin_array(JsonLayout::OnePerLine);
  w.begin_object().key("x").value("y").key("n").null().end_object();
  w.begin_object().end_object();
  w.end_array();
  w.key("empty").begin_array(JsonLayout::OnePerLine).end_array();
  w.key("inline").array(std::vector<std::string>{"p", "q"});
  w.end_object();
  EXPECT_EQ(w.str(),
            "{\n"
            " \"a\": 1,\n"
            " \"list\": [\n"
            "  {\"x\": \"y\", \"n\": null},\n"
            "  {}\n"
            " ],\n"
            " \"empty\": [],\n"
            " \"inline\": [\"p\", \"q\"]\n"
            "}");
}

TEST(Json, WriterRefusesUnbalancedUse) {
  JsonWriter w;
  EXPECT_THROW(w.end_object(), Error);
  w.begin_array();
  EXPECT_THROW(w.key("k"), Error);
  EXPECT_THROW(w.end_object(), Error);
}

TEST(Json, DocumentsRoundTrip) {
  JsonWriter w;
  w.begin_object().key("name").value("x\"y").key("values").array(std::vector<int>{1, 2, 3});
  w.key("nested").begin_object().key("t").value(true).key("f").value(false).end_object();
  w.key("pi").value(3.141592653589793).end_object();
  const JsonValue v = parse_json(w.str(), "t");
  ASSERT_EQ(v.type, JsonValue::Type::Object);
  const JsonObject o(v, "", "t");
  EXPECT_EQ(o.str("name"), "x\"y");
  EXPECT_EQ(o.seq<int>("values"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(o.object("nested").node("t").text, "true");
  EXPECT_EQ(o.num<double>("pi"), 3.141592653589793);
  // Whitespace of any kind between tokens.
  EXPECT_EQ(parse_json(" \t\r\n[ 1 ,\n 2 ] \n", "t").items.size(), 2u);
}

TEST(Json, NestingLimit) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_EQ(parse_error(nested(kJsonMaxDepth)), "");
  EXPECT_NE(parse_error(nested(kJsonMaxDepth + 1)).find("nested deeper than 64 levels"), std::string::npos);
  EXPECT_NE(parse_error(nested(4), 3).find("byte offset 3"), std::string::npos);
  // Far deeper than any stack would allow: refused, not a crash.
  EXPECT_NE(parse_error(std::string(1000000, '[')), "");
}

TEST(Json, MalformedInputNamesLineColumnAndOffset) {
  const std::string e = parse_error("{\"a\": [1,\n  2 x");
  EXPECT_NE(e.find("doc.json"), std::string::npos) << e;
  EXPECT_NE(e.find("line 2, column 5 (byte offset 14): expected ',' or ']'"), std::string::npos) << e;
  const std::pair<const char*, const char*> cases[] = {
      {"", "byte offset 0): unexpected end of the document"},
      {"[1, 2", "byte offset 5): unexpected end"},
      {"{\"a\" 1}", "byte offset 5): expected ':'"},
      {"{1: 2}", "byte offset 1): expected a string key"},
      {"[1] 2", "byte offset 4): unexpected text after the document"},
      {"\"abc", "byte offset 4): unterminated string"},
      {"\"a\nb\"", "byte offset 2): control character in a string"},
      {"\"\\x\"", "byte offset 2): bad escape"},
      {"\"\\u12\"", "truncated \\u escape"},
      {"\"\\u12zz\"", "bad \\u escape"},
      {"01", "byte offset 1): unexpected text after the document"},
      {"-", "byte offset 1): expected a digit in the number"},
      {"1.", "byte offset 2): expected a digit after '.'"},
      {"1e+", "byte offset 3): expected a digit in the exponent"},
      {"+1", "byte offset 0): unexpected character '+'"},
      {"tru", "byte offset 0): unexpected character 't'"},
      {"[1,]", "byte offset 3): unexpected character ']'"},
      {"NaN", "unexpected character 'N'"},
  };
  for (const auto& [text, want] : cases)
    EXPECT_NE(parse_error(text).find(want), std::string::npos) << text << " -> " << parse_error(text);
}

TEST(Json, ObjectFieldsAreNamedInErrors) {
  const JsonValue v = parse_json(R"({"graphs": [{"n": 1}, {"n": "x"}, {"n": 300}], "s": 2})", "m.json");
  const JsonObject top(v, "", "m.json");
  const std::vector<JsonObject> graphs = top.objects("graphs");
  EXPECT_EQ(graphs[0].num<int>("n"), 1);
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of([&] { graphs[1].num<int>("n"); }), "m.json: key 'graphs[1].n': expected an integer");
  EXPECT_EQ(error_of([&] { graphs[2].num<uint8_t>("n"); }),
            "m.json: key 'graphs[2].n': expected an integer, got 300");
  EXPECT_EQ(error_of([&] { graphs[0].str("missing"); }), "m.json: key 'graphs[0].missing': missing field");
  EXPECT_EQ(error_of([&] { top.str("s"); }), "m.json: key 's': expected a string");
  EXPECT_EQ(error_of([&] { top.objects("s"); }), "m.json: key 's': expected an array");
  EXPECT_EQ(error_of([&] { top.object("s"); }), "m.json: key 's': expected an object");
}

// What the writer writes, Python's json and PyYAML's safe_load read as the same values.
TEST(Json, PythonJsonAndYamlReadTheWritersOutput) {
  TempDir dir("json");
  JsonWriter w;
  w.begin_object(JsonLayout::OnePerLine);
  w.key("text").value("control \x01 del \x7f c1 \xc2\x85 ls \xe2\x80\xa8 ps \xe2\x80\xa9 \xf0\x9f\x98\x80 \"q\" \\ end");
  w.key("floats").array(std::vector<double>{1e-300, 2.0, -0.0, 2.5e10, 0.1});
  w.key("ints").array(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 0, 40000000000});
  w.key("bool").value(false).key("none").null();
  w.end_object();
  const std::string path = dir.file("doc.yaml");
  std::ofstream(path) << w.str() << "\n";
  const std::string cmd =
      "/usr/bin/python3 -c 'import json, sys, yaml\n"
      "t = open(sys.argv[1]).read()\n"
      "j, y = json.loads(t), yaml.safe_load(t)\n"
      "assert j == y, (j, y)\n"
      "assert all(isinstance(v, float) for v in y[\"floats\"])\n"
      "assert y[\"ints\"] == [-9223372036854775808, 0, 40000000000]\n"
      "assert y[\"text\"].startswith(\"control \\x01 del \\x7f c1 \\x85 ls \\u2028 ps \\u2029 \\U0001f600\")\n"
      "assert y[\"bool\"] is False and y[\"none\"] is None' " +
      path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "python json/yaml checks failed (see above)";
}

}  // namespace
}  // namespace tpuperf
