// The generic resolver over an in-memory index: choices, the pre-release and local-label rules,
// markers and extras, tags, yanked files, hashes, backtracking and the explanations of failure.
#include <doctest/doctest.h>

#include "resolver/memory_provider.hpp"
#include "resolver/resolver.hpp"
#include "tests/resolver/resolver_test_support.hpp"

namespace resolver_resolver_test {

using namespace envfix;
using namespace envfix::resolver;
using namespace envfix::resolver::test;

namespace {

Expected<Resolution> run(MemoryProvider& p, const std::vector<std::string>& r, ResolveOptions o = {}) {
  if (o.target.tags.empty()) o.target = cpython_linux();
  Resolver res(p, std::move(o));
  return res.resolve(reqs(r));
}

bool has_rejection(const Resolution& r, std::string_view file, RejectReason why) {
  for (const auto& x : r.rejected)
    if (x.filename == file && x.reason == why) return true;
  return false;
}

} // namespace

TEST_SUITE("unit/resolver/resolver") {

  TEST_CASE("newest versions and their dependencies") {
    MemoryProvider p;
    p.add_wheel("a-1.0-py3-none-any.whl", {"b>=1"});
    p.add_wheel("a-2.0-py3-none-any.whl", {"b>=2", "c"});
    p.add_wheel("b-1.0-py3-none-any.whl");
    p.add_wheel("b-2.5-py3-none-any.whl");
    p.add_wheel("c-0.1-py3-none-any.whl");
    p.add_wheel("unused-9.0-py3-none-any.whl");
    auto r = run(p, {"a"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "a==2.0 b==2.5 c==0.1");
    CHECK(r->find("b")->required_by == std::vector<std::string>{"a==2.0"});
    CHECK(r->find("a")->required_by == std::vector<std::string>{"<request>"});
    CHECK(r->find("a")->file.filename == "a-2.0-py3-none-any.whl");
  }

  TEST_CASE("required_through: what a framework's set brings, apart from what the request named beside it") {
    MemoryProvider p;
    p.add_wheel("torch-2.7.0-py3-none-any.whl", {"nvidia-cublas-cu12", "filelock"});
    p.add_wheel("nvidia_cublas_cu12-12.8.3-py3-none-any.whl", {"nvidia-cuda-nvrtc-cu12"});
    p.add_wheel("nvidia_cuda_nvrtc_cu12-12.8.1-py3-none-any.whl");
    p.add_wheel("filelock-3.0-py3-none-any.whl");
    p.add_wheel("xformers-0.0.30-py3-none-any.whl", {"torch==2.7.0", "numpy"});
    p.add_wheel("numpy-2.2.6-py3-none-any.whl");
    auto r = run(p, {"torch", "xformers"});
    REQUIRE(r.has_value());
    CHECK(r->required_through({"torch"}) == std::set<std::string>{"filelock", "nvidia-cublas-cu12", "nvidia-cuda-nvrtc-cu12"});
    CHECK(r->required_through({"xformers"}) ==
          std::set<std::string>{"filelock", "numpy", "nvidia-cublas-cu12", "nvidia-cuda-nvrtc-cu12", "torch"});
    CHECK(r->required_through({}).empty());
  }

  TEST_CASE("pre-releases only when named or when nothing else fits") {
    MemoryProvider p;
    p.add_wheel("a-1.0-py3-none-any.whl");
    p.add_wheel("a-2.0b1-py3-none-any.whl");
    p.add_wheel("only-3.0rc1-py3-none-any.whl");
    auto r = run(p, {"a", "only"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "a==1.0 only==3.0rc1");
    r = run(p, {"a>=2.0b1"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "a==2.0b1");
    ResolveOptions pre;
    pre.prereleases = PrereleasePolicy::allow;
    r = run(p, {"a"}, pre);
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "a==2.0b1");
    // <2.0 excludes 2.0 pre-releases even when allowed (PEP 440, "Exclusive ordered comparison").
    r = run(p, {"a<2.0"}, pre);
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "a==1.0");
  }

  TEST_CASE("==X matches X+local; nightlies are pre-releases") {
    MemoryProvider p;
    p.add_wheel("torch-2.7.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl");
    p.add_wheel("torch-2.8.0.dev20250501+cu128-cp311-cp311-manylinux_2_28_x86_64.whl");
    auto r = run(p, {"torch==2.7.0"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "torch==2.7.0+cu128");
    r = run(p, {"torch"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "torch==2.7.0+cu128");
    r = run(p, {"torch>=2.8.0.dev0"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "torch==2.8.0.dev20250501+cu128");
    r = run(p, {"torch>2.7.0"}); // PEP 440: > excludes 2.7.0+local; only the nightly is left
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "torch==2.8.0.dev20250501+cu128");
  }

  TEST_CASE("markers are evaluated for the target interpreter; extras pull their dependencies") {
    MemoryProvider p;
    p.add_wheel("app-1.0-py3-none-any.whl",
                {"old ; python_version < \"3.8\"", "new ; python_version >= \"3.8\"", "fast ; extra == \"speed\""});
    p.add_wheel("old-1.0-py3-none-any.whl");
    p.add_wheel("new-1.0-py3-none-any.whl");
    p.add_wheel("fast-1.0-py3-none-any.whl");
    p.add(index::Candidate{.filename = "app-1.0-py3-none-any.whl", .sha256 = "00"},
          "Metadata-Version: 2.1\nName: app\nVersion: 1.0\nProvides-Extra: speed\n"
          "Requires-Dist: old ; python_version < \"3.8\"\nRequires-Dist: new ; python_version >= \"3.8\"\n"
          "Requires-Dist: fast ; extra == \"speed\"\n");
    auto r = run(p, {"app"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "app==1.0 new==1.0");
    r = run(p, {"app[speed]"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "app==1.0 fast==1.0 new==1.0");
    CHECK(r->find("app")->extras == std::vector<std::string>{"speed"});
    // A root requirement whose marker is false for the target is ignored.
    r = run(p, {"app", "old ; sys_platform == \"win32\""});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "app==1.0 new==1.0");
  }

  TEST_CASE("wheel tags: interpreter, manylinux level, best tag per version") {
    MemoryProvider p;
    p.add_wheel("np-2.0-cp312-cp312-manylinux_2_17_x86_64.whl");
    p.add_wheel("np-1.9-cp311-cp311-manylinux_2_28_x86_64.whl");
    p.add_wheel("np-1.8-cp311-cp311-manylinux_2_17_x86_64.whl");
    p.add_wheel("np-1.8-py3-none-any.whl");
    ResolveOptions o;
    o.target = cpython_linux(11, 27); // glibc 2.27: manylinux_2_28 is too new
    auto r = run(p, {"np"}, o);
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "np==1.8");
    CHECK(r->find("np")->file.filename == "np-1.8-cp311-cp311-manylinux_2_17_x86_64.whl");
    CHECK(has_rejection(*r, "np-2.0-cp312-cp312-manylinux_2_17_x86_64.whl", RejectReason::python_tag));
    CHECK(has_rejection(*r, "np-1.9-cp311-cp311-manylinux_2_28_x86_64.whl", RejectReason::platform));
    o.target = cpython_linux(11, 36);
    r = run(p, {"np"}, o);
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "np==1.9");
    // Each target's tags are ranked once per process (resolver.cpp tag_match): going back to the
    // first target finds its own ranking again, not the last one built.
    o.target = cpython_linux(11, 27);
    r = run(p, {"np"}, o);
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "np==1.8");
  }

  TEST_CASE("Requires-Python from the index and from METADATA") {
    MemoryProvider p;
    p.add(index::Candidate{.filename = "x-3.0-py3-none-any.whl", .sha256 = "00", .requires_python = ">=3.12"},
          "Metadata-Version: 2.1\nName: x\nVersion: 3.0\nRequires-Python: >=3.12\n");
    p.add_wheel("x-2.0-py3-none-any.whl", {}, ">=3.12"); // only METADATA says it
    p.add_wheel("x-1.0-py3-none-any.whl", {}, ">=3.8");
    auto r = run(p, {"x"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "x==1.0");
    CHECK(has_rejection(*r, "x-3.0-py3-none-any.whl", RejectReason::requires_python));
    auto only = run(p, {"x>=2"});
    REQUIRE_FALSE(only.has_value());
    CHECK(only.error().code == ErrorCode::unsatisfiable);
    CHECK(only.error().render().find("Python>=3.12") != std::string::npos);
  }

  TEST_CASE("yanked files only when pinned exactly; unhashed files refused unless allowed") {
    MemoryProvider p;
    p.add(index::Candidate{.filename = "y-2.0-py3-none-any.whl", .sha256 = "00", .yanked = true, .yanked_reason = "broken"},
          "Metadata-Version: 2.1\nName: y\nVersion: 2.0\n");
    p.add_wheel("y-1.0-py3-none-any.whl");
    p.add(index::Candidate{.filename = "h-1.0-py3-none-any.whl"}, "Metadata-Version: 2.1\nName: h\nVersion: 1.0\n");
    auto r = run(p, {"y"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "y==1.0");
    CHECK(has_rejection(*r, "y-2.0-py3-none-any.whl", RejectReason::yanked));
    r = run(p, {"y==2.0"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "y==2.0");
    auto h = run(p, {"h"});
    REQUIRE_FALSE(h.has_value());
    CHECK(h.error().render().find("hash-missing") != std::string::npos);
    ResolveOptions o;
    o.allow_unhashed = true;
    h = run(p, {"h"}, o);
    REQUIRE(h.has_value());
    CHECK(pins_text(*h) == "h==1.0");
  }

  TEST_CASE("backtracking: the newest of one package forces an older other") {
    MemoryProvider p;
    p.add_wheel("a-2.0-py3-none-any.whl", {"c==1.*"});
    p.add_wheel("b-2.0-py3-none-any.whl", {"c>=2"});
    p.add_wheel("b-1.0-py3-none-any.whl", {"c>=1"});
    p.add_wheel("c-1.0-py3-none-any.whl");
    p.add_wheel("c-2.0-py3-none-any.whl");
    auto r = run(p, {"a", "b"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "a==2.0 b==1.0 c==1.0");
    // Deeper: d 3 needs e<2, whose only versions need f==1 that conflicts with g.
    MemoryProvider q;
    q.add_wheel("d-3.0-py3-none-any.whl", {"e<2"});
    q.add_wheel("d-2.0-py3-none-any.whl", {"e>=2"});
    q.add_wheel("e-1.0-py3-none-any.whl", {"f==1"});
    q.add_wheel("e-2.0-py3-none-any.whl", {"f==2"});
    q.add_wheel("f-1.0-py3-none-any.whl");
    q.add_wheel("f-2.0-py3-none-any.whl");
    q.add_wheel("g-1.0-py3-none-any.whl", {"f==2"});
    r = run(q, {"g", "d"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "d==2.0 e==2.0 f==2.0 g==1.0");
  }

  TEST_CASE("unsatisfiable: the explanation names who requires what") {
    MemoryProvider p;
    p.add_wheel("a-1.0-py3-none-any.whl", {"c<2"});
    p.add_wheel("b-1.0-py3-none-any.whl", {"c>=2"});
    p.add_wheel("c-1.0-py3-none-any.whl");
    p.add_wheel("c-2.0-py3-none-any.whl");
    auto r = run(p, {"a", "b"});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == ErrorCode::unsatisfiable);
    auto text = r.error().render();
    CHECK(text.find("a==1.0 requires c<2") != std::string::npos);
    CHECK(text.find("b==1.0 requires c>=2") != std::string::npos);
    CHECK(text.find("versions of 'c' usable on this target: 2.0, 1.0") != std::string::npos);
    r = run(p, {"c>5"});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().render().find("the request requires c>5") != std::string::npos);
  }

  TEST_CASE("a dependency missing from the index is named") {
    MemoryProvider p("https://example.test/simple");
    p.add_wheel("a-1.0-py3-none-any.whl", {"elsewhere>=1"});
    auto r = run(p, {"a"});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == ErrorCode::not_found);
    CHECK(r.error().message == "'elsewhere' was not found on https://example.test/simple");
    CHECK(r.error().render().find("a==1.0 requires elsewhere>=1") != std::string::npos);
    CHECK_FALSE(r.error().hint.empty());
  }

  TEST_CASE("metadata and pages are fetched once") {
    MemoryProvider p;
    p.add_wheel("a-1.0-py3-none-any.whl", {"b"});
    p.add_wheel("c-1.0-py3-none-any.whl", {"b"});
    p.add_wheel("b-1.0-py3-none-any.whl");
    auto r = run(p, {"a", "c"});
    REQUIRE(r.has_value());
    CHECK(p.candidate_calls == 3);
    CHECK(p.metadata_calls == 3);
  }

  TEST_CASE("stale dependencies of a re-pinned package are dropped") {
    // a 2 needs x; z needs a<2: a is re-pinned to 1 and x (only needed by a 2) is not in the result.
    MemoryProvider p;
    p.add_wheel("a-2.0-py3-none-any.whl", {"x"});
    p.add_wheel("a-1.0-py3-none-any.whl");
    p.add_wheel("x-1.0-py3-none-any.whl");
    p.add_wheel("z-1.0-py3-none-any.whl", {"a<2"});
    auto r = run(p, {"a", "z"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "a==1.0 z==1.0");
  }
}

} // namespace resolver_resolver_test
