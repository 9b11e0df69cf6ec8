#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "specs/name.hpp"
#include "specs/requirement.hpp"

namespace specs_requirement_test {

using envfix::specs::MarkerEnvironment;
using envfix::specs::Requirement;
using envfix::specs::Version;

namespace {
Requirement R(std::string_view s) {
  auto r = Requirement::parse(s);
  INFO("parsing ", std::string(s), ": ", (r ? std::string() : r.error().render()));
  REQUIRE(r.has_value());
  return *r;
}
MarkerEnvironment linux_311() {
  MarkerEnvironment env;
  env.values = {{"implementation_name", "cpython"},
                {"implementation_version", "3.11.7"},
                {"os_name", "posix"},
                {"platform_machine", "x86_64"},
                {"platform_release", "6.18.44-fc-v657"},
                {"platform_system", "Linux"},
                {"platform_version", "#1 SMP PREEMPT_DYNAMIC @0"},
                {"python_full_version", "3.11.7"},
                {"platform_python_implementation", "CPython"},
                {"python_version", "3.11"},
                {"sys_platform", "linux"}};
  return env;
}
} // namespace

TEST_SUITE("unit/specs/requirement") {
  TEST_CASE("project names (R1.1, R1.2)") {
    using envfix::specs::is_valid_project_name;
    using envfix::specs::normalize_name;
    CHECK(normalize_name("Foo.Bar_baz") == "foo-bar-baz");
    CHECK(normalize_name("nvidia_cudnn_cu13") == "nvidia-cudnn-cu13");
    CHECK(normalize_name("a--_.b") == "a-b");
    CHECK(normalize_name("TORCH") == "torch");
    CHECK(normalize_name("typing-extensions") == "typing-extensions");
    CHECK(is_valid_project_name("torch"));
    CHECK(is_valid_project_name("A"));
    CHECK(is_valid_project_name("zope.interface"));
    CHECK(is_valid_project_name("nvidia_cudnn-cu13"));
    CHECK_FALSE(is_valid_project_name(""));
    CHECK_FALSE(is_valid_project_name("-torch"));
    CHECK_FALSE(is_valid_project_name("torch_"));
    CHECK_FALSE(is_valid_project_name("tor ch"));
    CHECK_FALSE(is_valid_project_name("torch+cu128"));
  }

  TEST_CASE("requirement parse: fields, canonical text and round trip (R4.1)") {
    struct Row {
      const char* in;
      const char* name;
      const char* extras; // comma-joined
      const char* spec;
      const char* url;
      const char* marker;
      const char* out;
    };
    const Row rows[] = {
        {"torch", "torch", "", "", "", "", "torch"},
        {"  torch  ", "torch", "", "", "", "", "torch"},
        {"torch>=2.7", "torch", "", ">=2.7", "", "", "torch>=2.7"},
        {"torch >= 2.7 , < 3", "torch", "", ">=2.7,<3", "", "", "torch>=2.7,<3"},
        {"torch (>=2.7,<3)", "torch", "", ">=2.7,<3", "", "", "torch>=2.7,<3"},
        {"zope.interface (>3.5.0)", "zope.interface", "", ">3.5.0", "", "", "zope.interface>3.5.0"},
        {"torch==2.7.0+cu128", "torch", "", "==2.7.0+cu128", "", "", "torch==2.7.0+cu128"},
        {"torch==2.7.*", "torch", "", "==2.7.*", "", "", "torch==2.7.*"},
        {"torch[opt-einsum,Optree]>=2", "torch", "Optree,opt-einsum", ">=2", "", "", "torch[Optree,opt-einsum]>=2"},
        {"torch[ b , a ]", "torch", "a,b", "", "", "", "torch[a,b]"},
        {"torch[]", "torch", "", "", "", "", "torch"},
        {"cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2; "
         "platform_system == \"Linux\"",
         "cuda-toolkit", "cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx", "==13.0.2", "",
         "platform_system == \"Linux\"",
         "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2; "
         "platform_system == \"Linux\""},
        {"cuda-bindings<14,>=13.0.3; platform_system == \"Linux\"", "cuda-bindings", "", "<14,>=13.0.3", "",
         "platform_system == \"Linux\"", "cuda-bindings<14,>=13.0.3; platform_system == \"Linux\""},
        {"nvidia-cuda-runtime-cu12==12.8.57; platform_system == 'Linux' and platform_machine == 'x86_64'",
         "nvidia-cuda-runtime-cu12", "", "==12.8.57", "", "platform_system == \"Linux\" and platform_machine == \"x86_64\"",
         "nvidia-cuda-runtime-cu12==12.8.57; platform_system == \"Linux\" and platform_machine == \"x86_64\""},
        {"pyyaml;extra=='pyyaml'", "pyyaml", "", "", "", "extra == \"pyyaml\"", "pyyaml; extra == \"pyyaml\""},
        {"name @ https://example.com/name-1.0-py3-none-any.whl", "name", "", "", "https://example.com/name-1.0-py3-none-any.whl",
         "", "name @ https://example.com/name-1.0-py3-none-any.whl"},
        {"name[x]@ file:///tmp/x.whl ; os_name=='posix'", "name", "x", "", "file:///tmp/x.whl", "os_name == \"posix\"",
         "name[x] @ file:///tmp/x.whl ; os_name == \"posix\""},
        {"name @ https://h/x;y", "name", "", "", "https://h/x;y", "", "name @ https://h/x;y"}, // ';' inside the URL
        {"typing-extensions>=4.10.0", "typing-extensions", "", ">=4.10.0", "", "", "typing-extensions>=4.10.0"},
        {"foo>=1.0\n  ; python_version < '3.12'", "foo", "", ">=1.0", "", "python_version < \"3.12\"",
         "foo>=1.0; python_version < \"3.12\""},
        {"foo>=1.0,", "foo", "", ">=1.0", "", "", "foo>=1.0"},
        {"A.B-C_D===weird", "A.B-C_D", "", "===weird", "", "", "A.B-C_D===weird"},
    };
    for (const auto& r : rows) {
      CAPTURE(r.in);
      Requirement q = R(r.in);
      CHECK(q.name == r.name);
      std::string extras;
      for (const auto& e : q.extras) extras += (extras.empty() ? "" : ",") + e;
      CHECK(extras == r.extras);
      CHECK(q.specifier.to_string() == r.spec);
      CHECK(q.url == r.url);
      CHECK((q.marker ? q.marker->to_string() : std::string()) == r.marker);
      CHECK(q.to_string() == r.out);
      Requirement back = R(q.to_string());
      CHECK(back == q);
      CHECK(back.to_string() == q.to_string());
    }
    CHECK(R("Foo.Bar_baz>=1").normalized_name() == "foo-bar-baz");
  }

  TEST_CASE("requirement applies: markers and extras for the target (R4.4, R4.6)") {
    const MarkerEnvironment env = linux_311();
    CHECK(R("filelock").applies(env));
    CHECK(R("filelock").applies(env, {"gpu"}));
    CHECK(R("triton==3.6.0; platform_system == \"Linux\"").applies(env));
    MarkerEnvironment mac = env;
    mac.values["platform_system"] = "Darwin";
    CHECK_FALSE(R("triton==3.6.0; platform_system == \"Linux\"").applies(mac));
    CHECK_FALSE(R("optree>=0.13.0; extra == \"optree\"").applies(env));
    CHECK(R("optree>=0.13.0; extra == \"optree\"").applies(env, {"optree"}));
    CHECK(R("opt-einsum>=3.3; extra == \"opt-einsum\"").applies(env, {"opt_einsum"}));
    CHECK_FALSE(R("x; python_version < '3.10'").applies(env));
    CHECK(R("x; python_version >= '3.10' and python_version < '3.12'").applies(env));
    // The spec's version check is part of the requirement.
    auto q = R("torch==2.7.0");
    CHECK(q.specifier.contains(*Version::parse("2.7.0+cu128")));
  }

  TEST_CASE("invalid requirements: messages name the text and the column") {
    struct Row {
      const char* in;
      const char* text; // substring of the rendered error
    };
    const Row rows[] = {
        {"", "invalid requirement '': expected a project name, found end at column 1"},
        {">=1.0", "invalid requirement '>=1.0': expected a project name, found '>' at column 1"},
        {"torch-", "invalid requirement 'torch-': expected a version specifier, '@', ';' or end, found '-' at column 6"},
        {"torch[gpu", "invalid requirement 'torch[gpu': expected ',' or ']' in extras, found end at column 10"},
        {"torch[,]", "expected an extra name, found ',' at column 7"},
        {"torch 2.7", "expected a version specifier, '@', ';' or end, found '2' at column 7"},
        {"torch (>=2.7", "expected ')' to close the version specifier"},
        {"torch>=2.7x!", "invalid requirement 'torch>=2.7x!': bad version specifier at column 6"},
        {"torch>=2.7x!", "invalid version '2.7x!'"},
        {"torch; foo == 'x'", "invalid requirement 'torch; foo == 'x'': bad marker at column 7"},
        {"torch; foo == 'x'", "unknown marker variable 'foo'"},
        {"name @ ", "expected a URL after '@', found end at column 8"},
        {"name @ https://x y", "expected ';' or end after the URL, found 'y' at column 18"},
        {"torch>=1.0+cu128", "a local version label is not allowed with '>='"},
    };
    for (const auto& r : rows) {
      CAPTURE(r.in);
      auto q = Requirement::parse(r.in);
      REQUIRE_FALSE(q.has_value());
      CHECK(q.error().code == envfix::ErrorCode::invalid_input);
      CHECK(q.error().render().find(r.text) != std::string::npos);
    }
  }
}

} // namespace specs_requirement_test
