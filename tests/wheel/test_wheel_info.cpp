#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "util/fs.hpp"
#include "wheel/wheel_info.hpp"

namespace wheel_wheel_info_test {

using namespace envfix;
using namespace envfix::wheel;

TEST_SUITE("unit/wheel/wheel_info") {

  TEST_CASE("WheelInfo parses the real WHEEL files of the H200 fixture") {
    const std::filesystem::path base = ENVFIX_FIXTURES_DIR "/gpu-h200/dist-info";
    auto torch = WheelInfo::parse(util::read_file(base / "torch-2.11.0.dist-info/WHEEL").value(), "torch WHEEL").value();
    CHECK(torch.version_major == 1);
    CHECK(torch.version_minor == 0);
    CHECK(!torch.newer_minor);
    CHECK(torch.generator == "setuptools (81.0.0)");
    CHECK(!torch.root_is_purelib);
    REQUIRE(torch.tags.size() == 1);
    CHECK(torch.tags[0].to_string() == "cp312-cp312-manylinux_2_28_x86_64");
    auto triton = WheelInfo::parse(util::read_file(base / "triton-3.6.0.dist-info/WHEEL").value(), "triton WHEEL").value();
    REQUIRE(triton.tags.size() == 2);
    CHECK(triton.tags[0].to_string() == "cp312-cp312-manylinux_2_27_x86_64");
    CHECK(triton.tags[1].to_string() == "cp312-cp312-manylinux_2_28_x86_64");
    CHECK(triton.fields.size() == 5);
    CHECK(torch.build.empty());
    CHECK(torch.fields.size() == 4);

    auto cudnn = WheelInfo::parse(util::read_file(base / "nvidia_cudnn_cu13-9.19.0.56.dist-info/WHEEL").value(), "cudnn").value();
    CHECK(cudnn.root_is_purelib);
    REQUIRE(cudnn.tags.size() == 1);
    CHECK(cudnn.tags[0].to_string() == "py3-none-manylinux_2_27_x86_64");

    std::size_t n = 0;
    for (const auto& dir : std::filesystem::directory_iterator(base)) {
      auto text = util::read_file(dir.path() / "WHEEL").value();
      auto info = WheelInfo::parse(text, dir.path().string());
      REQUIRE(info);
      CHECK(!info->tags.empty());
      // The canonical writer reproduces these setuptools files exactly.
      CHECK(info->to_string() == text.substr(0, text.find("\n\n") == std::string::npos ? text.size() : text.find("\n\n") + 1));
      ++n;
    }
    CHECK(n == 5);
  }

  TEST_CASE("WheelInfo: headers, continuation, case, duplicates, Build, CRLF") {
    auto w = WheelInfo::parse("wheel-version: 1.9\r\nGenerator: bdist_wheel\r\n  (0.41)\r\nRoot-Is-Purelib: TRUE\r\n"
                              "Tag: py2.py3-none-any\r\nWheel-Version: 2.0\r\nBuild: 1abc\r\nX-Custom: kept\r\n\r\n"
                              "Tag: ignored-after-blank-line\r\n",
                              "WHEEL")
                 .value();
    CHECK(w.version_major == 1);
    CHECK(w.version_minor == 9);
    CHECK(w.newer_minor);
    CHECK(w.generator == "bdist_wheel (0.41)");
    CHECK(w.root_is_purelib);
    REQUIRE(w.tags.size() == 2);
    CHECK(w.tags[1].to_string() == "py3-none-any");
    CHECK(w.build == "1abc");
    CHECK(w.fields.back() == std::pair<std::string, std::string>{"X-Custom", "kept"});
    auto again = WheelInfo::parse(w.to_string(), "again").value();
    CHECK(again.version_minor == 9);
    CHECK(again.generator == w.generator);
    CHECK(again.root_is_purelib == w.root_is_purelib);
    CHECK(again.tags == w.tags);
    CHECK(again.build == w.build);
    CHECK(!WheelInfo::parse("Wheel-Version: 1.0\nRoot-Is-Purelib: yes\n", "W").value().root_is_purelib);
    CHECK(!WheelInfo::parse("Wheel-Version: 1.0\n", "W").value().root_is_purelib);
  }

  TEST_CASE("WheelInfo refuses Wheel-Version 2.x and bad text, naming file and line") {
    struct Row {
      const char* text;
      const char* needle;
    };
    for (Row r : {Row{"Generator: x\nWheel-Version: 2.0\n", "WHEEL:2: Wheel-Version 2.0 is not supported"},
                  Row{"Wheel-Version: 1\n", "WHEEL:1: bad Wheel-Version '1'"},
                  Row{"Wheel-Version: one.zero\n", "bad Wheel-Version"}, Row{"Wheel-Version: 0.9\n", "predates 1.0"},
                  Row{"Generator: x\n", "WHEEL: no Wheel-Version header"}, Row{"", "no Wheel-Version"},
                  Row{"Wheel-Version: 1.0\nnot a header\n", "WHEEL:2: expected 'Name: value', found 'not a header'"},
                  Row{"  cont\n", "WHEEL:1: continuation line"},
                  Row{"Wheel-Version: 1.0\nTag: cp311-cp311\n", "WHEEL:2: bad Tag line"}}) {
      CAPTURE(r.text);
      auto w = WheelInfo::parse(r.text, "WHEEL");
      REQUIRE(!w);
      CHECK(w.error().code == ErrorCode::invalid_input);
      CHECK_MESSAGE(w.error().message.find(r.needle) != std::string::npos, w.error().render());
    }
    auto e = WheelInfo::parse("Wheel-Version: 1.0\nTag: cp311-cp311\n", "WHEEL").error();
    REQUIRE(!e.causes.empty());
    CHECK(e.causes[0].find("'cp311-cp311'") != std::string::npos);
    CHECK(!WheelInfo::parse("Wheel-Version: 3.1\n", "W").error().hint.empty());
  }

} // TEST_SUITE

} // namespace wheel_wheel_info_test
