#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "specs/version.hpp"

namespace specs_version_test {

using envfix::specs::Version;

namespace {
Version V(std::string_view s) {
  auto v = Version::parse(s);
  INFO("parsing ", std::string(s));
  REQUIRE(v.has_value());
  return *v;
}
} // namespace

TEST_SUITE("unit/specs/version") {
  TEST_CASE("version normalization (R3.3) and round trip") {
    struct Row {
      const char* in;
      const char* out;
    };
    const Row rows[] = {
        {"1.0", "1.0"},
        {"1.0.0", "1.0.0"},
        {"09000", "9000"},
        {"1.0-r4", "1.0.post4"},
        {"V1.2C3", "1.2rc3"},
        {"1.0+Ubuntu-1", "1.0+ubuntu.1"},
        {"2.0.0.POST", "2.0.0.post0"},
        {"1.0-1", "1.0.post1"},
        {"1.0.post1", "1.0.post1"},
        {"1.0post1", "1.0.post1"},
        {"1.0-post-1", "1.0.post1"},
        {"1.0_post_1", "1.0.post1"},
        {"1.0rev2", "1.0.post2"},
        {"1.0r", "1.0.post0"},
        {"1.0alpha1", "1.0a1"},
        {"1.0-beta.2", "1.0b2"},
        {"1.0c1", "1.0rc1"},
        {"1.0pre1", "1.0rc1"},
        {"1.0preview2", "1.0rc2"},
        {"1.0.RC.3", "1.0rc3"},
        {"1.0a", "1.0a0"},
        {"1.0a-", "1.0a0"},
        {"1.0.dev", "1.0.dev0"},
        {"1.0-dev-5", "1.0.dev5"},
        {"1.0dev5", "1.0.dev5"},
        {"1.0a1.post2.dev3", "1.0a1.post2.dev3"},
        {"1.0a.post1", "1.0a0.post1"},
        {"1!2.0", "1!2.0"},
        {"0!2.0", "2.0"},
        {"v2.7.0", "2.7.0"},
        {"  2.7.0\n", "2.7.0"},
        {"2.7.0+cu128", "2.7.0+cu128"},
        {"2.8.0.dev20250501+cu128", "2.8.0.dev20250501+cu128"},
        {"1.0+foo0100", "1.0+foo0100"},
        {"1.0+0100", "1.0+100"},
        {"1.0+a-b_c", "1.0+a.b.c"},
        {"1.0+ABC", "1.0+abc"},
        {"2.6.0.dev20250102+cu126", "2.6.0.dev20250102+cu126"},
        {"1.0.0.0.0.1", "1.0.0.0.0.1"},
    };
    for (const auto& r : rows) {
      CAPTURE(r.in);
      Version v = V(r.in);
      CHECK(v.to_string() == r.out);
      // Every vector round-trips: parse(to_string()) == value and prints the same text.
      Version back = V(v.to_string());
      CHECK(back == v);
      CHECK(back.to_string() == v.to_string());
    }
  }

  TEST_CASE("version accessors and predicates (R3.5)") {
    Version n = V("1!2.8.0rc1.post2.dev3+cu128");
    CHECK(n.epoch() == 1);
    CHECK(n.release() == std::vector<std::uint64_t>{2, 8, 0});
    REQUIRE(n.pre());
    CHECK(n.pre()->first == envfix::specs::PreKind::rc);
    CHECK(n.pre()->second == 1);
    CHECK(n.post() == 2u);
    CHECK(n.dev() == 3u);
    CHECK(n.local() == "cu128");
    CHECK(n.has_local());
    CHECK(n.is_prerelease());
    CHECK(n.is_devrelease());
    CHECK(n.is_postrelease());
    CHECK(n.public_version().to_string() == "1!2.8.0rc1.post2.dev3");
    CHECK(n.base_version().to_string() == "1!2.8.0");

    CHECK(V("2.8.0.dev20250501+cu128").is_prerelease()); // nightlies are pre-releases (PEP 440 dev releases)
    CHECK(V("2.8.0.dev20250501").dev() == 20250501u);
    CHECK_FALSE(V("2.7.0+cu128").is_prerelease());
    CHECK_FALSE(V("2.7.0.post1").is_prerelease());
    CHECK(V("2.7.0.post1").is_postrelease());
    CHECK(V("2.7.0").local().empty());
    CHECK_FALSE(V("2.7.0").dev());
  }

  TEST_CASE("version equality ignores trailing zeros and case (Appendix B)") {
    CHECK(V("1.0") == V("1.0.0"));
    CHECK(V("1.0") == V("1"));
    CHECK(V("1.0+ABC") == V("1.0+abc"));
    CHECK(V("1.0+a-b_c") == V("1.0+a.b.c"));
    CHECK(V("1.0+007") == V("1.0+7"));
    CHECK(V("1.0a0") == V("1.0a"));
    CHECK(V("1.0") != V("1.0+0"));
    CHECK(V("1.0") != V("1.0.post0"));
  }

  TEST_CASE("version ordering: spec reference order (R3.4), local variants (R3.8), nightlies (R3.10)") {
    const std::vector<std::vector<const char*>> chains = {
        {"1.dev0",
         "1.0.dev456",
         "1.0a1",
         "1.0a2.dev456",
         "1.0a12.dev456",
         "1.0a12",
         "1.0b1.dev456",
         "1.0b2",
         "1.0b2.post345.dev456",
         "1.0b2.post345",
         "1.0rc1.dev456",
         "1.0rc1",
         "1.0",
         "1.0+abc.5",
         "1.0+abc.7",
         "1.0+5",
         "1.0.post456.dev34",
         "1.0.post456",
         "1.0.15",
         "1.1.dev1"},
        {"2.7.0", "2.7.0+cpu", "2.7.0+cu12.8", "2.7.0+cu126", "2.7.0+cu128", "2.7.0+rocm6.3", "2.7.0+1", "2.7.0.post1", "2.7.1"},
        {"2.7.1", "2.8.0.dev20250430+cu128", "2.8.0.dev20250501", "2.8.0.dev20250501+cpu", "2.8.0.dev20250501+cu128",
         "2.8.0.dev20250502", "2.8.0a0", "2.8.0rc1", "2.8.0", "2.8.0+cu128", "2.8.0.post1"},
        {"2026.1", "1!0.1"}, // epochs dominate
        {"1.0+abc", "1.0+abc.1", "1.0+abd", "1.0+1", "1.0+1.abc", "1.0+2", "1.0+10"},
        {"0.9", "1.0.dev0", "1.0a0", "1.0", "1.0.1", "1.0.10", "1.1", "10.0"},
        {"1.0.post1.dev1", "1.0.post1", "1.0.post2"},
    };
    for (const auto& chain : chains) {
      for (std::size_t i = 0; i < chain.size(); ++i) {
        for (std::size_t j = 0; j < chain.size(); ++j) {
          CAPTURE(chain[i]);
          CAPTURE(chain[j]);
          Version a = V(chain[i]), b = V(chain[j]);
          if (i < j) CHECK(a < b);
          if (i == j) CHECK(a == b);
          if (i > j) CHECK(a > b);
        }
      }
    }
  }

  TEST_CASE("invalid versions: error names the text and column") {
    struct Row {
      const char* in;
      const char* message;
    };
    const Row rows[] = {
        {"1.0a-b", "invalid version '1.0a-b': unexpected '-' at column 5"},
        {"1.0-", "invalid version '1.0-': unexpected '-' at column 4"},
        {"", "invalid version '': empty"},
        {"   ", "invalid version '   ': empty"},
        {"abc", "invalid version 'abc': unexpected 'a' at column 1"},
        {"1.0+", "invalid version '1.0+': unexpected '+' at column 4"},
        {"1.0+cu128+x", "invalid version '1.0+cu128+x': unexpected '+' at column 10"},
        {"1.0 1", "invalid version '1.0 1': unexpected ' ' at column 4"},
        {"1.0.x", "invalid version '1.0.x': unexpected '.' at column 4"},
        {"1!", "invalid version '1!': unexpected end at column 3"},
        {"1.0a1a2", "invalid version '1.0a1a2': unexpected 'a' at column 6"},
        {"1.0..0", "invalid version '1.0..0': unexpected '.' at column 4"},
        {"1.0+a..b", "invalid version '1.0+a..b': unexpected '.' at column 6"},
        {"99999999999999999999", "invalid version '99999999999999999999': number too large at column 1"},
        {" 1.0-", "invalid version ' 1.0-': unexpected '-' at column 5"},
    };
    for (const auto& r : rows) {
      CAPTURE(r.in);
      auto v = Version::parse(r.in);
      REQUIRE_FALSE(v.has_value());
      CHECK(v.error().code == envfix::ErrorCode::invalid_input);
      CHECK(v.error().message == r.message);
    }
  }
}

} // namespace specs_version_test
