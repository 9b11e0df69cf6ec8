#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "specs/wheel_filename.hpp"

namespace specs_wheel_filename_test {

using namespace envfix;
using namespace envfix::specs;

namespace {
std::vector<std::string> strings(const std::vector<Tag>& tags) {
  std::vector<std::string> out;
  for (const auto& t : tags) out.push_back(t.to_string());
  return out;
}
TagEnvironment env(int minor, std::pair<int, int> glibc, std::string arch) {
  TagEnvironment e;
  e.minor = minor;
  e.glibc = glibc;
  e.arch = std::move(arch);
  return e;
}
} // namespace

TEST_SUITE("unit/specs/wheel_filename") {

  TEST_CASE("WheelFilename parses real names (R2.10, R2.3) and round-trips") {
    struct Row {
      const char* file;
      const char* name;
      const char* normalized;
      const char* version;
      std::vector<std::string> tags;
    };
    std::vector<Row> rows = {
        {"torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl", "torch", "torch", "2.7.0", {"cp311-cp311-manylinux_2_28_x86_64"}},
        {"torch-2.7.0+cu128-cp310-cp310-manylinux_2_28_aarch64.whl",
         "torch",
         "torch",
         "2.7.0+cu128",
         {"cp310-cp310-manylinux_2_28_aarch64"}},
        {"torch-2.6.0.dev20250102+cu126-cp39-cp39-linux_aarch64.whl",
         "torch",
         "torch",
         "2.6.0.dev20250102+cu126",
         {"cp39-cp39-linux_aarch64"}},
        {"numpy-2.2.3-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
         "numpy",
         "numpy",
         "2.2.3",
         {"cp312-cp312-manylinux_2_17_x86_64", "cp312-cp312-manylinux2014_x86_64"}},
        {"nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl",
         "nvidia_cudnn_cu13",
         "nvidia-cudnn-cu13",
         "9.19.0.56",
         {"py3-none-manylinux_2_27_x86_64"}},
        {"six-1.16.0-py2.py3-none-any.whl", "six", "six", "1.16.0", {"py2-none-any", "py3-none-any"}},
        {"Foo.Bar-1.0-PY3-None-Any.whl", "Foo.Bar", "foo-bar", "1.0", {"py3-none-any"}},
        {"torchvision-0.26.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
         "torchvision",
         "torchvision",
         "0.26.0+cu130",
         {"cp312-cp312-manylinux_2_28_x86_64"}},
    };
    for (const auto& r : rows) {
      CAPTURE(r.file);
      auto w = WheelFilename::parse(r.file);
      REQUIRE_MESSAGE(w, (w ? "" : w.error().render()));
      CHECK(w->name == r.name);
      CHECK(w->normalized_name() == r.normalized);
      CHECK(w->version == Version::parse(r.version).value());
      CHECK(w->version.to_string() == r.version);
      CHECK(!w->build);
      CHECK(strings(w->tags()) == r.tags);
      CHECK(w->to_string() == r.file);
      CHECK(WheelFilename::parse(w->to_string()).value() == *w);
    }
    auto torch = WheelFilename::parse("torch-2.7.0+cu128-cp310-cp310-manylinux_2_28_aarch64.whl").value();
    CHECK(torch.version.local() == "cu128");
    CHECK(torch.python_tags == std::vector<std::string>{"cp310"});
    CHECK(torch.platform_tags == std::vector<std::string>{"manylinux_2_28_aarch64"});
    auto nightly = WheelFilename::parse("torch-2.6.0.dev20250102+cu126-cp39-cp39-linux_aarch64.whl").value();
    CHECK(nightly.version.is_devrelease());
    CHECK(nightly.version.dev() == 20250102u);
  }

  TEST_CASE("WheelFilename build tags sort as (int, str), absent below any (R2.1)") {
    auto a = WheelFilename::parse("pkg-1.0-1-py3-none-any.whl").value();
    auto b = WheelFilename::parse("pkg-1.0-1abc-py3-none-any.whl").value();
    auto c = WheelFilename::parse("pkg-1.0-10-py3-none-any.whl").value();
    auto none = WheelFilename::parse("pkg-1.0-py3-none-any.whl").value();
    REQUIRE(a.build);
    CHECK(a.build == std::pair<std::uint64_t, std::string>{1, ""});
    CHECK(b.build == std::pair<std::uint64_t, std::string>{1, "abc"});
    CHECK(none.build < a.build);
    CHECK(a.build < b.build);
    CHECK(b.build < c.build); // 10 > 1 numerically, not as text
    CHECK(b.to_string() == "pkg-1.0-1abc-py3-none-any.whl");
    CHECK(WheelFilename::parse("pkg-1.0-007x-py3-none-any.whl").value().to_string() == "pkg-1.0-7x-py3-none-any.whl");
  }

  TEST_CASE("WheelFilename normalizes the version but keeps the name as written") {
    auto w = WheelFilename::parse("My_Pkg-1.0.0RC1-py3-none-any.whl").value();
    CHECK(w.name == "My_Pkg");
    CHECK(w.normalized_name() == "my-pkg");
    CHECK(w.version.to_string() == "1.0.0rc1");
    CHECK(w.to_string() == "My_Pkg-1.0.0rc1-py3-none-any.whl");
    CHECK(WheelFilename::parse(w.to_string()).value() == w);
  }

  TEST_CASE("WheelFilename errors name the file and point at the bad part") {
    struct Row {
      const char* file;
      const char* needle;
      std::size_t caret;
    };
    for (Row r : {Row{"torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.zip", "extension must be '.whl'", 45},
                  Row{"torch-2.7.0-cp311-manylinux_2_28_x86_64.whl", "expected 4 or 5 '-' separators, found 3", 17},
                  Row{"a-b-c-d-e-f-g.whl", "found 6", 11}, Row{"to__rch-2.7.0-py3-none-any.whl", "'__' in the project name", 2},
                  Row{"to+rch-2.7.0-py3-none-any.whl", "invalid character in the project name", 2},
                  Row{"-2.7.0-py3-none-any-x.whl", "empty project name", 0},
                  Row{"torch-2.7.0-x1-py3-none-any.whl", "build tag must start with a number", 12},
                  Row{"torch-2.7.0-99999999999999999999999-py3-none-any.whl", "build tag", 12},
                  Row{"torch-2.7.0-py3..py2-none-any.whl", "empty compatibility tag", 16},
                  Row{"torch-2.7.0-py3-no+ne-any.whl", "invalid character in a compatibility tag", 18},
                  Row{"torch-2.7.0-py3-none-.whl", "empty compatibility tag", 21}}) {
      CAPTURE(r.file);
      auto w = WheelFilename::parse(r.file);
      REQUIRE(!w);
      CHECK(w.error().code == ErrorCode::invalid_input);
      const std::string& m = w.error().message;
      CHECK_MESSAGE(m.find(r.needle) != std::string::npos, m);
      CHECK(m.find(std::string("'") + r.file + "'") != std::string::npos);
      // The caret line sits under the offending column.
      std::string caret_line = "\n  " + std::string(r.caret, ' ') + "^";
      CHECK_MESSAGE(m.ends_with(caret_line), m);
    }
    // A bad version keeps the version parser's own message as the cause.
    auto bad = WheelFilename::parse("torch-2.7.0_@x-py3-none-any.whl");
    REQUIRE(!bad);
    CHECK(bad.error().message.find("invalid version '2.7.0_@x'") != std::string::npos);
    CHECK(!bad.error().causes.empty());
  }

  TEST_CASE("WheelFilename::best_rank orders files for an interpreter (R2.9)") {
    TagRanking x86(supported_tags(env(11, {2, 36}, "x86_64")));
    auto rank = [&](const char* f) { return WheelFilename::parse(f).value().best_rank(x86); };
    auto many = rank("numpy-2.2.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
    auto abi3 = rank("pkg-1.0-cp39-abi3-manylinux_2_28_x86_64.whl");
    auto pure = rank("six-1.16.0-py2.py3-none-any.whl");
    REQUIRE(many);
    REQUIRE(abi3);
    REQUIRE(pure);
    CHECK(*many < *abi3);
    CHECK(*abi3 < *pure);
    CHECK(!rank("torch-2.7.0+cu128-cp310-cp310-manylinux_2_28_x86_64.whl"));  // python-tag
    CHECK(!rank("torch-2.7.0+cu128-cp311-cp311-manylinux_2_28_aarch64.whl")); // platform
    CHECK(!rank("torch-2.7.0-cp311-cp311-manylinux_2_39_x86_64.whl"));        // glibc too old
    CHECK(!rank("torch-2.7.0-cp311-cp311-win_amd64.whl"));
    TagRanking centos7(supported_tags(env(11, {2, 17}, "x86_64")));
    CHECK(!WheelFilename::parse("torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl").value().best_rank(centos7));
    TagRanking ubuntu2004(supported_tags(env(11, {2, 31}, "x86_64")));
    CHECK(WheelFilename::parse("torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl").value().best_rank(ubuntu2004));
  }

} // TEST_SUITE

} // namespace specs_wheel_filename_test
