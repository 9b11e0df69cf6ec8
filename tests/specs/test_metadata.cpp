#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "specs/metadata.hpp"

namespace specs_metadata_test {

using envfix::specs::CoreMetadata;
using envfix::specs::MarkerEnvironment;
using envfix::specs::parse_rfc822;
using envfix::specs::Version;

namespace {
std::string read_fixture(const std::string& dist_info) {
  std::ifstream in(std::string(ENVFIX_FIXTURES_DIR) + "/gpu-h200/dist-info/" + dist_info + "/METADATA", std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
CoreMetadata parse_ok(std::string_view text) {
  auto md = CoreMetadata::parse(text);
  INFO((md ? std::string() : md.error().render()));
  REQUIRE(md.has_value());
  return *md;
}
} // namespace

TEST_SUITE("unit/specs/metadata") {
  TEST_CASE("real METADATA files from the H200 machine") {
    // Expected values: header counts and body sizes (UTF-8 bytes) as Python's email.parser (compat32) reports them.
    struct Row {
      const char* dist_info;
      const char* name;
      const char* version;
      const char* requires_python; // "" = absent
      std::size_t requires_dist;
      std::vector<std::string> extras;
      std::size_t headers;
      std::size_t body_size;
    };
    const Row rows[] = {
        {"nvidia_cudnn_cu13-9.19.0.56.dist-info", "nvidia-cudnn-cu13", "9.19.0.56", ">=3", 1, {}, 47, 72},
        {"torch-2.11.0.dist-info", "torch", "2.11.0", ">=3.10", 17, {"optree", "opt-einsum", "pyyaml"}, 55, 27315},
        {"torchaudio-2.11.0.dist-info", "torchaudio", "2.11.0", "", 0, {}, 37, 5358},
        {"torchvision-0.26.0.dist-info", "torchvision", "0.26.0", ">=3.10,!=3.14.1", 5, {"gdown", "scipy"}, 18, 4910},
        {"triton-3.6.0.dist-info", "triton", "3.6.0", ">=3.10,<3.15", 14, {"build", "tests", "tutorials"}, 46, 0},
    };
    for (const auto& r : rows) {
      CAPTURE(r.dist_info);
      const std::string text = read_fixture(r.dist_info);
      CoreMetadata md = parse_ok(text);
      CHECK(md.name == r.name);
      CHECK(md.version.to_string() == r.version);
      CHECK((md.requires_python ? md.requires_python->to_string() : std::string()) == r.requires_python);
      CHECK(md.requires_dist.size() == r.requires_dist);
      CHECK(md.provides_extra == r.extras);
      CHECK(md.fields.size() == r.headers + (r.body_size ? 1 : 0));
      auto fields = parse_rfc822(text);
      REQUIRE(fields);
      CHECK(fields->size() == md.fields.size());
      if (r.body_size) {
        REQUIRE(md.get("Description"));
        CHECK(md.get("Description")->size() == r.body_size);
      }
      // Every requirement round-trips through its canonical text.
      for (const auto& q : md.requires_dist) {
        auto back = envfix::specs::Requirement::parse(q.to_string());
        REQUIRE(back);
        CHECK(*back == q);
      }
    }
  }

  TEST_CASE("torch 2.11.0 METADATA: dependencies that apply on the H200 host") {
    CoreMetadata md = parse_ok(read_fixture("torch-2.11.0.dist-info"));
    CHECK(md.metadata_version == "2.4");
    CHECK(md.get("Summary") ==
          std::optional<std::string>("Tensors and Dynamic neural networks in Python with strong GPU acceleration"));
    CHECK(md.get_all("Project-URL").size() == 5);
    CHECK(md.get_all("license-file") == std::vector<std::string>{"LICENSE", "NOTICE"});
    CHECK(md.requires_python->contains(*Version::parse("3.12.3")));
    CHECK_FALSE(md.requires_python->contains(*Version::parse("3.9.18")));

    MarkerEnvironment env;
    env.values = {{"platform_system", "Linux"}, {"python_version", "3.12"}, {"sys_platform", "linux"}};
    std::vector<std::string> applies;
    for (const auto& q : md.requires_dist)
      if (q.applies(env)) applies.push_back(q.normalized_name());
    CHECK(applies == std::vector<std::string>{"filelock", "typing-extensions", "setuptools", "sympy", "networkx", "jinja2",
                                              "fsspec", "cuda-toolkit", "cuda-bindings", "nvidia-cudnn-cu13",
                                              "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13", "triton"});
    const auto& cuda = md.requires_dist[7];
    CHECK(cuda.name == "cuda-toolkit");
    CHECK(cuda.extras.size() == 11);
    CHECK(cuda.specifier.to_string() == "==13.0.2");
    std::size_t with_opt = 0;
    for (const auto& q : md.requires_dist)
      if (q.applies(env, {"opt_einsum"})) ++with_opt;
    CHECK(with_opt == applies.size() + 1);
    // The companion pin in torchvision's legacy parenthesized form.
    CoreMetadata tv = parse_ok(read_fixture("torchvision-0.26.0.dist-info"));
    CHECK(tv.requires_dist[1].to_string() == "torch==2.11.0");
    CHECK(tv.requires_dist[2].to_string() == "pillow!=8.3.*,>=5.3.0");
    CHECK(tv.requires_dist[3].to_string() == "gdown>=4.7.3; extra == \"gdown\"");
  }

  TEST_CASE("rfc822: continuation lines, CRLF, body, non-header line (R5.1)") {
    auto f = parse_rfc822("Name: a\r\nSummary: one\r\n  two\r\nKeywords:   x  \r\n\r\nRequires-Dist: not-a-header\r\n");
    REQUIRE(f);
    REQUIRE(f->size() == 4);
    CHECK((*f)[0] == std::pair<std::string, std::string>{"Name", "a"});
    CHECK((*f)[1].second == "one\n  two");
    CHECK((*f)[2].second == "x");
    CHECK((*f)[3].first == "Description");
    CHECK((*f)[3].second == "Requires-Dist: not-a-header\r\n");

    // A line without a colon ends the headers; the rest is the body.
    auto g = parse_rfc822("Name: a\nthis is not a header\nVersion: 1\n");
    REQUIRE(g);
    REQUIRE(g->size() == 2);
    CHECK((*g)[1].second == "this is not a header\nVersion: 1\n");
    // A Description header wins over the body.
    auto h = parse_rfc822("Description: short\n\nbody\n");
    REQUIRE(h);
    CHECK(h->size() == 1);
    auto bad = parse_rfc822("  leading continuation\nName: a\n");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message == "line 1: continuation line '  leading continuation' before any header");
    CHECK(parse_rfc822("")->empty());
  }

  TEST_CASE("core metadata: folded Requires-Dist and header names in any case") {
    CoreMetadata md = parse_ok("metadata-version: 2.1\nNAME: Demo_Pkg\nversion: 1.0-1\n"
                               "Requires-Dist: foo>=1.0\n ; python_version < '3.12'\n"
                               "Requires-Python: >=3.8,\n  <4\n"
                               "Provides-Extra: gpu\n\nRequires-Dist: in-body\n");
    CHECK(md.name == "Demo_Pkg");
    CHECK(md.version.to_string() == "1.0.post1");
    REQUIRE(md.requires_dist.size() == 1);
    CHECK(md.requires_dist[0].to_string() == "foo>=1.0; python_version < \"3.12\"");
    CHECK(md.requires_python->to_string() == ">=3.8,<4");
    CHECK(md.provides_extra == std::vector<std::string>{"gpu"});
  }

  TEST_CASE("core metadata errors name the line and field (R5.2, R5.3)") {
    struct Row {
      const char* text;
      const char* message; // substring of the rendered error
    };
    const Row rows[] = {
        {"Name: a\nVersion: 1\n", "invalid core metadata: no Metadata-Version field"},
        {"Metadata-Version: 2.1\nVersion: 1\n", "no Name field"},
        {"Metadata-Version: 2.1\nName: a\n", "no Version field"},
        {"Metadata-Version: 3.0\nName: a\nVersion: 1\n",
         "invalid core metadata: line 1: Metadata-Version: version 3.0 is newer than this tool understands (2.x)"},
        {"Metadata-Version: two\nName: a\nVersion: 1\n", "line 1: Metadata-Version: 'two' is not of the form M.N"},
        {"Metadata-Version: 2.1\nName: a\nName: b\nVersion: 1\n",
         "line 3: Name: appears again (first at line 2); it may appear only once"},
        {"Metadata-Version: 2.1\nName: -a\nVersion: 1\n", "line 2: Name: '-a' is not a valid project name"},
        {"Metadata-Version: 2.1\nName: a\nVersion: 1.0a-b\n",
         "line 3: Version: bad version\n  caused by: invalid version '1.0a-b': unexpected '-' at column 5"},
        {"Metadata-Version: 2.1\nName: a\nVersion: 1\nRequires-Python: 3\n", "line 4: Requires-Python: bad specifier"},
        {"Metadata-Version: 2.1\nName: a\nVersion: 1\nSummary: x\nRequires-Dist: foo; bar == 'x'\n",
         "line 5: Requires-Dist: bad requirement\n  caused by: invalid requirement 'foo; bar == 'x'': bad marker"},
    };
    for (const auto& r : rows) {
      CAPTURE(r.text);
      auto md = CoreMetadata::parse(r.text);
      REQUIRE_FALSE(md.has_value());
      CHECK(md.error().code == envfix::ErrorCode::invalid_input);
      CHECK(md.error().render().find(r.message) != std::string::npos);
    }
    // A newer minor version is accepted.
    CHECK(CoreMetadata::parse("Metadata-Version: 2.9\nName: a\nVersion: 1\n"));
  }
}

} // namespace specs_metadata_test
