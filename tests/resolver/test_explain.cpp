// The wording of "no solution" explanations: a derivation chain in the style of uv's PubGrub
// reports, built from the causes the backtracking resolver records. The exact sentences are pinned
// for the classic conflicts; the structured causes stay a list.
#include <doctest/doctest.h>

#include "resolver/memory_provider.hpp"
#include "resolver/resolver.hpp"
#include "tests/resolver/resolver_test_support.hpp"

namespace resolver_explain_test {

using namespace envfix;
using namespace envfix::resolver;
using namespace envfix::resolver::test;

namespace {

Error failure(MemoryProvider& p, const std::vector<std::string>& r, int python_minor = 11) {
  ResolveOptions o;
  o.target = cpython_linux(python_minor);
  Resolver res(p, std::move(o));
  auto out = res.resolve(reqs(r));
  REQUIRE_FALSE(out.has_value());
  CHECK(out.error().code == ErrorCode::unsatisfiable);
  return out.error();
}

} // namespace

TEST_SUITE("unit/resolver/explain") {

  TEST_CASE("explanation: incompatible requirements of two packages") {
    MemoryProvider p;
    p.add_wheel("a-1.0-py3-none-any.whl", {"c<2"});
    p.add_wheel("b-1.0-py3-none-any.whl", {"c>=2"});
    p.add_wheel("c-1.0-py3-none-any.whl");
    p.add_wheel("c-2.0-py3-none-any.whl");
    Error e = failure(p, {"a", "b"});
    CHECK(e.message == "Because a==1.0 depends on c<2 and b==1.0 depends on c>=2, a==1.0 and b==1.0 cannot be used together. "
                       "And because you require a and b, no solution exists.");
    CHECK(e.causes.size() >= 2); // "a==1.0 requires c<2", … stay as separate causes
  }

  TEST_CASE("explanation: a pin against a companion's coupled version") {
    MemoryProvider p;
    p.add_wheel("torch-2.6.0-py3-none-any.whl");
    p.add_wheel("torch-2.7.0-py3-none-any.whl");
    p.add_wheel("torchvision-0.22.0-py3-none-any.whl", {"torch==2.7.0"});
    Error e = failure(p, {"torch==2.6.0", "torchvision==0.22.*"});
    CHECK(e.message ==
          "Because you require torch==2.6.0 and torchvision==0.22.0 depends on torch==2.7.0, torchvision==0.22.0 cannot "
          "be used. And because you require torchvision==0.22.*, no solution exists.");
  }

  TEST_CASE("explanation: the dependency has no wheel for the interpreter") {
    MemoryProvider p;
    p.add_wheel("torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    p.add_wheel("torch-2.7.0-cp312-cp312-manylinux_2_28_x86_64.whl");
    p.add_wheel("torchvision-0.22.0-py3-none-any.whl", {"torch==2.7.0"});
    Error e = failure(p, {"torchvision==0.22.*"}, 13);
    CHECK(e.message ==
          "Because torchvision==0.22.0 depends on torch==2.7.0 and torch==2.7.0 has no wheel for cp313, torchvision==0.22.0 "
          "cannot be used. And because you require torchvision==0.22.*, no solution exists.");
  }

  TEST_CASE("explanation: Requires-Python of the only version") {
    MemoryProvider p;
    p.add_wheel("app-1.0-py3-none-any.whl", {"lib>=2"});
    p.add_wheel("lib-2.0-py3-none-any.whl", {}, ">=3.12");
    Error e = failure(p, {"app"});
    CHECK(e.message ==
          "Because lib==2.0 depends on Python>=3.12 and the target is Python 3.11.7, lib==2.0 cannot be used. "
          "And because app==1.0 depends on lib>=2, app==1.0 cannot be used. And because you require app, no solution exists.");
  }

  TEST_CASE("explanation: the platform and a missing hash, from the request itself") {
    MemoryProvider p;
    p.add_wheel("native-1.0-cp311-cp311-macosx_11_0_arm64.whl");
    Error e = failure(p, {"native"});
    CHECK(e.message == "Because you require native and native==1.0 has no wheel for the platform manylinux_2_36_x86_64, "
                       "no solution exists.");
  }
}

} // namespace resolver_explain_test
