#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "specs/tag.hpp"
#include "util/fs.hpp"

namespace specs_tag_test {

using namespace envfix;
using namespace envfix::specs;

namespace {

// The "Compatible tags: N" section of `pip debug --verbose`, one tag per indented line.
std::vector<std::string> pip_debug_tags(const std::string& text, std::size_t& declared) {
  std::vector<std::string> tags;
  std::istringstream in(text);
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.starts_with("Compatible tags: ")) {
      declared = std::stoul(line.substr(17));
      in_section = true;
      continue;
    }
    if (!in_section) continue;
    if (!line.starts_with("  ")) break;
    tags.push_back(line.substr(2));
  }
  return tags;
}

std::vector<std::string> strings(const std::vector<Tag>& tags) {
  std::vector<std::string> out;
  for (const auto& t : tags) out.push_back(t.to_string());
  return out;
}

TagEnvironment cp(int minor, std::pair<int, int> glibc, std::string arch = "x86_64") {
  TagEnvironment env;
  env.minor = minor;
  env.glibc = glibc;
  env.arch = std::move(arch);
  return env;
}

} // namespace

TEST_SUITE("unit/specs/tag") {

  TEST_CASE("Tag::parse and to_string round trip, lower-cased") {
    struct Row {
      const char* in;
      const char* out;
    };
    for (Row r : {Row{"cp311-cp311-manylinux_2_36_x86_64", "cp311-cp311-manylinux_2_36_x86_64"},
                  Row{"PY3-None-Any", "py3-none-any"}, Row{"cp39-abi3-linux_aarch64", "cp39-abi3-linux_aarch64"}}) {
      CAPTURE(r.in);
      auto t = Tag::parse(r.in);
      REQUIRE(t);
      CHECK(t->to_string() == r.out);
      CHECK(Tag::parse(t->to_string()).value() == *t);
    }
    auto t = Tag::parse("cp310-cp310-linux_x86_64").value();
    CHECK(t.interpreter == "cp310");
    CHECK(t.abi == "cp310");
    CHECK(t.platform == "linux_x86_64");
  }

  TEST_CASE("Tag::parse rejects bad text, naming it with a caret") {
    struct Row {
      const char* in;
      const char* needle;
    };
    for (Row r : {Row{"cp311-cp311", "3 '-'-separated"}, Row{"a-b-c-d", "more than 3"}, Row{"", "empty field"},
                  Row{"cp311--any", "empty field"}, Row{"py2.py3-none-any", "compressed tag set"},
                  Row{"cp311-cp311-linux x86", "unexpected character ' '"}, Row{"cp311-cp311-", "empty field"}}) {
      CAPTURE(r.in);
      auto t = Tag::parse(r.in);
      REQUIRE(!t);
      CHECK(t.error().code == ErrorCode::invalid_input);
      CHECK(t.error().message.find(r.needle) != std::string::npos);
      CHECK(t.error().message.find(std::string("'") + r.in + "'") != std::string::npos);
    }
    auto e = Tag::parse("cp311-cp3$1-any").error().message;
    CHECK(e.find("\n  cp311-cp3$1-any\n           ^") != std::string::npos);
  }

  TEST_CASE("parse_tag_set expands the cartesian product (R2.3)") {
    CHECK(strings(parse_tag_set("py2.py3-none-any").value()) == std::vector<std::string>{"py2-none-any", "py3-none-any"});
    CHECK(strings(parse_tag_set("cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64").value()) ==
          std::vector<std::string>{"cp312-cp312-manylinux_2_17_x86_64", "cp312-cp312-manylinux2014_x86_64"});
    CHECK(parse_tag_set("py2.py3-none.abi3-any.linux_x86_64").value().size() == 8);
    CHECK(parse_tag_set("py3.PY3-none-any").value().size() == 1);
    CHECK(!parse_tag_set("py2..py3-none-any"));
    CHECK(!parse_tag_set("py3.-none-any"));
    CHECK(!parse_tag_set("py3-none"));
  }

  TEST_CASE("supported_tags for CPython 3.11, glibc 2.36, x86_64 equals pip debug --verbose, in order") {
    auto text = util::read_file(ENVFIX_SOURCE_DIR "/tests/fixtures/pip-debug/cp311-glibc236-x86_64.txt");
    REQUIRE(text);
    std::size_t declared = 0;
    auto expected = pip_debug_tags(*text, declared);
    REQUIRE(declared == 914);
    REQUIRE(expected.size() == declared);
    auto got = strings(supported_tags(cp(11, {2, 36})));
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      REQUIRE(got[i] == expected[i]);
    }
    // Spot checks: pip's own list (`pip debug --verbose`, tests/fixtures/pip-debug) begins, has tag #36
    // and ends like this (packaging's sys_tags() order).
    CHECK(got.front() == "cp311-cp311-manylinux_2_36_x86_64");
    CHECK(got[35] == "cp311-cp311-linux_x86_64");
    CHECK(got.back() == "py30-none-any");
  }

  TEST_CASE("platform_tags: manylinux floors, legacy aliases, musllinux, linux order (R2.6)") {
    auto x86 = platform_tags(cp(11, {2, 36}));
    REQUIRE(x86.size() == 36);
    CHECK(x86[0] == "manylinux_2_36_x86_64");
    CHECK(x86[19] == "manylinux_2_17_x86_64");
    CHECK(x86[20] == "manylinux2014_x86_64");
    CHECK(x86[26] == "manylinux2010_x86_64");
    CHECK(x86[33] == "manylinux_2_5_x86_64");
    CHECK(x86[34] == "manylinux1_x86_64");
    CHECK(x86[35] == "linux_x86_64");

    auto arm = platform_tags(cp(10, {2, 28}, "aarch64"));
    std::vector<std::string> want;
    for (int m = 28; m >= 17; --m) want.push_back("manylinux_2_" + std::to_string(m) + "_aarch64");
    want.insert(want.end(), {"manylinux2014_aarch64", "linux_aarch64"});
    CHECK(arm == want);

    TagEnvironment musl;
    musl.musl = std::pair{1, 2};
    CHECK(platform_tags(musl) ==
          std::vector<std::string>{"musllinux_1_2_x86_64", "musllinux_1_1_x86_64", "musllinux_1_0_x86_64", "linux_x86_64"});
    TagEnvironment bare;
    CHECK(platform_tags(bare) == std::vector<std::string>{"linux_x86_64"});
    TagEnvironment odd = cp(11, {2, 36}, "sparc64"); // no manylinux for unknown archs
    CHECK(platform_tags(odd) == std::vector<std::string>{"linux_sparc64"});

    auto first = cp(11, {2, 36});
    first.linux_first = true;
    auto lf = platform_tags(first);
    CHECK(lf.front() == "linux_x86_64");
    CHECK(lf[1] == "manylinux_2_36_x86_64");
    CHECK(lf.size() == 36);

    // A future glibc 3.x: 3.x first, then every 2.x from 2.50 down.
    auto future = platform_tags(cp(11, {3, 1}));
    CHECK(future[0] == "manylinux_3_1_x86_64");
    CHECK(future[1] == "manylinux_3_0_x86_64");
    CHECK(future[2] == "manylinux_2_50_x86_64");
  }

  TEST_CASE("cpython_abis and ABI-dependent tag sections (R2.5)") {
    auto env = cp(11, {2, 36});
    CHECK(cpython_abis(env) == std::vector<std::string>{"cp311"});
    env.abiflags = "d";
    CHECK(cpython_abis(env) == std::vector<std::string>{"cp311d", "cp311"});
    auto ft = cp(13, {2, 36});
    ft.abiflags = "t";
    CHECK(cpython_abis(ft) == std::vector<std::string>{"cp313t"});
    auto old = cp(7, {2, 36});
    old.abiflags = "m";
    CHECK(cpython_abis(old) == std::vector<std::string>{"cp37m"});

    // Free-threaded: no abi3 anywhere.
    auto tags = strings(supported_tags(ft));
    CHECK(std::ranges::none_of(tags, [](const std::string& t) { return t.find("abi3") != std::string::npos; }));
    CHECK(tags.front() == "cp313-cp313t-manylinux_2_36_x86_64");
    // Normal build: abi3 down to cp32, and no cp3-/cp31- abi3 tags (packaging does not generate them).
    auto normal = strings(supported_tags(cp(11, {2, 17}, "aarch64")));
    CHECK(std::ranges::find(normal, "cp32-abi3-linux_aarch64") != normal.end());
    CHECK(std::ranges::find(normal, "cp31-abi3-linux_aarch64") == normal.end());
    CHECK(std::ranges::find(normal, "cp3-abi3-linux_aarch64") == normal.end());
    // 3 platforms (2_17, 2014, linux): cp311, abi3, none, 9 older abi3, 13 py, each x3; then 1 + 13 any.
    CHECK(normal.size() == 3 + 3 + 3 + 27 + 39 + 1 + 13);
  }

  TEST_CASE("apply_platform_tag sets arch and libc for planning another machine") {
    TagEnvironment env;
    REQUIRE(apply_platform_tag(env, "manylinux_2_28_aarch64"));
    CHECK(env.arch == "aarch64");
    CHECK(env.glibc == std::pair{2, 28});
    REQUIRE(apply_platform_tag(env, "manylinux2014_x86_64"));
    CHECK(env.arch == "x86_64");
    CHECK(env.glibc == std::pair{2, 17});
    REQUIRE(apply_platform_tag(env, "musllinux_1_2_x86_64"));
    CHECK(!env.glibc);
    CHECK(env.musl == std::pair{1, 2});
    REQUIRE(apply_platform_tag(env, "linux_aarch64"));
    CHECK(!env.glibc);
    CHECK(!env.musl);
    CHECK(env.arch == "aarch64");
    for (const char* bad :
         {"win_amd64", "manylinux_2_x86_64", "manylinux_x_28_x86_64", "manylinux_2_28_", "linux_", "macosx_11_0_arm64"}) {
      CAPTURE(bad);
      auto r = apply_platform_tag(env, bad);
      REQUIRE(!r);
      CHECK(r.error().message.find(bad) != std::string::npos);
    }
  }

  TEST_CASE("TagRanking ranks tags and picks a wheel's best tag (R2.9)") {
    TagRanking ranking(supported_tags(cp(11, {2, 36})));
    CHECK(ranking.rank(Tag::parse("cp311-cp311-manylinux_2_36_x86_64").value()) == 0u);
    CHECK(ranking.rank(Tag::parse("CP311-CP311-LINUX_X86_64").value()) == 35u);
    CHECK(ranking.rank(Tag{"CP311", "cp311", "linux_x86_64"}) == 35u);
    CHECK(!ranking.rank(Tag::parse("cp310-cp310-manylinux_2_28_x86_64").value()));
    CHECK(!ranking.rank(Tag::parse("cp311-cp311-manylinux_2_37_x86_64").value()));
    auto numpy = parse_tag_set("cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64").value();
    CHECK(ranking.best_rank(numpy) == 19u);
    auto pure = parse_tag_set("py2.py3-none-any").value();
    CHECK(ranking.best_rank(pure) == 902u);
    CHECK(!ranking.best_rank(parse_tag_set("cp312-cp312-manylinux_2_28_x86_64").value()));
    CHECK(!ranking.best_rank({}));
  }

} // TEST_SUITE

} // namespace specs_tag_test
