// The JSON writer every component prints with: structure, the one escaper, numbers, misuse.
#include "base/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace bypass {
namespace {

TEST(Json, NestedObjectsAndArraysKeepInsertionOrder) {
  Json j;
  j.begin_object().field("z", 1).field("a", "x").key("list").begin_array().value(true).null();
  j.begin_object().field("k", uint64_t{18446744073709551615ull}).end_object();
  j.end_array().key("empty").begin_object().end_object().field("neg", int64_t{-5}).end_object();
  EXPECT_EQ(j.str(), R"({"z":1,"a":"x","list":[true,null,{"k":18446744073709551615}],"empty":{},"neg":-5})");
}

TEST(Json, StringsEscapedPerRfc8259Section7) {
  // Quote, backslash and the controls below 0x20 are escaped (short forms where JSON has them);
  // DEL (0x7f) and UTF-8 pass as they are; bytes that are not UTF-8 become U+FFFD.
  Json j;
  j.begin_array().value(std::string("q\" b\\ n\n t\t r\r \x01 \x1f \x7f \xc3\xa9"));
  j.value(std::string("bad \xff")).end_array();
  EXPECT_EQ(j.str(), "[\"q\\\" b\\\\ n\\n t\\t r\\r \\u0001 \\u001f \x7f \xc3\xa9\",\"bad \xef\xbf\xbd\"]");
}

TEST(Json, NumbersInShortestFormAndNonFiniteAsNull) {
  Json j;
  j.begin_array().value(0.1).value(12.5).value(2.0).value(1e-7).value(INFINITY).value(std::nan("")).end_array();
  EXPECT_EQ(j.str(), "[0.1,12.5,2.0,1e-07,null,null]");
}

TEST(Json, RawTextIsParsedAndEmbedded) {
  Json j;
  j.begin_object().key("counters").raw(R"( {"b": 2, "a": [1]} )").field("after", 3).end_object();
  EXPECT_EQ(j.str(), R"({"counters":{"b":2,"a":[1]},"after":3})");
  Json bad;
  bad.begin_array();
  EXPECT_THROW(bad.raw("{\"a\":1,}"), std::invalid_argument);
}

TEST(Json, MisuseIsALogicErrorNotBadOutput) {
  EXPECT_THROW(Json().begin_object().value(1), std::logic_error);  // no key
  EXPECT_THROW(Json().begin_array().key("k"), std::logic_error);   // a key in an array
  EXPECT_THROW(Json().begin_array().end_object(), std::logic_error);
  EXPECT_THROW(Json().end_array(), std::logic_error);
  EXPECT_THROW(Json().value(1).value(2), std::logic_error);         // two documents
  EXPECT_EQ(Json().str(), "null");
}

}  // namespace
}  // namespace bypass
