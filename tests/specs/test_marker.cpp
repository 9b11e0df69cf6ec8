#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "specs/marker.hpp"

namespace specs_marker_test {

using envfix::specs::Marker;
using envfix::specs::MarkerEnvironment;

namespace {
Marker M(std::string_view s) {
  auto m = Marker::parse(s);
  INFO("parsing ", std::string(s), ": ", (m ? std::string() : m.error().render()));
  REQUIRE(m.has_value());
  return *m;
}

// The marker environment captured on the H200 machine (CPython 3.12.3, Linux x86_64).
MarkerEnvironment h200_env() {
  std::ifstream in(std::string(ENVFIX_FIXTURES_DIR) + "/gpu-h200/python-probe.json");
  REQUIRE(in.good());
  auto j = nlohmann::json::parse(in);
  MarkerEnvironment env;
  for (auto& [k, v] : j.at("markers").items()) env.values[k] = v.get<std::string>();
  REQUIRE(env.values.size() == 11);
  return env;
}

MarkerEnvironment with(MarkerEnvironment env, const std::string& key, const std::string& value) {
  env.values[key] = value;
  return env;
}
} // namespace

TEST_SUITE("unit/specs/marker") {
  TEST_CASE("marker evaluation table on the H200 environment (R4.2, R4.3)") {
    const MarkerEnvironment env = h200_env();
    CHECK(env.values.at("python_full_version") == "3.12.3");
    struct Row {
      const char* marker;
      bool expected;
    };
    const Row rows[] = {
        {"python_version >= '3.8'", true},
        {"python_version >= \"3.13\"", false},
        {"python_version < '3.13'", true},
        {"python_version > '3.12'", false}, // version semantics, not strings
        {"python_version == '3.12'", true},
        {"python_version == '3.12.0'", true}, // zero padding
        {"python_version == '3.*'", true},    // prefix match
        {"python_version != '3.12.*'", false},
        {"python_version ~= '3.10'", true},
        {"python_version > '3.9'", true},  // "3.12" > "3.9" as versions, not as strings
        {"'3.8' <= python_version", true}, // the variable on the right
        {"'3.13' <= python_version", false},
        {"python_full_version >= '3.12.1'", true},
        {"python_full_version < '3.12.3'", false},
        {"implementation_version == '3.12.3'", true},
        {"os_name == 'posix'", true},
        {"os_name == 'nt'", false},
        {"sys_platform == 'linux'", true},
        {"sys_platform != 'win32'", true},
        {"sys_platform > 'lin'", false}, // strings have no order (current spec)
        {"sys_platform < 'zzz'", false},
        {"sys_platform >= 'linux'", true}, // >= on strings is ==
        {"sys_platform <= 'lin'", false},
        {"platform_machine == 'x86_64'", true},
        {"platform_machine in 'x86_64 aarch64'", true},
        {"platform_machine not in 'x86_64 aarch64'", false},
        {"'86' in platform_machine", true},
        {"platform_python_implementation == 'CPython'", true},
        {"platform_python_implementation == 'cpython'", false}, // case-sensitive
        {"implementation_name == 'cpython'", true},
        {"platform_system == 'Linux'", true},
        {"platform_system == \"Linux\" and platform_machine == \"x86_64\"", true},
        {"platform_system == 'Windows' or platform_machine == 'x86_64'", true},
        {"platform_system == 'Windows' or platform_machine == 'aarch64'", false},
        {"'SMP' in platform_version", true},
        {"platform_version not in 'SMP'", true},
        {"platform_release >= '5.0'", false}, // '6.18.44-fc-v657-gpu' is no version: string rules
        {"platform_release == '6.18.44-fc-v657-gpu'", true},
        {"'fc' in platform_release", true},
        {"(os_name == 'nt' or sys_platform == 'linux') and python_version >= '3'", true},
        {"os_name == 'nt' or sys_platform == 'linux' and python_version < '3'", false}, // and binds tighter
        {"(os_name == 'nt' or sys_platform == 'linux') and python_version < '3'", false},
        {"os_name == 'posix' and (python_version < '3' or (sys_platform == 'linux' and 'a' == 'a'))", true},
        {"extra == 'gpu'", false}, // no extras requested
        {"extra != 'gpu'", true},
        {"os.name == 'posix'", true}, // legacy spelling
        {"python_implementation == 'CPython'", true},
    };
    for (const auto& r : rows) {
      CAPTURE(r.marker);
      CHECK(M(r.marker).evaluate(env) == r.expected);
    }
  }

  TEST_CASE("marker: version-valued variables use PEP 440 with pre-releases allowed (Appendix B)") {
    const MarkerEnvironment rc = with(h200_env(), "python_full_version", "3.13.0rc1");
    CHECK(M("python_full_version >= '3.12'").evaluate(rc));
    CHECK_FALSE(M("python_full_version >= '3.13'").evaluate(rc));
    CHECK_FALSE(M("python_full_version < '3.13'").evaluate(rc)); // `<V` never admits V's own pre-releases
    CHECK(M("python_full_version < '3.13.1'").evaluate(rc));
    // platform_release that parses as a version compares as one.
    const MarkerEnvironment rel = with(h200_env(), "platform_release", "6.8.0");
    CHECK(M("platform_release >= '5.0'").evaluate(rel));
    CHECK_FALSE(M("platform_release < '5.0'").evaluate(rel));
    // A missing variable reads "0" (version) or "" (string).
    MarkerEnvironment empty;
    CHECK(M("python_version < '3'").evaluate(empty));
    CHECK(M("sys_platform == ''").evaluate(empty));
  }

  TEST_CASE("marker: extras are normalized on both sides (PEP 685, R4.4)") {
    const MarkerEnvironment env = h200_env();
    Marker m = M("extra == 'opt-einsum'");
    CHECK(m.evaluate(env, {"opt-einsum"}));
    CHECK(m.evaluate(env, {"opt_einsum"}));
    CHECK(m.evaluate(env, {"Opt.Einsum"}));
    CHECK(m.evaluate(env, {"pyyaml", "opt-einsum"}));
    CHECK_FALSE(m.evaluate(env, {"pyyaml"}));
    CHECK_FALSE(m.evaluate(env));
    CHECK(M("extra == 'Foo_Bar'").evaluate(env, {"foo-bar"}));
    CHECK(M("'gpu' == extra").evaluate(env, {"GPU"}));
    CHECK(M("extra == 'gpu' and sys_platform == 'linux'").evaluate(env, {"gpu"}));
    CHECK_FALSE(M("extra == 'gpu' and sys_platform == 'win32'").evaluate(env, {"gpu"}));
  }

  TEST_CASE("marker to_string is canonical and round-trips") {
    struct Row {
      const char* in;
      const char* out;
    };
    const Row rows[] = {
        {"python_version>='3.8'", "python_version >= \"3.8\""},
        {"  os_name=='posix'  ", "os_name == \"posix\""},
        {"'3.8' <= python_version", "\"3.8\" <= python_version"},
        {"platform_version == '\"x\"'", "platform_version == '\"x\"'"},
        {"a_b == 'x'", ""},
        {"(os_name == 'nt' or sys_platform == 'linux') and python_version >= '3'",
         "(os_name == \"nt\" or sys_platform == \"linux\") and python_version >= \"3\""},
        {"os_name == 'nt' or (sys_platform == 'linux' and python_version >= '3')",
         "os_name == \"nt\" or sys_platform == \"linux\" and python_version >= \"3\""},
        {"((os_name == 'a'))", "os_name == \"a\""},
        {"os_name == 'a' and (os_name == 'b' and os_name == 'c')", "os_name == \"a\" and os_name == \"b\" and os_name == \"c\""},
        {"os_name not   in 'a'", "os_name not in \"a\""},
        {"os.name == 'posix'", "os_name == \"posix\""},
        {"extra == \"Opt_Einsum\"", "extra == \"Opt_Einsum\""},
        {"platform_machine in 'x86_64 aarch64'and os_name=='posix'",
         "platform_machine in \"x86_64 aarch64\" and os_name == \"posix\""},
    };
    for (const auto& r : rows) {
      CAPTURE(r.in);
      if (std::string_view(r.out).empty()) continue;
      Marker m = M(r.in);
      CHECK(m.to_string() == r.out);
      Marker back = M(m.to_string());
      CHECK(back == m);
      CHECK(back.to_string() == m.to_string());
    }
  }

  TEST_CASE("invalid markers: messages name the text and the column") {
    struct Row {
      const char* in;
      const char* message;
    };
    const Row rows[] = {
        {"python_version", "invalid marker 'python_version': expected a comparison operator (== != <= >= < > ~= === in, "
                           "not in), found end at column 15"},
        {"python_version >= ", "invalid marker 'python_version >= ': expected a marker variable or a quoted string, "
                               "found end at column 19"},
        {"foo == 'x'", "invalid marker 'foo == 'x'': unknown marker variable 'foo', found 'f' at column 1"},
        {"os_name == 'x", "invalid marker 'os_name == 'x': unterminated string, found ''' at column 12"},
        {"os_name == 'x' and", "invalid marker 'os_name == 'x' and': expected a marker variable or a quoted string, "
                               "found end at column 19"},
        {"(os_name == 'x'", "invalid marker '(os_name == 'x'': expected ')', found end at column 16"},
        {"os_name == 'x' xor os_name == 'y'",
         "invalid marker 'os_name == 'x' xor os_name == 'y'': expected 'and', 'or' or end of marker, found 'x' at column 16"},
        {"os_name not 'x'", "invalid marker 'os_name not 'x'': expected 'in' after 'not', found ''' at column 13"},
        {"'3.4' < python_version < '3.9'",
         "invalid marker ''3.4' < python_version < '3.9'': expected 'and', 'or' or end of marker, found '<' at column 24"},
        {"", "invalid marker '': expected a marker variable or a quoted string, found end at column 1"},
    };
    for (const auto& r : rows) {
      CAPTURE(r.in);
      auto m = Marker::parse(r.in);
      REQUIRE_FALSE(m.has_value());
      CHECK(m.error().message == r.message);
    }
    std::string deep(200, '(');
    deep += "os_name == 'x'";
    deep += std::string(200, ')');
    auto m = Marker::parse(deep);
    REQUIRE_FALSE(m);
    CHECK(m.error().message.find("nested too deeply") != std::string::npos);
  }
}

} // namespace specs_marker_test
