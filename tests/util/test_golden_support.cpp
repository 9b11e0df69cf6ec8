// tests/support/golden: the filter every golden transcript goes through and the diff a mismatch prints.
#include <doctest/doctest.h>

#include "tests/support/golden.hpp"

using namespace envfix;

TEST_SUITE("unit/util/golden_support") {

  TEST_CASE("golden support: unified diff of a changed, an added and a removed line") {
    CHECK(testing::unified_diff("a\nb\nc\n", "a\nb\nc\n", "old", "new").empty());
    CHECK(testing::unified_diff("a\nb\nc\n", "a\nB\nc\n", "old", "new") == "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
    // Changes far apart get a hunk each, with 3 lines of context.
    std::string a, b;
    for (int i = 1; i <= 20; ++i) {
      a += std::to_string(i) + "\n";
      if (i != 2 && i != 18) b += std::to_string(i) + "\n";
      if (i == 10) b += "new\n";
    }
    const auto d = testing::unified_diff(a, b, "a", "b");
    CHECK(d.find("@@ -1,5 +1,4 @@\n 1\n-2\n 3\n 4\n 5\n") != std::string::npos);
    CHECK(d.find("@@ -8,6 +7,7 @@\n 8\n 9\n 10\n+new\n 11\n 12\n 13\n") != std::string::npos);
    CHECK(d.find("-18\n") != std::string::npos);
    CHECK(testing::unified_diff("", "x\n", "a", "b") == "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
  }

  TEST_CASE("golden support: the filter replaces the run's literals first, then times, hashes, ports and the interpreter") {
    const std::string text = "/tmp/w-1/venv/bin/python in 81ms and 2.5s; sha256=" + std::string(64, 'a') +
                             "\nhttps://127.0.0.1:48783/simple Python 3.11.7 (cp311, glibc 2.36) cp311 12 MiB\n";
    CHECK(testing::filter_transcript(text, {{"/tmp/w-1", "<root>"}, {"/tmp/w", "<short>"}}) ==
          "<root>/venv/bin/python in <t> and <t>; sha256:<hash>\n<https>/simple Python <python> <cp> <size>\n");
    // What a run does not vary stays: versions of packages, the driver's own number in a message.
    CHECK(testing::filter_transcript("torch 2.7.0+cu126 needs 570.86\n") == "torch 2.7.0+cu126 needs 570.86\n");
  }

} // TEST_SUITE unit
