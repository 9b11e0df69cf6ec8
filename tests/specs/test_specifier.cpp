#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "specs/specifier.hpp"

namespace specs_specifier_test {

using envfix::specs::Specifier;
using envfix::specs::SpecifierSet;
using envfix::specs::SpecOperator;
using envfix::specs::Version;

namespace {
Version V(std::string_view s) {
  auto v = Version::parse(s);
  INFO("parsing ", std::string(s));
  REQUIRE(v.has_value());
  return *v;
}
SpecifierSet S(std::string_view s) {
  auto v = SpecifierSet::parse(s);
  INFO("parsing ", std::string(s), ": ", (v ? std::string() : v.error().render()));
  REQUIRE(v.has_value());
  return *v;
}
constexpr std::optional<bool> kDefault = std::nullopt;
} // namespace

TEST_SUITE("unit/specs/specifier") {
  TEST_CASE("specifier set membership table (R3.7, R3.8, R3.10, Appendix B)") {
    struct Row {
      const char* spec;
      const char* version;
      std::optional<bool> pre;
      bool expected;
    };
    const Row rows[] = {
        // PEP 440 local versions: the torch local-label question (verified against packaging).
        {"==2.7.0", "2.7.0+cu128", kDefault, true},
        {"===2.7.0", "2.7.0+cu128", kDefault, false},
        {"===2.7.0", "2.7.0", kDefault, true},
        {">2.7.0", "2.7.0+cu128", kDefault, false},
        {"<=2.7.0", "2.7.0+cu128", kDefault, true},
        {">=2.7.0", "2.7.0+cu128", kDefault, true},
        {"==2.7.*", "2.7.0+cu128", kDefault, true},
        {"~=2.7.0", "2.7.0+cu128", kDefault, true},
        {"<2.7.0", "2.7.0+cu128", kDefault, false},
        {"!=2.7.0", "2.7.0+cu128", kDefault, false},
        {"==2.7.0+cu128", "2.7.0+cu128", kDefault, true},
        {"==2.7.0+cu128", "2.7.0+cu126", kDefault, false},
        {"==2.7.0+cu128", "2.7.0", kDefault, false},
        {"!=2.7.0+cu128", "2.7.0+cu126", kDefault, true},
        {"==2.7", "2.7.0", kDefault, true},
        {"==2.7.0", "2.7", kDefault, true},
        // Prefix matching.
        {"==2.7.*", "2.7.1", kDefault, true},
        {"==2.7.*", "2.8.0", kDefault, false},
        {"==2.7.*", "2.70.0", kDefault, false},
        {"==2.*", "2", kDefault, true},
        {"==2.0.*", "2", kDefault, true},
        {"==2.7.*", "2.7", kDefault, true},
        {"!=2.7.*", "2.7.5", kDefault, false},
        {"!=2.7.*", "2.6.9", kDefault, true},
        {"==1!2.*", "1!2.5", kDefault, true},
        {"==1!2.*", "2.5", kDefault, false},
        {"==2.7.*", "2.7.0rc1", true, true},
        {"==2.7.*", "2.7.0rc1", kDefault, false},
        {"==1.0a1.*", "1.0a1.post2", kDefault, false}, // a pre-release: excluded by default
        {"==1.0a1.*", "1.0a1.post2", true, true},
        {"==1.0.post1.*", "1.0.post1.dev3", true, true},
        {"==1.0.post1.*", "1.0.post2", true, false},
        // Ordered comparisons and their exclusive rules.
        {"<2.8", "2.8.0.dev1", true, false},
        {"<2.8", "2.8.0rc1", true, false},
        {"<2.8", "2.7.9", kDefault, true},
        {"<2.8", "2.8.0.dev20250501+cu128", true, false},
        {"<2.8rc1", "2.8.0b1", kDefault, true}, // the clause names a pre-release
        {"<2.8rc1", "2.8.0.dev1", kDefault, true},
        {">2.8.0", "2.8.0.post1", kDefault, false},
        {">2.8.0", "2.8.0+cu128", kDefault, false},
        {">2.8.0", "2.8.1", kDefault, true},
        {">2.8.0.post1", "2.8.0.post2", kDefault, true},
        {">2.8.0.post1", "2.8.0.post1+cu128", kDefault, false},
        {">2.8.0rc1", "2.8.0", kDefault, true},
        {"<=2.8", "2.8.0+cu128", kDefault, true},
        {">=2.8", "2.8.0rc1", kDefault, false},
        {">=2.8", "2.8.0rc1", true, false},
        {">=2.8rc1", "2.8.0rc1", kDefault, true},
        {"<=2.8", "2.8.0.post1", kDefault, false},
        {">=2.7", "2.8.0.post1", kDefault, true},
        // Compatible release.
        {"~=2.2", "2.3", kDefault, true},
        {"~=2.2", "3.0", kDefault, false},
        {"~=2.2", "2.1", kDefault, false},
        {"~=2.2.0", "2.2.5", kDefault, true},
        {"~=2.2.0", "2.3.0", kDefault, false},
        {"~=2.2.post3", "2.2.post3", kDefault, true},
        {"~=2.2.post3", "2.2", kDefault, false},
        {"~=2.2.post3", "2.9", kDefault, true},
        {"~=2.2.post3", "3.0", kDefault, false},
        {"~=1.4.5a4", "1.4.5a5", kDefault, true},
        {"~=1!1.0", "1!1.5", kDefault, true},
        {"~=1!1.0", "1.5", kDefault, false},
        // Nightlies (dev releases, hence pre-releases under PEP 440).
        {">=2.7", "2.8.0.dev20250501+cu128", kDefault, false},
        {">=2.7", "2.8.0.dev20250501+cu128", true, true},
        {">=2.8.0.dev0", "2.8.0.dev20250501+cu128", kDefault, true},
        {"==2.8.0.dev20250501", "2.8.0.dev20250501+cu128", kDefault, true},
        {"==2.8.0.dev20250501", "2.8.0.dev20250502+cu128", kDefault, false},
        {"<2.8", "2.8.0.dev20250501", true, false},
        // Pre-release gating.
        {"", "2.8.0rc1", kDefault, false},
        {"", "2.8.0rc1", true, true},
        {"", "1.0", kDefault, true},
        {">=1.0", "2.0a1", false, false},
        {"!=2.8.0rc1", "2.8.0a0", kDefault, false}, // != does not imply pre-releases
        {">=1,<3", "2.5", kDefault, true},
        {">=1,<3", "3.0", kDefault, false},
        {">=1, !=2.0, <3", "2.0", kDefault, false},
        {">=1.0a1,<2", "1.5b1", kDefault, true}, // one clause names a pre-release
        // Arbitrary equality.
        {"===1.0", "1.0.0", kDefault, false},
        {"===1.0-1", "1.0.post1", kDefault, false}, // compares the text, not the value
        {"===1.0.POST1", "1.0.post1", kDefault, true},
    };
    for (const auto& r : rows) {
      CAPTURE(r.spec);
      CAPTURE(r.version);
      SpecifierSet s = S(r.spec);
      CHECK(s.contains(V(r.version), r.pre) == r.expected);
    }
  }

  TEST_CASE("filter: the pre-release fallback (Appendix B)") {
    auto names = [](const std::vector<Version>& vs) {
      std::vector<std::string> out;
      for (const auto& v : vs) out.push_back(v.to_string());
      return out;
    };
    std::vector<Version> pres{V("2.8.0a0"), V("2.8.0rc1")};
    CHECK(S("<2.8").filter(pres).empty());
    CHECK(S("<2.8").filter(pres, true).empty());
    CHECK(names(S("!=2.8.0rc1").filter({V("2.8.0a0")})) == std::vector<std::string>{"2.8.0a0"});
    std::vector<Version> mixed{V("2.6.0"), V("2.7.0+cu128"), V("2.8.0.dev20250501+cu128"), V("2.8.0")};
    CHECK(names(S(">=2.7").filter(mixed)) == std::vector<std::string>{"2.7.0+cu128", "2.8.0"});
    CHECK(names(S(">=2.7").filter(mixed, true)) == std::vector<std::string>{"2.7.0+cu128", "2.8.0.dev20250501+cu128", "2.8.0"});
    CHECK(names(S(">=2.8.0.dev0").filter(mixed)) == std::vector<std::string>{"2.8.0.dev20250501+cu128", "2.8.0"});
    CHECK(names(S(">=2.8.0.dev0").filter(mixed, false)) == std::vector<std::string>{"2.8.0"});
    CHECK(names(S("").filter({V("1.0rc1"), V("1.0b1")})) == std::vector<std::string>{"1.0rc1", "1.0b1"});
    CHECK(names(S("").filter({V("1.0rc1"), V("0.9")})) == std::vector<std::string>{"0.9"});
  }

  TEST_CASE("specifier parse: normalization, accessors and round trip") {
    struct Row {
      const char* in;
      const char* out;
    };
    const Row rows[] = {
        {"", ""},
        {"   ", ""},
        {">=2.7", ">=2.7"},
        {" >= 2.7 , < 3 ,", ">=2.7,<3"},
        {"==2.7.*", "==2.7.*"},
        {"== 2.7.0+CU128", "==2.7.0+cu128"},
        {"~=2.2.post3", "~=2.2.post3"},
        {"!=1.0-1", "!=1.0.post1"},
        {"===foo bar", ""}, // placeholder, error case checked below
        {"===Foo", "===Foo"},
        {">=v1.0,<=2.0.0.RC1", ">=1.0,<=2.0.0rc1"},
        {"<1!2.0", "<1!2.0"},
        {"==1.0a1.*", "==1.0a1.*"},
    };
    for (const auto& r : rows) {
      CAPTURE(r.in);
      if (std::string_view(r.in) == "===foo bar") continue;
      SpecifierSet s = S(r.in);
      CHECK(s.to_string() == r.out);
      SpecifierSet back = S(s.to_string());
      CHECK(back == s);
      CHECK(back.to_string() == s.to_string());
    }
    SpecifierSet s = S(">=2.7, ==2.7.*, ===x");
    REQUIRE(s.clauses().size() == 3);
    CHECK(s.clauses()[0].op() == SpecOperator::greater_equal);
    CHECK(s.clauses()[1].op() == SpecOperator::equal);
    CHECK(s.clauses()[1].wildcard());
    CHECK(s.clauses()[1].version()->to_string() == "2.7");
    CHECK(s.clauses()[2].op() == SpecOperator::arbitrary);
    CHECK_FALSE(s.clauses()[2].version());
    CHECK(s.clauses()[2].version_text() == "x");
    CHECK(S("").empty());
    CHECK_FALSE(s.empty());

    auto one = Specifier::parse(" <= 2.8 ");
    REQUIRE(one);
    CHECK(one->to_string() == "<=2.8");
    CHECK(one->contains(V("2.8")));
    CHECK_FALSE(one->implies_prereleases());
    CHECK(Specifier::parse(">=2.8rc1")->implies_prereleases());
    CHECK_FALSE(Specifier::parse("!=2.8rc1")->implies_prereleases());
    CHECK(Specifier::parse("<2.8rc1")->implies_prereleases());
    CHECK(Specifier::parse("<2.8rc1")->contains(V("2.8.0b1")));
    CHECK_FALSE(Specifier::parse("<2.8")->contains(V("2.7.0b1")));
    CHECK(Specifier::parse("<2.8")->contains(V("2.7.0b1"), true));
  }

  TEST_CASE("specifier intersect") {
    SpecifierSet a = S(">=2.7,<3");
    SpecifierSet b = S("<3,!=2.7.1");
    SpecifierSet i = a.intersect(b);
    CHECK(i.to_string() == ">=2.7,<3,!=2.7.1");
    CHECK(i.contains(V("2.7.0")));
    CHECK_FALSE(i.contains(V("2.7.1")));
    CHECK_FALSE(i.contains(V("3.0")));
    CHECK(SpecifierSet().intersect(a) == a);
    CHECK(a.intersect(SpecifierSet()) == a);
  }

  TEST_CASE("invalid specifiers: messages name the text") {
    struct Row {
      const char* in;
      const char* contains;
    };
    const Row rows[] = {
        {"2.7", "invalid specifier '2.7': expected an operator (~= == != <= >= < > ===) at column 1"},
        {">=", "invalid specifier '>=': missing version after '>=' at column 3"},
        {">=1.0+cu128", "a local version label is not allowed with '>='"},
        {"~=1", "'~=' needs at least two release components"},
        {"~=1.0+abc", "a local version label is not allowed with '~='"},
        {">=1.*", "'.*' is allowed only with == and !="},
        {"==1.0.dev1.*", "cannot name a dev release or a local label"},
        {"==1.0+abc.*", "cannot name a dev release or a local label"},
        {">=1,,<2", "empty clause at column 5"},
        {",", "empty clause at column 1"},
        {"=>1.0", "expected an operator"},
        {">=1.0a-b", "invalid version '1.0a-b': unexpected '-' at column 5"},
        {"===a b", "unexpected ' ' at column 5"},
    };
    for (const auto& r : rows) {
      CAPTURE(r.in);
      auto s = SpecifierSet::parse(r.in);
      REQUIRE_FALSE(s.has_value());
      CHECK(s.error().code == envfix::ErrorCode::invalid_input);
      CHECK(s.error().render().find(r.contains) != std::string::npos);
    }
    // A bad clause in a list is reported with the list and the clause's column.
    auto e = SpecifierSet::parse(">=1.0, <bad");
    REQUIRE_FALSE(e);
    CHECK(e.error().message == "invalid specifier set '>=1.0, <bad' (clause at column 7)");
  }
}

} // namespace specs_specifier_test
