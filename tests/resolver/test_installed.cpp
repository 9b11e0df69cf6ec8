// resolver/installed.hpp: an installed distribution stays when it satisfies every requirement on it
// (pip's and uv's "already satisfied"), pip check of the after-state, conda's packages.
#include <doctest/doctest.h>

#include "resolver/installed.hpp"
#include "resolver/memory_provider.hpp"
#include "resolver/plan.hpp"
#include "resolver/resolver.hpp"
#include "tests/resolver/resolver_test_support.hpp"

namespace resolver_installed_test {

using namespace envfix;
using namespace envfix::resolver;
using namespace envfix::resolver::test;

namespace {

InstalledPackage installed(const std::string& name, const std::string& version, std::vector<std::string> deps = {},
                           std::string conda = "") {
  InstalledPackage p{name, *specs::Version::parse(version), {}, std::move(conda)};
  for (const auto& d : deps) p.requires_dist.push_back(*specs::Requirement::parse(d));
  return p;
}

Expected<Resolution> run(CandidateProvider& p, const std::vector<std::string>& r) {
  ResolveOptions o;
  o.target = cpython_linux();
  Resolver res(p, std::move(o));
  return res.resolve(reqs(r));
}

} // namespace

TEST_SUITE("unit/resolver/installed") {

  TEST_CASE("an installed version that satisfies every requirement stays, even when the index lacks it") {
    MemoryProvider index;
    index.add_wheel("app-1.0-py3-none-any.whl", {"typing-extensions>=4.0"});
    index.add_wheel("typing_extensions-4.12.2-py3-none-any.whl");
    std::vector<InstalledPackage> env{installed("pydantic", "2.13.4", {"typing-extensions>=4.14.1"}),
                                      installed("typing-extensions", "4.15.0")};
    PreferInstalledProvider p(index, env, {"app"});
    auto r = run(p, {"app"});
    REQUIRE(r.has_value());
    CHECK(pins_text(*r) == "app==1.0 typing-extensions==4.15.0");
    CHECK(is_installed_candidate(r->find("typing-extensions")->file));
    auto plan = make_plan({&*r, env, {}, {"nvidia-"}});
    REQUIRE(plan.install.size() == 1);
    CHECK(plan.install[0].name == "app");
    CHECK(plan.remove.empty());
    CHECK(check_environment(env, plan, cpython_linux().markers).empty());

    SUBCASE("without the preference, the index's version replaces it and pip check would fail") {
      auto plain = run(index, {"app"});
      REQUIRE(plain.has_value());
      auto bad = make_plan({&*plain, env, {}, {"nvidia-"}});
      auto broken = check_environment(env, bad, cpython_linux().markers);
      REQUIRE(broken.size() == 1);
      CHECK(broken[0].package == "pydantic==2.13.4");
      CHECK(broken[0].requirement == "typing-extensions>=4.14.1");
      CHECK(broken[0].problem == "typing-extensions 4.12.2 would be installed");
      REQUIRE(bad.install.size() == 2);
      CHECK(bad.install[1].required_by == std::vector<std::string>{"app==1.0"});
    }
    SUBCASE("a requirement that excludes it forces the change, which the check then names") {
      index.add_wheel("oldapp-1.0-py3-none-any.whl", {"typing-extensions<4.13"});
      PreferInstalledProvider q(index, env, {"oldapp"});
      auto forced = run(q, {"oldapp"});
      REQUIRE(forced.has_value());
      CHECK(pins_text(*forced) == "oldapp==1.0 typing-extensions==4.12.2");
      auto fp = make_plan({&*forced, env, {}, {"nvidia-"}});
      CHECK(check_environment(env, fp, cpython_linux().markers).size() == 1);
    }
    SUBCASE("a requested package gets the best candidate whatever is installed") {
      PreferInstalledProvider q(index, env, {"app", "typing-extensions"});
      auto up = run(q, {"app", "typing-extensions"});
      REQUIRE(up.has_value());
      CHECK(pins_text(*up) == "app==1.0 typing-extensions==4.12.2");
    }
  }

  TEST_CASE("check_environment: markers evaluated, only what the plan breaks, removals count") {
    std::vector<InstalledPackage> env{installed("a", "1.0", {"b>=2", "c; python_version < '3'", "d>=1"}), installed("b", "2.0")};
    Plan plan;
    plan.remove.push_back(PlanRemove::of(env[1], RemoveReason::replaced));
    auto broken = check_environment(env, plan, cpython_linux().markers);
    REQUIRE(broken.size() == 1); // c: marker false; d: missing before the plan already
    CHECK(broken[0].problem == "b would be removed");
  }

  TEST_CASE("conda_owned_changes names what the plan removes of conda's packages") {
    std::vector<InstalledPackage> env{installed("torch", "2.9.0", {}, "pytorch 2.9.0 cuda129_mkl_py311_h0_300"),
                                      installed("torchvision", "0.24.0")};
    Plan plan;
    plan.remove.push_back(PlanRemove::of(env[0], RemoveReason::replaced));
    plan.remove.push_back(PlanRemove::of(env[1], RemoveReason::replaced));
    auto owned = conda_owned_changes(plan);
    REQUIRE(owned.size() == 1);
    CHECK(owned[0] == "torch 2.9.0 (conda package pytorch 2.9.0 cuda129_mkl_py311_h0_300)");
  }

} // TEST_SUITE

} // namespace resolver_installed_test
