// api/ in memory: plan, apply, lock and apply --locked called as functions, with the values they
// return checked, against nginx over HTTPS and real venvs (the same world as tests/apply, without the
// binary). What cli/ renders is tested there; here, what api/ decides and does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "api/apply.hpp"
#include "api/inspect.hpp"
#include "api/lock.hpp"
#include "api/plan.hpp"
#include "tests/apply/apply_world.hpp"
#include "tests/wheel/kernel_fixtures.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

using namespace envfix;
using apply_test::World;
namespace fs = std::filesystem;

namespace {

// The options cli/ would build for `--index-url URL --python PY --cache-dir C` and no --framework.
api::Options options(const World& w, const fs::path& venv) {
  api::Options o;
  o.python = (venv / "bin/python").string();
  o.detect_framework = true;
  o.index_url = w.index_url();
  o.cache_dir = w.cache().string();
  o.lockfile = w.lockfile().string();
  o.gpus = {"none"};
  return o;
}

// The process environment the binary gets in tests/apply (World::envfix_options): this world's CA,
// none of the ambient settings.
void isolate(const World& w) {
  const auto o = w.envfix_options();
  for (const auto& [k, v] : o.set_env) ::setenv(k.c_str(), v.c_str(), 1);
  for (const auto& k : o.unset_env) ::unsetenv(k.c_str());
}

// Records what apply reports, in order.
struct Recorder : api::ApplyReporter {
  std::vector<api::Phase> phases;
  std::vector<std::string> notes, warnings;
  bool asked = false;
  void phase(api::Phase p) override { phases.push_back(p); }
  void note(const util::Message& m, bool) override { notes.push_back(m.text); }
  void warning(const util::Message& m) override { warnings.push_back(m.text); }
  bool proceed(const api::PlanContext&) override {
    asked = true;
    return true;
  }
};

// What the venv's own interpreter imports: the real test that a set is installed.
std::string import_value(const fs::path& venv) {
  auto r = util::run_process({(venv / "bin/python").string(), "-c", "import alpha; print(alpha.VALUE)"},
                             {.timeout = std::chrono::seconds(600)});
  REQUIRE(r);
  return r->ok() ? std::string(util::trim(r->out)) : "import failed: " + r->err;
}

} // namespace

TEST_SUITE("integration/api/api") {
  TEST_CASE("api::plan changes nothing; api::apply installs; api::lock writes a lock that api::apply_locked installs") {
    World w(apply_test::kAlphaIndex);
    isolate(w);
    const auto ve = w.venv("venv");
    const auto before = apply_test::manifest(ve);

    auto ctx = api::plan(options(w, ve), {.requirements = {"alpha"}});
    REQUIRE_MESSAGE(ctx, (ctx ? "" : ctx.error().render()));
    CHECK_FALSE(ctx->framework_mode()); // the request names no framework: the plain resolver
    REQUIRE(ctx->plan.install.size() == 1);
    CHECK(ctx->plan.install[0].name == "alpha");
    CHECK(ctx->plan.install[0].version == "1.0");
    CHECK(ctx->plan.remove.empty());
    CHECK(apply_test::manifest(ve) == before);

    Recorder rec;
    auto applied = api::apply(options(w, ve), {.requirements = {"alpha"}}, rec);
    REQUIRE_MESSAGE(applied, (applied ? "" : applied.error().render()));
    CHECK(applied->outcome == api::ApplyReport::Outcome::applied);
    CHECK(rec.asked);
    CHECK(std::ranges::find(rec.phases, api::Phase::download) != rec.phases.end());
    CHECK(std::ranges::find(rec.phases, api::Phase::install) != rec.phases.end());
    CHECK(import_value(ve) == "1");
    // apply wrote the lockfile for what it installed.
    CHECK(fs::exists(w.lockfile()));

    // The same request again: nothing to do, and nothing asked.
    Recorder again;
    auto second = api::apply(options(w, ve), {.requirements = {"alpha"}}, again);
    REQUIRE(second);
    CHECK(second->outcome == api::ApplyReport::Outcome::nothing_to_do);
    CHECK_FALSE(again.asked);

    // lock to another file; apply --locked from it into a fresh venv installs the same file.
    auto o = options(w, ve);
    o.lockfile = (w.root() / "other.lock").string();
    auto locked = api::lock(o, {.requirements = {"alpha"}});
    REQUIRE_MESSAGE(locked, (locked ? "" : locked.error().render()));
    CHECK(locked->written);
    REQUIRE(locked->lock.targets.size() == 1);
    REQUIRE(locked->lock.targets[0].packages.size() == 1);
    CHECK(locked->lock.targets[0].packages[0].name == "alpha");
    const auto ve2 = w.venv("venv2");
    auto o2 = options(w, ve2);
    o2.lockfile = o.lockfile;
    Recorder rec2;
    auto from_lock = api::apply_locked(o2, {}, rec2);
    REQUIRE_MESSAGE(from_lock, (from_lock ? "" : from_lock.error().render()));
    CHECK(from_lock->locked_target == locked->lock.targets[0].id);
    CHECK(import_value(ve2) == "1");
  }

  TEST_CASE("api errors are values: what cannot resolve, or is asked wrongly, changes nothing") {
    World w(apply_test::kAlphaIndex);
    isolate(w);
    const auto ve = w.venv("venv");
    const auto before = apply_test::manifest(ve);
    Recorder rec;
    auto none = api::apply(options(w, ve), {.requirements = {"alpha==2.0"}}, rec);
    REQUIRE_FALSE(none);
    CHECK(none.error().code == ErrorCode::unsatisfiable);
    CHECK(none.error().render().find("alpha") != std::string::npos);
    CHECK_FALSE(rec.asked);
    auto locked_with_req = api::apply_locked(options(w, ve), {.requirements = {"alpha"}}, rec);
    REQUIRE_FALSE(locked_with_req);
    CHECK(locked_with_req.error().code == ErrorCode::invalid_input);
    auto no_lock = api::apply_locked(options(w, ve), {}, rec);
    REQUIRE_FALSE(no_lock);
    CHECK(no_lock.error().code == ErrorCode::not_found);
    CHECK(apply_test::manifest(ve) == before);
  }

  // api::inspect in memory: the planned GPUs as every command takes them (names through the matrices,
  // ENVFIX_GPU), the coverage values cli/ renders, a bad file reported in its own entry.
  TEST_CASE("api::inspect: GPUs by name or ENVFIX_GPU, coverage as values, a bad file in its entry") {
    auto dir = util::make_temp_dir({}, "envfix-api-inspect").value();
    const auto lib = dir / "libk.so";
    const auto bytes = test::fake_elf({{".nv_fatbin", test::fake_container({{2, 90}})}});
    REQUIRE(util::write_file_atomic(lib, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
    api::Options o;
    o.gpus = {"H100", "RTX 5090", "sm_90"};
    auto r = api::inspect(o, {lib.string(), (dir / "missing.so").string()});
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    REQUIRE(r->gpus.size() == 2); // H100 and sm_90 are one arch
    CHECK(r->gpus[0].sm_name() == "sm_90");
    CHECK(r->gpus[1].sm_name() == "sm_120");
    REQUIRE(r->files.size() == 2);
    REQUIRE(r->files[0].kernels);
    REQUIRE(r->files[0].gpus.size() == 2);
    CHECK(r->files[0].gpus[0].coverage.verdict == api::Verdict::full);
    CHECK(r->files[0].gpus[1].coverage.verdict == api::Verdict::none);
    CHECK(r->files[0].sections.at(".nv_fatbin").archs.at("sm_90") == 1);
    CHECK_FALSE(r->files[1].kernels);
    ::setenv("ENVFIX_GPU", "sm_120", 1);
    auto env = api::inspect(api::Options{}, {lib.string()});
    ::unsetenv("ENVFIX_GPU");
    REQUIRE(env);
    REQUIRE(env->gpus.size() == 1);
    CHECK(env->gpus[0].sm_name() == "sm_120");
    o.gpus = {"RTX 9999"};
    CHECK_FALSE(api::inspect(o, {lib.string()}));
    fs::remove_all(dir);
  }
}
