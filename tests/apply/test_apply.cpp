// envfix apply / apply --locked / lock / export / cache, end to end: the real envfix binary, nginx
// serving indexes made by tests/support/index_builder.py over HTTPS (a CA made for the test), real
// venvs, and the host's pip 23.2.1 as the reference for what an install should look like.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/apply/apply_world.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace apply_apply_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace envfix::apply_test;

namespace {

// A small plain set: alpha needs beta>=1.5 and (by marker, never here) gamma; beta has three
// versions; delta is an unrelated package with an entry point.
constexpr const char* kPlainIndex = R"({"packages": [
  {"name": "alpha", "version": "1.0", "requires_dist": ["beta>=1.5", "gamma; python_version < '3'"],
   "files": {"alpha/__init__.py": "import beta\nVALUE = 1\n"}},
  {"name": "alpha", "version": "1.1", "requires_dist": ["beta>=2.0,<3", "delta==0.3"],
   "files": {"alpha/__init__.py": "import beta\nVALUE = 2\n"}},
  {"name": "beta", "version": "1.0"},
  {"name": "beta", "version": "2.0"},
  {"name": "beta", "version": "3.0rc1"},
  {"name": "gamma", "version": "1.0"},
  {"name": "delta", "version": "0.3", "files": {"delta/__init__.py": "def main():\n    print('delta')\n",
   "delta-0.3.dist-info/entry_points.txt": "[console_scripts]\ndelta-cli = delta:main\n"}}
]})";

// A fixture framework, "fixfw", described by a matrices override written here: one stable cu128
// index, builds claimed to carry sm_90 SASS, and a smoke test of plain Python. 1.1.0's smoke check fails
// when FIXFW_FAIL is set; 2.0.0 ships a real CUDA shared object built by nvcc for sm_80 only, so the
// matrices claim (sm_90) is a lie the kernel check must catch.
constexpr const char* kFixfwMatrices = R"YAML(schema: 1
frameworks:
  fixfw:
    main_package: fixfw
    default_mirror: "https://fixfw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
    source: "envfix tests/apply/test_apply.cpp"
    variants:
      cu128: {cuda: "12.8"}
    smoke:
      step_a: "import fixfw; fixfw.check(); print('step A ok')"
      step_b: "import fixfw; fixfw.kernel(); print('step B ok')"
      cpu:
        step: "import fixfw; fixfw.check(); print('step A ok')"
    releases:
      - versions: ["1.0.0", "1.1.0", "2.0.0"]
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim"}
)YAML";

std::string fixfw_init(bool can_fail) {
  std::string s = "import os\n__all__ = ['check', 'kernel']\n\ndef check():\n";
  if (can_fail)
    s += "    if os.environ.get('FIXFW_FAIL'):\n"
         "        raise RuntimeError('CUDA error: an illegal memory access was encountered (fixfw fixture)')\n";
  s += "    return True\n\ndef kernel():\n    return True\n";
  return s;
}

const std::string& sm80_shared_object() { return arch_shared_object("80"); }

} // namespace

TEST_SUITE("integration/apply/apply") {

  // Issue 36, item 4: a requested package whose installed version satisfies the request stays, as pip
  // and uv keep it (it used to be replaced by the index's choice: an upgrade here, a downgrade when the
  // index holds only older versions); -U/--upgrade takes the newest allowed, --reinstall installs it
  // again from the index at the same version (a damaged file is restored).
  TEST_CASE("a satisfied requested package is kept; --upgrade and --reinstall for the other intents") {
    auto spec = [](std::vector<std::string> versions) {
      std::string ps;
      for (const auto& v : versions)
        ps += fmt::format(R"({}{{"name": "alpha", "version": "{}", "files": {{"alpha/__init__.py": "VALUE = '{}'\n"}}}})",
                          ps.empty() ? "" : ", ", v, v);
      return fmt::format(R"({{"packages": [{}]}})", ps);
    };
    World w(spec({"1.0", "2.0"}));
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    auto run = [&](std::vector<std::string> a) {
      a.insert(a.end(), {"--format", "json", "--gpu", "none", "--index-url", w.index_url(), "--python", py, "--lockfile",
                         w.lockfile().string()});
      auto r = w.envfix(a);
      REQUIRE_MESSAGE(r.rc == 0, r.err);
      return json::parse(r.out);
    };
    auto installs = [](const json& j) {
      std::vector<std::string> out;
      for (const auto& i : j["install"]) out.push_back(i["name"].get<std::string>() + "==" + i["version"].get<std::string>());
      return out;
    };
    run({"apply", "alpha==1.0", "--yes"});
    REQUIRE(w.pip_list(ve).at("alpha") == "1.0");
    auto kept = run({"plan", "alpha"});
    CHECK(installs(kept).empty());
    CHECK(kept["keep"] == json::array({"alpha==1.0"}));
    auto up = run({"plan", "alpha", "--upgrade"});
    CHECK(installs(up) == std::vector<std::string>{"alpha==2.0"});
    CHECK(up["install"][0]["replaces"] == "1.0");
    CHECK(installs(run({"plan", "-U", "alpha"})) == std::vector<std::string>{"alpha==2.0"});

    fs::path site;
    for (const auto& e : fs::directory_iterator(ve / "lib"))
      if (e.path().filename().string().starts_with("python3")) site = e.path() / "site-packages";
    write(site / "alpha/__init__.py", "damaged\n");
    auto re = run({"apply", "alpha", "--reinstall", "--yes"});
    CHECK(installs(re) == std::vector<std::string>{"alpha==1.0"});
    CHECK(re["install"][0]["replaces"] == "1.0");
    CHECK(slurp(site / "alpha/__init__.py") == "VALUE = '1.0'\n");
    CHECK(w.pip_list(ve).at("alpha") == "1.0");
    CHECK(w.pip(ve, {"check"}).ok());

    // Installed 2.0, the index now only 1.0: the installed version satisfies `alpha` and stays.
    run({"apply", "alpha", "-U", "--yes"});
    REQUIRE(w.pip_list(ve).at("alpha") == "2.0");
    w.rebuild_index(spec({"1.0"}));
    auto newer = run({"plan", "alpha"});
    CHECK(installs(newer).empty());
    CHECK(newer["keep"] == json::array({"alpha==2.0"}));
    // A request the installed version does not satisfy still changes it.
    CHECK(installs(run({"plan", "alpha<2"})) == std::vector<std::string>{"alpha==1.0"});
  }

  // issue 33 item 7: rollback keeps more than one step (apply --keep-backups, default 2): two applies
  // are undone one per call, newest first, each saying what is left; --keep-backups 1 keeps one.
  TEST_CASE("rollback is a stack: two applies undone newest first, then nothing; --keep-backups 1 keeps one step") {
    World w(kPlainIndex);
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    auto apply = [&](const std::string& req, std::vector<std::string> extra = {}) {
      std::vector<std::string> a{"apply", req,     "--index-url", w.index_url(),        "--python",
                                 py,      "--yes", "--lockfile",  w.lockfile().string()};
      a.insert(a.end(), extra.begin(), extra.end());
      auto r = w.envfix(a);
      REQUIRE_MESSAGE(r.rc == 0, r.err);
    };
    apply("alpha==1.0");
    apply("alpha==1.1");
    auto dry = w.envfix({"--format", "json", "rollback", "--dry-run", "--python", py});
    REQUIRE(dry.rc == 0);
    CHECK(json::parse(dry.out)["older"].size() == 1);
    auto first = w.envfix({"rollback", "--python", py});
    REQUIRE(first.rc == 0);
    CHECK(first.err.find("1 older step kept: `envfix rollback` again undoes it") != std::string::npos);
    CHECK(w.pip_list(ve).at("alpha") == "1.0");
    auto second = w.envfix({"--format", "json", "rollback", "--python", py});
    REQUIRE(second.rc == 0);
    CHECK(json::parse(second.out)["steps_left"] == 0);
    CHECK_FALSE(w.pip_list(ve).contains("alpha"));
    auto none = w.envfix({"rollback", "--python", py});
    CHECK(none.rc == 1);
    CHECK(none.err.find("nothing to roll back") != std::string::npos);
    CHECK(none.err.find("--keep-backups") != std::string::npos);
    apply("alpha==1.0", {"--keep-backups", "1"});
    apply("alpha==1.1", {"--keep-backups", "1"});
    auto only = w.envfix({"rollback", "--python", py});
    REQUIRE(only.rc == 0);
    CHECK(only.err.find("older step") == std::string::npos);
    CHECK(w.pip_list(ve).at("alpha") == "1.0");
    CHECK(w.envfix({"rollback", "--python", py}).rc == 1);
    auto bad = w.envfix({"apply", "alpha", "--keep-backups", "0", "--index-url", w.index_url(), "--python", py, "--yes"});
    CHECK(bad.rc != 0);
    CHECK(bad.err.find("--keep-backups") != std::string::npos);
  }

  TEST_CASE("apply of a plain set installs what pip installs, and writes the lockfile") {
    World w(kPlainIndex);
    auto ve = w.venv("venv-envfix");
    auto r = w.envfix({"apply", "alpha", "--index-url", w.index_url(), "--python", (ve / "bin/python").string(), "--yes",
                       "--lockfile", w.lockfile().string()});
    REQUIRE(r.rc == 0);
    CHECK(r.err.find("Resolved 3 packages in") != std::string::npos);
    CHECK(r.err.find("Prepared 3 packages in") != std::string::npos);
    CHECK(r.err.find("Installed 3 packages in") != std::string::npos);
    CHECK(r.err.find(" + alpha==1.1") != std::string::npos);
    CHECK(r.err.find(" + beta==2.0") != std::string::npos);
    CHECK(r.err.find(" + delta==0.3") != std::string::npos);
    CHECK(r.err.find("plain requirement set") != std::string::npos); // smoke test skipped, said so

    auto vp = w.venv("venv-pip");
    auto p = w.pip(vp, {"install", "--index-url", w.pip_index_url(), "alpha"});
    REQUIRE_MESSAGE(p.ok(), p.err);
    auto mine = w.pip_list(ve), theirs = w.pip_list(vp);
    CHECK(mine == theirs);
    CHECK(mine.at("alpha") == "1.1");
    auto check = w.pip(ve, {"check"});
    CHECK_MESSAGE(check.ok(), (check.out + check.err));
    // The launcher works and the package imports in the target interpreter.
    auto cli = util::run_process({(ve / "bin/delta-cli").string()}).value();
    CHECK(cli.ok());
    CHECK(cli.out == "delta\n");

    // The lockfile holds the whole set with hashes, for this (GPU-less) host.
    auto lock = slurp(w.lockfile());
    CHECK(lock.find("lock-version: 1") != std::string::npos);
    CHECK(lock.find("name: alpha") != std::string::npos);
    CHECK(lock.find("id: cpu-cp311-") != std::string::npos);
    CHECK(lock.find("sha256: ") != std::string::npos);

    // A second venv: every wheel comes from the unpacked cache, nothing is downloaded or unpacked.
    auto ve2 = w.venv("venv-envfix-2");
    auto warm =
        w.envfix({"--format", "json", "apply", "alpha", "--index-url", w.index_url(), "--python", (ve2 / "bin/python").string(),
                  "--yes", "--link-mode", "copy", "--lockfile", (w.root() / "warm.lock").string()});
    REQUIRE_MESSAGE(warm.rc == 0, warm.err);
    auto wj = json::parse(warm.out);
    CHECK(wj["applied"]["unpacked_cache_hits"] == 3);
    CHECK(wj["applied"]["link_mode"] == "copy");
    CHECK(wj["applied"]["unpacked_while_downloading"] == 0);
    CHECK(w.pip_list(ve2) == theirs);
    // Cold caches: each wheel is unpacked as its download completes (installer/early_unpack.hpp),
    // none counts as a cache hit; ENVFIX_EARLY_UNPACK=0 leaves it all to the transaction. Same set.
    for (const char* early : {"1", "0"}) {
      CAPTURE(early);
      auto v = w.venv(std::string("venv-early-") + early);
      auto cold =
          w.envfix({"--format", "json", "apply", "alpha", "--index-url", w.index_url(), "--python", (v / "bin/python").string(),
                    "--yes", "--lockfile", (w.root() / (std::string("early-") + early + ".lock")).string()},
                   {{"ENVFIX_EARLY_UNPACK", early}}, w.root() / (std::string("cache-") + early));
      REQUIRE_MESSAGE(cold.rc == 0, cold.err);
      auto cj = json::parse(cold.out);
      CHECK(cj["applied"]["unpacked_cache_hits"] == 0);
      CHECK(cj["applied"]["unpacked_while_downloading"] == (std::string(early) == "1" ? 3 : 0));
      CHECK(w.pip_list(v) == theirs);
      CHECK(w.pip(v, {"check"}).ok());
    }
    auto bad_mode =
        w.envfix({"apply", "alpha==1.0", "--index-url", w.index_url(), "--python", (ve2 / "bin/python").string(), "--yes"},
                 {{"ENVFIX_LINK_MODE", "symlink"}});
    CHECK(bad_mode.rc != 0);
    CHECK(bad_mode.err.find("unknown link mode 'symlink'") != std::string::npos);
    CHECK(w.pip_list(ve2).at("alpha") == "1.1"); // refused before anything changed

    // Again: nothing to do, environment unchanged.
    auto before = manifest(ve);
    auto again = w.envfix({"apply", "alpha", "--index-url", w.index_url(), "--python", (ve / "bin/python").string(), "--yes",
                           "--lockfile", w.lockfile().string()});
    CHECK(again.rc == 0);
    CHECK(again.err.find("Nothing to do") != std::string::npos);
    CHECK(manifest(ve) == before);

    // A pin downgrades alpha alone: beta 2.0 still satisfies alpha 1.0's beta>=1.5, delta stays.
    auto down = w.envfix({"--format", "json", "apply", "alpha==1.0", "--index-url", w.index_url(), "--python",
                          (ve / "bin/python").string(), "--yes", "--lockfile", (w.root() / "other.lock").string()});
    REQUIRE(down.rc == 0);
    auto j = json::parse(down.out);
    REQUIRE(j["applied"]["installed"].size() == 1);
    CHECK(j["applied"]["installed"][0]["version"] == "1.0");
    CHECK(j["applied"]["removed"][0]["version"] == "1.1");
    CHECK(j["install"][0]["sha256"].get<std::string>().size() == 64);
    auto after = w.pip_list(ve);
    CHECK(after.at("alpha") == "1.0");
    CHECK(after.at("beta") == "2.0");
    CHECK(after.at("delta") == "0.3");
    CHECK(w.pip(ve, {"check"}).ok());
  }

  TEST_CASE("progress bars: drawn on a terminal, absent when stderr is not one") {
    World w(kPlainIndex);
    if (!util::find_in_path("script")) {
      MESSAGE("SKIP: script(1) from util-linux is needed to give envfix a terminal");
      return;
    }
    // script(1) runs envfix on a pseudo-terminal; its stdout carries what envfix drew there.
    auto on_terminal = [](World& world, const std::string& venv) {
      auto ve = world.venv(venv);
      std::string cmd = envfix_bin().string();
      for (const auto& a :
           std::vector<std::string>{"apply", "alpha", "--index-url", world.index_url(), "--python", (ve / "bin/python").string(),
                                    "--yes", "--cache-dir", world.cache().string(), "--lockfile", world.lockfile().string()})
        cmd += " '" + a + "'";
      auto r = util::run_process({"script", "-qfec", cmd, "/dev/null"}, world.envfix_options());
      REQUIRE(r);
      INFO(r->out, r->err);
      REQUIRE(r->exit_code == 0);
      return *r;
    };
    const auto r = on_terminal(w, "venv-tty");
    CHECK(r.out.find("Downloading  [") != std::string::npos);
    CHECK(r.out.find("Unpacking    [") != std::string::npos);
    CHECK(r.out.find("\x1b[2K") != std::string::npos);   // each frame erases the line it redraws
    CHECK(r.out.find("3/3 files") != std::string::npos); // issue 36 (7): the files counted
    CHECK(r.out.find("Installed 3 packages in") != std::string::npos);
    // Issue 36 (7): an index that gives no sizes (HTML pages only): a bar, once drawn, shows the whole
    // download's total, never the sum over the files begun so far (a bar full from the first frame).
    World html(std::string(kPlainIndex).insert(1, R"("json": false, )"));
    const auto h = on_terminal(html, "venv-html");
    std::set<std::string> totals; // the "/<total>" of every frame that drew a bar
    for (const auto& frame : util::split(h.out, '\r'))
      if (auto at = frame.find("Downloading  ["); at != std::string::npos) {
        const auto close = frame.find("] ", at), slash = frame.find('/', close), end = frame.find(' ', slash + 1);
        if (close != std::string::npos && slash != std::string::npos)
          totals.insert(frame.substr(slash + 1, frame.find(' ', end + 1) - slash - 1));
      }
    CAPTURE(h.out);
    CHECK(totals.size() <= 1);
    // Not a terminal (the other tests' runs): no bar, no escape codes.
    auto ve2 = w.venv("venv-notty");
    auto plain = w.envfix({"apply", "alpha", "--index-url", w.index_url(), "--python", (ve2 / "bin/python").string(), "--yes",
                           "--lockfile", w.lockfile().string()},
                          {}, w.root() / "cache-notty");
    REQUIRE(plain.rc == 0);
    CHECK(plain.err.find("Prepared 3 packages") != std::string::npos);
    CHECK(plain.err.find("Downloading") == std::string::npos);
    CHECK(plain.err.find("\x1b[2K") == std::string::npos);
  }

  TEST_CASE("apply --venv creates the venv and installs into it; a second apply reuses it") {
    World w(kPlainIndex);
    auto dir = w.root() / "made-by-envfix";
    auto r = w.envfix({"apply", "beta==1.0", "--venv", dir.string(), "--index-url", w.index_url(), "--yes", "--lockfile",
                       w.lockfile().string()});
    REQUIRE(r.rc == 0);
    CHECK(fs::exists(dir / "pyvenv.cfg"));
    CHECK(w.pip_list(dir).at("beta") == "1.0");
    auto again = w.envfix({"apply", "beta==2.0", "--venv", dir.string(), "--index-url", w.index_url(), "--yes", "--lockfile",
                           w.lockfile().string()});
    REQUIRE(again.rc == 0);
    CHECK(again.err.find(" - beta==1.0") != std::string::npos);
    CHECK(w.pip_list(dir).at("beta") == "2.0");
    // The lockfile follows the last apply of the same request shape: one target, beta 2.0.
    auto lock = slurp(w.lockfile());
    CHECK(lock.find("version: \"2.0\"") != std::string::npos);
    CHECK(lock.find("version: \"1.0\"") == std::string::npos);
  }

  TEST_CASE("lock -> apply --locked round trip; lock is deterministic; --check; exports install with pip") {
    World w(kPlainIndex);
    auto ve = w.venv("venv-a");
    auto py = (ve / "bin/python").string();
    auto r = w.envfix({"lock", "alpha", "--index-url", w.index_url(), "--python", py, "-o", w.lockfile().string()});
    REQUIRE(r.rc == 0);
    auto first = slurp(w.lockfile());
    auto r2 = w.envfix({"lock", "alpha", "--index-url", w.index_url(), "--python", py, "-o", w.lockfile().string()});
    REQUIRE(r2.rc == 0);
    CHECK(slurp(w.lockfile()) == first); // byte-identical
    auto chk = w.envfix({"lock", "alpha", "--index-url", w.index_url(), "--python", py, "-o", w.lockfile().string(), "--check"});
    CHECK(chk.rc == 0);
    CHECK(chk.err.find("up to date") != std::string::npos);
    auto stale =
        w.envfix({"lock", "alpha==1.0", "--index-url", w.index_url(), "--python", py, "-o", w.lockfile().string(), "--check"});
    CHECK(stale.rc == 1);
    CHECK(stale.err.find("stale") != std::string::npos);
    CHECK(slurp(w.lockfile()) == first); // --check writes nothing

    // Nothing was installed by lock.
    CHECK(w.pip_list(ve).count("alpha") == 0);

    // --locked into a fresh venv: exactly the lock's set.
    auto fresh = w.venv("venv-locked");
    auto l =
        w.envfix({"apply", "--locked", "--lockfile", w.lockfile().string(), "--python", (fresh / "bin/python").string(), "--yes"},
                 {}, w.root() / "cache-2");
    REQUIRE(l.rc == 0);
    auto installed = w.pip_list(fresh);
    std::map<std::string, std::string> locked;
    {
      // name/version pairs from the lockfile's text (two-space YAML emitted by envfix).
      auto t = slurp(w.lockfile());
      std::string name;
      for (std::size_t i = 0; i < t.size();) {
        auto e = t.find('\n', i);
        if (e == std::string::npos) e = t.size();
        auto line = t.substr(i, e - i);
        i = e + 1;
        auto col = line.find_first_not_of(" -");
        if (col == std::string::npos) continue;
        auto trim = line.substr(col);
        auto unquote = [](std::string v) { return v.size() >= 2 && v.front() == '"' ? v.substr(1, v.size() - 2) : v; };
        if (trim.starts_with("name: "))
          name = unquote(trim.substr(6));
        else if (trim.starts_with("version: ") && !name.empty())
          locked[name] = unquote(trim.substr(9));
      }
    }
    CHECK(locked.size() == 3);
    std::map<std::string, std::string> inst;
    for (const auto& [n, v] : installed)
      if (n != "pip" && n != "setuptools") inst[n] = v;
    CHECK(inst == locked);
    CHECK(w.pip(fresh, {"check"}).ok());

    // requirements export installs with pip --require-hashes into another fresh venv.
    auto req =
        w.envfix({"export", "--as", "requirements", "-o", (w.root() / "req.txt").string(), "--lockfile", w.lockfile().string()});
    REQUIRE(req.rc == 0);
    auto reqtxt = slurp(w.root() / "req.txt");
    CHECK(reqtxt.find("--hash=sha256:") != std::string::npos);
    // Same server over HTTP for pip (see pip_index_url); hashes and files are unchanged.
    for (std::size_t at; (at = reqtxt.find(w.base_url())) != std::string::npos;)
      reqtxt.replace(at, w.base_url().size(), w.http_base());
    write(w.root() / "req.txt", reqtxt);
    auto vr = w.venv("venv-req");
    auto p = w.pip(vr, {"install", "--require-hashes", "--no-deps", "-r", (w.root() / "req.txt").string()});
    CHECK_MESSAGE(p.ok(), (p.out + p.err));
    std::map<std::string, std::string> viareq;
    for (const auto& [n, v] : w.pip_list(vr))
      if (n != "pip" && n != "setuptools") viareq[n] = v;
    CHECK(viareq == locked);

    // pylock.toml parses with tomllib and has PEP 751's required fields.
    auto pl = w.envfix({"export", "--as", "pylock", "--lockfile", w.lockfile().string()});
    REQUIRE(pl.rc == 0);
    const char* check = R"PY(
import sys, tomllib
d = tomllib.load(open(sys.argv[1], "rb"))
assert d["lock-version"] == "1.0", d.get("lock-version")
assert d["created-by"] == "envfix", d["created-by"]  # PEP 751: the tool's name (issue 36, item 8)
pk = d["packages"]
assert len(pk) == 3, pk
for p in pk:
    assert p["name"] and p["version"]
    for wh in p["wheels"]:
        assert wh["name"].endswith(".whl") and len(wh["hashes"]["sha256"]) == 64 and wh["url"]
print("ok")
)PY";
    auto t = util::run_process({python3(), "-c", check, (w.root() / "pylock.toml").string()}).value();
    CHECK_MESSAGE(t.ok(), t.err);
  }

  TEST_CASE("apply --locked refuses tampered lockfiles and changed files; the venv stays as it was") {
    World w(kPlainIndex);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    // Something installed first, so "unchanged" means something.
    REQUIRE(w.envfix({"apply", "beta==1.0", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile",
                      (w.root() / "first.lock").string()})
                .rc == 0);
    REQUIRE(w.envfix({"lock", "alpha", "--index-url", w.index_url(), "--python", py, "-o", w.lockfile().string()}).rc == 0);
    const auto good = slurp(w.lockfile());
    const auto before = manifest(ve);
    int n = 0;
    auto locked = [&](const std::string& text) {
      auto f = w.root() / fmt::format("t{}.lock", n++);
      write(f, text);
      // A fresh cache each time: a cached good copy must not hide a changed server file.
      return w.envfix({"apply", "--locked", "--lockfile", f.string(), "--python", py, "--yes"}, {},
                      w.root() / fmt::format("cache-t{}", n));
    };

    SUBCASE("malformed") {
      auto text = good;
      text.replace(text.find("targets:"), 8, "targets: [unclosed");
      auto r = locked(text);
      CHECK(r.rc == 1);
      CHECK(r.err.find(".lock:") != std::string::npos); // file:line
    }
    SUBCASE("newer lock-version") {
      auto text = good;
      text.replace(text.find("lock-version: 1"), 15, "lock-version: 7");
      auto r = locked(text);
      CHECK(r.rc == 1);
      CHECK(r.err.find("newer envfix") != std::string::npos);
    }
    SUBCASE("edited hash") {
      auto text = good;
      auto at = text.find("sha256: ", text.find("name: beta"));
      REQUIRE(at != std::string::npos);
      text.replace(at + 8, 64, std::string(64, 'e'));
      auto r = locked(text);
      CHECK((r.rc == 1 || r.rc == 2));
      CHECK(r.err.find("beta") != std::string::npos);
      CHECK(r.err.find(fmt::format("t{}.lock:", n - 1)) != std::string::npos); // names the file and line
    }
    SUBCASE("the URL now serves other bytes") {
      // Replace delta's wheel on the server with another valid wheel of the same name.
      fs::path served;
      for (auto& e : fs::recursive_directory_iterator(w.index_dir()))
        if (e.path().filename().string().starts_with("delta-0.3-") && e.path().extension() == ".whl") served = e.path();
      REQUIRE(!served.empty());
      auto other = util::make_temp_dir(w.root(), "other").value();
      REQUIRE(testing::build_index(
          other, R"({"packages":[{"name":"delta","version":"0.3","files":{"delta/__init__.py":"EVIL = 1\n"}}]})"));
      fs::copy_file(other / "files" / served.filename(), served, fs::copy_options::overwrite_existing);
      auto r = locked(good);
      CHECK(r.rc == 2);
      CHECK(r.err.find("delta") != std::string::npos);
    }
    SUBCASE("no target for this host") {
      auto text = good;
      text.replace(text.find("python: \""), 14, "python: \"3.99\"");
      auto r = locked(text);
      CHECK(r.rc == 1);
      CHECK(r.err.find("python 3.99 (host: 3.11)") != std::string::npos);
    }
    CHECK(manifest(ve) == before);
  }

  TEST_CASE("framework apply: smoke test passes, a failing smoke test rolls back, the kernel check refuses a lying build") {
    const std::string& so = sm80_shared_object();

    std::string spec =
        fmt::format(R"({{"simple_dir": "whl/cu128", "files_dir": "whl/files", "packages": [
    {{"name": "fixfw", "version": "1.0.0+cu128", "files": {{"fixfw/__init__.py": {}}}}},
    {{"name": "fixfw", "version": "1.1.0+cu128", "files": {{"fixfw/__init__.py": {}}}}},
    {{"name": "fixfw", "version": "2.0.0+cu128", "tags": ["py3-none-manylinux_2_17_x86_64"],
      "files": {{"fixfw/__init__.py": {}, "fixfw/lib/libfixfw_kernels.so": {}}}}}
  ]}})",
                    json(fixfw_init(false)).dump(), json(fixfw_init(true)).dump(), json(fixfw_init(false)).dump(), byte_list(so));
    World w(spec);
    write(w.root() / "matrices/fixfw.yaml", kFixfwMatrices);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    auto fw = [&](std::vector<std::string> extra) {
      std::vector<std::string> a{"apply",
                                 "--framework",
                                 "fixfw",
                                 "--matrices",
                                 (w.root() / "matrices").string(),
                                 "--mirror",
                                 w.base_url(),
                                 "--gpu",
                                 "sm_90",
                                 "--driver",
                                 "580.65.06",
                                 "--python",
                                 py,
                                 "--yes",
                                 "--lockfile",
                                 w.lockfile().string()};
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };

    auto ok = w.envfix(fw({"fixfw==1.0.0"}));
    REQUIRE(ok.rc == 0);
    // issue 33 item 9: the GPU is planned (--gpu), not this machine's: the smoke test runs the
    // matrices' CPU step and says why, as verify does (a GPU step here would fail and roll back).
    CHECK(ok.err.find("Smoke test passed on the CPU (planned GPUs (--gpu) are not this machine's): CPU step") !=
          std::string::npos);
    // Issue 36 (7): the smoke test (up to --smoke-timeout a step) says it began, before its result.
    const auto began = ok.err.find("Running the smoke test in the new set…");
    CHECK(began != std::string::npos);
    CHECK(began < ok.err.find("Smoke test passed"));
    if (util::find_in_path("script")) {
      // On a terminal, its elapsed time instead (script(1) gives envfix one), erased before the result.
      std::string cmd = envfix_bin().string();
      for (const auto& a : fw({"fixfw==1.0.0", "--reinstall", "--cache-dir", w.cache().string()})) cmd += " '" + a + "'";
      auto tty = util::run_process({"script", "-qfec", cmd, "/dev/null"}, w.envfix_options());
      REQUIRE(tty);
      INFO(tty->out);
      CHECK(tty->exit_code == 0);
      CHECK(tty->out.find("\x1b[2KSmoke test   0s") != std::string::npos);
      CHECK(tty->out.find("Running the smoke test") == std::string::npos);
      CHECK(tty->out.find("Smoke test passed on the CPU") != std::string::npos);
    }
    CHECK(ok.err.find("step A") == std::string::npos);
    CHECK(ok.err.find(" + fixfw==1.0.0+cu128") != std::string::npos);
    CHECK(w.pip_list(ve).at("fixfw") == "1.0.0+cu128");
    auto lock = slurp(w.lockfile());
    CHECK(lock.find("framework: fixfw") != std::string::npos);
    CHECK(lock.find("id: sm_90-cp311-") != std::string::npos);
    CHECK(lock.find("driver-min: \"570.26\"") != std::string::npos); // CUDA 12.8's minimum driver
    CHECK(lock.find("variant: cu128") != std::string::npos);
    const auto before = manifest(ve);

    {
      // Issue 56, item 7: a lock made for a driver that runs CUDA 12.8 through minor-version
      // compatibility records that floor, so that `apply --locked` takes it on that very host.
      const auto old_lock = (w.root() / "driver535.lock").string();
      auto common = [&](std::vector<std::string> a) {
        a.insert(a.end(), {"--framework", "fixfw", "--matrices", (w.root() / "matrices").string(), "--mirror", w.base_url(),
                           "--gpu", "sm_90", "--driver", "535.104.05", "--python", py, "--lockfile", old_lock});
        return a;
      };
      auto l = w.envfix(common({"lock", "fixfw==1.0.0"}));
      REQUIRE(l.rc == 0);
      CHECK(slurp(old_lock).find("driver-min: \"525.60.13\"") != std::string::npos);
      auto locked = w.envfix(common({"apply", "--locked", "--yes"}));
      CHECK(locked.rc == 0);
      CHECK(locked.err.find("no target") == std::string::npos);
      CHECK(manifest(ve) == before);
      // `lock --check` with no request and no target checks what the lock records, whatever this
      // host is (here: no --gpu, --driver or --framework; this machine has no GPU).
      auto chk =
          w.envfix({"lock", "--check", "--matrices", (w.root() / "matrices").string(), "--python", py, "--lockfile", old_lock});
      CHECK(chk.rc == 0);
      CHECK(chk.err.find("checking the lock's own request (fixfw==1.0.0) for its 1 recorded target(s)") != std::string::npos);
    }

    SUBCASE("verify --app: the reinstall it prints was planned on the index first, and runs back as printed") {
      // Issue 56: a fix is a plan proven to resolve. No GPU here: verify's fix is the framework's
      // reinstall, planned in memory with this run's options before it is shown.
      write(w.root() / "app.py", "import sys\nsys.stderr.write('RuntimeError: CUDA error: no kernel image is available "
                                 "for execution on the device\\n')\nsys.exit(1)\n");
      const std::map<std::string, std::string> no_gpu{{"ENVFIX_NO_NVML", "1"},
                                                      {"ENVFIX_SYSFS_ROOT", (w.root() / "no-sysfs").string()}};
      auto v = w.envfix({"verify", "--framework", "fixfw", "--matrices", (w.root() / "matrices").string(), "--mirror",
                         w.base_url(), "--python", py, "--layers", "app", "--app", "python app.py", "--format", "json"},
                        no_gpu);
      CHECK(v.rc == 1);
      const auto app = json::parse(v.out)["layers"]["app"];
      CHECK(app["class"] == "missing-arch");
      REQUIRE(app["fix"].is_string());
      const auto fix = app["fix"].get<std::string>();
      CHECK(fix.starts_with("envfix apply fixfw --framework fixfw --python "));
      CHECK_MESSAGE(app["fix_proof"]["state"] == "proven", app["fix_proof"].dump());
      // The printed command, run as printed (with --yes: no terminal to confirm at).
      auto o = w.envfix_options(no_gpu);
      o.set_env["PATH"] =
          envfix_bin().parent_path().string() + ":" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
      auto back = util::run_process({"/bin/sh", "-c", fix + " --yes"}, o);
      REQUIRE(back);
      CHECK_MESSAGE(back->exit_code == 0, back->err);
      // What it installed is what the proof planned.
      const auto detail = app["fix_proof"]["detail"].get<std::string>();
      CHECK_MESSAGE(detail.find("fixfw " + w.pip_list(ve).at("fixfw")) != std::string::npos, detail);
    }
    SUBCASE("a failing smoke test rolls back to a byte-identical venv, with the framework's own error") {
      auto bad = w.envfix(fw({"fixfw==1.1.0"}), {{"FIXFW_FAIL", "1"}});
      CHECK(bad.rc == 2);
      CHECK(bad.err.find("smoke test CPU step failed") != std::string::npos);
      CHECK(bad.err.find("an illegal memory access was encountered (fixfw fixture)") != std::string::npos);
      CHECK(manifest(ve) == before);
      CHECK(w.pip_list(ve).at("fixfw") == "1.0.0+cu128");
      CHECK(slurp(w.lockfile()) == lock); // no lockfile update for a failed apply
      // Issue 56, item 9: the same error in zh_CN has no English sentence left; the framework's own
      // error line stays as it printed it.
      auto zh = w.envfix(fw({"fixfw==1.1.0"}), {{"FIXFW_FAIL", "1"}, {"LC_ALL", "zh_CN.UTF-8"}, {"LANGUAGE", "zh_CN"}});
      CHECK(zh.rc == 2);
      MESSAGE(zh.err);
      for (const auto& l : testing::english_sentences(zh.err)) CHECK_MESSAGE(false, "English left: " << l);
      CHECK(manifest(ve) == before);

      // --no-verify skips the smoke test: the same build installs.
      auto nv = w.envfix(fw({"fixfw==1.1.0", "--no-verify"}), {{"FIXFW_FAIL", "1"}});
      CHECK(nv.rc == 0);
      CHECK(nv.err.find("smoke test skipped (--no-verify)") != std::string::npos);
      CHECK(w.pip_list(ve).at("fixfw") == "1.1.0+cu128");
    }
    SUBCASE("the kernel check refuses a .so without code for the GPU, before anything is removed") {
      // A start-up hook like setuptools' distutils-precedence.pth, its module never run yet: the
      // interpreters envfix starts on the way to the refusal write no byte-code of it (found on the
      // GPU machine, tests/gpu/wheel_file.sh: `_distutils_hack/__pycache__` appeared).
      fs::path site;
      for (const auto& e : fs::directory_iterator(ve / "lib")) site = e.path() / "site-packages";
      write(site / "zz_hook.pth", "import zz_hook_mod\n");
      write(site / "zz_hook_mod/__init__.py", "X = 1\n");
      const auto before_hook = manifest(ve);
      auto k = w.envfix(fw({"fixfw==2.0.0"}));
      CHECK(k.rc == 1);
      // Two modules: the kernel's own and the dlink one nvcc adds (docs/kernels.md).
      CHECK(k.err.find("kernel check refused fixfw 2.0.0+cu128: none of its 2 GPU modules (1 file) has code that runs on "
                       "planned sm_90 (stable cu128)") != std::string::npos);
      CHECK(k.err.find("refused by the kernel check in this run") != std::string::npos); // the pin leaves nothing else
      CHECK(k.err.find("read from the binaries (downloaded fixfw 2.0.0+cu128") != std::string::npos);
      CHECK(k.err.find("the matrices claimed") == std::string::npos); // no claim the gate cannot know
      CHECK(manifest(ve) == before_hook);
      auto zh = w.envfix(fw({"fixfw==2.0.0"}), {{"LC_ALL", "zh_CN.UTF-8"}, {"LANGUAGE", "zh_CN"}},
                         w.root() / "zh-cache"); // the gate reads it again
      CHECK(zh.rc == 1);
      MESSAGE(zh.err);
      for (const auto& l : testing::english_sentences(zh.err)) CHECK_MESSAGE(false, "English left: " << l);
      // The matrices say 2.0.0 is sm_90 only, but its binary, read above, holds sm_80 SASS, which runs on
      // an sm_86 GPU: evidence beats the table, and plan says where it came from.
      auto p = w.envfix({"plan", "fixfw==2.0.0", "--framework", "fixfw", "--matrices", (w.root() / "matrices").string(),
                         "--mirror", w.base_url(), "--gpu", "sm_86", "--driver", "580.65.06", "--python", py});
      CHECK(p.rc == 0);
      CHECK(p.err.find("its binaries cover sm_86 (downloaded fixfw 2.0.0+cu128") != std::string::npos);
    }
    SUBCASE("lock for two hosts, deterministic; export picks by --target") {
      auto l = [&] {
        return w.envfix({"lock", "--framework", "fixfw", "--matrices", (w.root() / "matrices").string(), "--mirror", w.base_url(),
                         "--python", py, "--target", "gpu=sm_90,python=3.11,driver=580.65.06", "--target",
                         "gpu=sm_90,python=3.12,driver=575.51", "-o", (w.root() / "multi.lock").string()});
      };
      REQUIRE(l().rc == 0);
      auto a = slurp(w.root() / "multi.lock");
      REQUIRE(l().rc == 0);
      CHECK(slurp(w.root() / "multi.lock") == a);
      CHECK(a.find("id: sm_90-cp311-") != std::string::npos);
      CHECK(a.find("id: sm_90-cp312-") != std::string::npos);
      CHECK(a.find("version: 2.0.0+cu128") != std::string::npos); // newest claimed-good build, for both
      CHECK(a.find("verified: false") != std::string::npos);      // kernels from the matrices only
      CHECK(manifest(ve) == before);                              // lock installs nothing
      auto ex = w.envfix(
          {"export", "--as", "pylock", "--lockfile", (w.root() / "multi.lock").string(), "--all", "-o", w.root().string()});
      CHECK(ex.rc == 0);
      CHECK(fs::exists(w.root() / "pylock.sm_90-cp312-manylinux_2_17_x86_64.toml"));
    }
  }

  // "evfw": what the binaries say beats the table. Stable 3.0.0 is claimed to carry sm_90 but its real
  // .so holds sm_80 only; the nightly 3.1.0.dev20261201 holds sm_90. Both are real nvcc objects.
  constexpr const char* kEvfwMatrices = R"YAML(schema: 1
frameworks:
  evfw:
    main_package: evfw
    default_mirror: "https://evfw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
      nightly: "{mirror}/whl/nightly/{variant}"
    nightly_coupling: same-build-date
    source: "envfix tests/apply/test_apply.cpp"
    variants:
      cu128: {cuda: "12.8"}
    smoke:
      step_a: "import evfw; print('step A ok')"
      step_b: "import evfw; print('step B ok')"
      cpu:
        step: "import evfw; print('step A ok')"
    releases:
      - versions: ["3.0.0"]
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim (wrong: the binary holds sm_80)"}
      - nightly: "3.1.0"
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim"}
)YAML";

  std::string evfw_spec(const std::string& simple_dir, const std::string& version, const std::string& so) {
    return fmt::format(R"({{"simple_dir": "{}", "files_dir": "whl/files", "packages": [
    {{"name": "evfw", "version": "{}", "tags": ["py3-none-manylinux_2_17_x86_64"],
      "files": {{"evfw/__init__.py": "VALUE = 1\n", "evfw/lib/libevfw_kernels.so": {}}}}}
  ]}})",
                       simple_dir, version, byte_list(so));
  }

  TEST_CASE("framework apply keeps an installed typing-extensions the mirror lacks (the pydantic case); pip check passes") {
    auto spec = [](bool newer) {
      return fmt::format(R"({{"simple_dir": "whl/cu128", "files_dir": "whl/files", "json": false, "packages": [
      {{"name": "fixfw", "version": "1.0.0+cu128", "requires_dist": ["typing-extensions>=4.0"], "files": {{"fixfw/__init__.py": {}}}}},
      {{"name": "pydantic", "version": "2.13.4", "requires_dist": ["typing-extensions>=4.14.1"]}},
      {{"name": "typing-extensions", "version": "4.12.2"}}{}
    ]}})",
                         json(fixfw_init(false)).dump(), newer ? R"(, {"name": "typing-extensions", "version": "4.15.0"})" : "");
    };
    World w(spec(true));
    write(w.root() / "matrices/fixfw.yaml", kFixfwMatrices);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    auto p = w.pip(ve, {"install", "--index-url", w.http_base() + "/whl/cu128", "pydantic==2.13.4", "typing-extensions==4.15.0"});
    REQUIRE_MESSAGE(p.ok(), p.err);
    w.rebuild_index(spec(false)); // the mirror now holds typing-extensions 4.12.2 only
    auto r = w.envfix({"--format", "json", "apply", "fixfw", "--framework", "fixfw", "--matrices",
                       (w.root() / "matrices").string(), "--mirror", w.base_url(), "--gpu", "sm_90", "--driver", "580.65.06",
                       "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    REQUIRE(r.rc == 0);
    auto j = json::parse(r.out);
    CHECK(j["remove"].empty());
    CHECK(std::find(j["keep"].begin(), j["keep"].end(), json("typing-extensions==4.15.0")) != j["keep"].end());
    auto after = w.pip_list(ve);
    CHECK((after.count("typing-extensions") ? after.at("typing-extensions") : after.at("typing_extensions")) == "4.15.0");
    auto check = w.pip(ve, {"check"});
    CHECK_MESSAGE(check.ok(), (check.out + check.err));
  }

  TEST_CASE(
      "framework apply in a conda prefix: conda's framework package is refused, replaced only with --allow-conda-overwrite") {
    std::string spec = fmt::format(R"({{"simple_dir": "whl/cu128", "files_dir": "whl/files", "packages": [
    {{"name": "fixfw", "version": "1.0.0+cu128", "files": {{"fixfw/__init__.py": {}}}}},
    {{"name": "fixfw", "version": "1.1.0+cu128", "files": {{"fixfw/__init__.py": {}}}}}
  ]}})",
                                   json(fixfw_init(false)).dump(), json(fixfw_init(false)).dump());
    World w(spec);
    write(w.root() / "matrices/fixfw.yaml", kFixfwMatrices);
    auto ve = w.venv("condaenv");
    auto py = (ve / "bin/python").string();
    auto fw = [&](std::vector<std::string> extra) {
      std::vector<std::string> a{"apply",
                                 "--framework",
                                 "fixfw",
                                 "--matrices",
                                 (w.root() / "matrices").string(),
                                 "--mirror",
                                 w.base_url(),
                                 "--gpu",
                                 "sm_90",
                                 "--driver",
                                 "580.65.06",
                                 "--python",
                                 py,
                                 "--yes",
                                 "--lockfile",
                                 w.lockfile().string()};
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };
    REQUIRE(w.envfix(fw({"fixfw==1.0.0"})).rc == 0);
    fs::path site;
    for (const auto& e : fs::directory_iterator(ve / "lib"))
      if (e.path().filename().string().starts_with("python3")) site = e.path() / "site-packages";
    auto rel_site = fs::relative(site, ve).generic_string();
    write(ve / "conda-meta" / "fixfw-1.0.0-cuda128_h0_0.json",
          json{{"name", "fixfw"},
               {"version", "1.0.0"},
               {"build", "cuda128_h0_0"},
               {"channel", "test"},
               {"files", {rel_site + "/fixfw-1.0.0+cu128.dist-info/METADATA"}}}
              .dump());
    const auto before = manifest(ve);
    auto refused = w.envfix(fw({"fixfw==1.1.0"}));
    CHECK(refused.rc == 1);
    CHECK(refused.err.find("conda owns: fixfw 1.0.0+cu128 (conda package fixfw 1.0.0 cuda128_h0_0)") != std::string::npos);
    CHECK(manifest(ve) == before);
    auto ok = w.envfix(fw({"fixfw==1.1.0", "--allow-conda-overwrite"}));
    CHECK(ok.rc == 0);
    CHECK(w.pip_list(ve).at("fixfw") == "1.1.0+cu128");
  }

  TEST_CASE("evidence first: apply falls through a refused build; installed binaries are never 'nothing to do'; "
            "doctor's fix, run as printed, heals") {
    World w(evfw_spec("whl/cu128", "3.0.0+cu128", arch_shared_object("80")));
    w.rebuild_index(evfw_spec("whl/nightly/cu128", "3.1.0.dev20261201+cu128", arch_shared_object("90")));
    write(w.root() / "matrices/evfw.yaml", kEvfwMatrices);
    const std::string m = (w.root() / "matrices").string();
    auto target = [&](const fs::path& ve) {
      return std::vector<std::string>{"--framework", "evfw",       "--matrices", m,
                                      "--mirror",    w.base_url(), "--gpu",      "sm_90",
                                      "--driver",    "580.65.06",  "--python",   (ve / "bin/python").string()};
    };
    auto with = [](std::vector<std::string> a, std::vector<std::string> b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };

    SUBCASE("the stable build's downloaded binary lacks sm_90: apply installs the nightly in the same run") {
      auto ve = w.venv("venv");
      auto plan = w.envfix(with({"plan", "--format", "json"}, target(ve)));
      REQUIRE(plan.rc == 0);
      CHECK(json::parse(plan.out)["install"][0]["version"] == "3.0.0+cu128"); // the table's claim, before any binary is read
      auto a = w.envfix(with({"apply", "--yes", "--format", "json", "--lockfile", w.lockfile().string()}, target(ve)));
      REQUIRE(a.rc == 0);
      CHECK(a.err.find("kernel check refused evfw 3.0.0+cu128: none of its") != std::string::npos);
      CHECK(a.err.find("trying the next candidate") != std::string::npos);
      CHECK(a.err.find(" + evfw==3.1.0.dev20261201+cu128") != std::string::npos);
      auto j = json::parse(a.out);
      CHECK(j["channel"] == "nightly");
      REQUIRE(j["applied"]["kernel_refusals"].size() == 1);
      CHECK(j["applied"]["kernel_refusals"][0].get<std::string>().find("evfw 3.0.0+cu128") != std::string::npos);
      CHECK(w.pip_list(ve).at("evfw") == "3.1.0.dev20261201+cu128");
      // The lockfile records what the binary holds, verified.
      auto lock = slurp(w.lockfile());
      CHECK(lock.find("sm_90") != std::string::npos);
      CHECK(lock.find("verified: true") != std::string::npos);
      // `envfix matrix` shows what this apply learned, above the table, and that it disagrees with
      // the table's row (which claims sm_90).
      auto mx = w.envfix({"matrix", "--framework", "evfw", "--matrices", m, "--gpu", "sm_90"});
      CHECK(mx.rc == 0);
      auto learned = mx.err.find("read from the binary on this machine");
      REQUIRE(learned != std::string::npos);
      CHECK(mx.err.find("evfw 3.0.0+cu128 (cu128, manylinux_2_17_x86_64): SASS sm_80", learned) != std::string::npos);
      CHECK(mx.err.find("evfw 3.1.0.dev20261201+cu128 (cu128, manylinux_2_17_x86_64): SASS sm_90", learned) != std::string::npos);
      // The refused build is now known by its binary: plan skips it, and says why.
      auto again = w.envfix(with({"plan", "--explain", "--format", "json", "--channel", "stable"}, target(w.venv("other"))));
      CHECK(again.rc == 1);
      CHECK(again.err.find("read from the binaries (downloaded evfw 3.0.0+cu128") != std::string::npos);
    }
    SUBCASE("the installed set's binaries lack sm_90 though the matrices claim it: plan proposes a change") {
      auto ve = w.venv("venv");
      auto pip = w.pip(ve, {"install", "-q", "--index-url", w.http_base() + "/whl/cu128", "evfw"});
      REQUIRE_MESSAGE(pip.ok(), pip.err);
      REQUIRE(w.pip_list(ve).at("evfw") == "3.0.0+cu128");
      const auto before = manifest(ve);
      auto p = w.envfix(with({"plan", "--format", "json"}, target(ve)), {}, w.root() / "fresh-cache");
      REQUIRE(p.rc == 0);
      auto j = json::parse(p.out);
      REQUIRE(j["install"].size() == 1);
      CHECK(j["install"][0]["version"] == "3.1.0.dev20261201+cu128");
      bool rejected = false;
      for (const auto& r : j["rejected"])
        if (r["version"] == "3.0.0+cu128" && r["reason"] == "arch-not-covered" &&
            r["detail"].get<std::string>().find("installed in " + (ve / "lib").string()) != std::string::npos)
          rejected = true;
      CHECK(rejected);
      CHECK(p.err.find("Nothing to do") == std::string::npos);
      CHECK(manifest(ve) == before);

      // doctor: broken, from the binaries; its fix, run exactly as printed, heals the venv.
      auto d = w.envfix(with({"doctor", "--format", "json"}, target(ve)), {}, w.root() / "fresh-cache");
      CHECK(d.rc == 1);
      auto dj = json::parse(d.out);
      CHECK(dj["verdict"] == "broken");
      bool found = false;
      for (const auto& f : dj["findings"]) found = found || f["code"] == "arch-not-covered";
      CHECK(found);
      CHECK(dj["packages"][0]["kernels"]["coverage"]["sm_90"]["verdict"] == "none");
      auto fix = dj["fix"].get<std::string>();
      for (const char* opt : {"--mirror", "--matrices", "--framework evfw", "--gpu sm_90", "--driver 580.65.06"})
        CHECK_MESSAGE(fix.find(opt) != std::string::npos, fix);
      std::vector<std::string> argv;
      for (std::size_t i = 0, j2; i < fix.size(); i = j2 + 1) {
        j2 = fix.find(' ', i);
        if (j2 == std::string::npos) j2 = fix.size();
        if (j2 > i) argv.push_back(fix.substr(i, j2 - i));
      }
      REQUIRE(argv.at(0) == "envfix");
      argv[0] = envfix_bin().string(); // exactly as printed (it names the cache dir doctor used)
      auto healed = util::run_process(argv, w.envfix_options());
      REQUIRE(healed);
      MESSAGE(fix << " -> " << healed->exit_code << "\n" << healed->err);
      CHECK(healed->exit_code == 0);
      CHECK(w.pip_list(ve).at("evfw") == "3.1.0.dev20261201+cu128");
      auto d2 = w.envfix(with({"doctor", "--format", "json"}, target(ve)), {}, w.root() / "fresh-cache");
      CHECK(json::parse(d2.out)["verdict"] == "healthy");
      CHECK(d2.rc == 0);
    }
  }

  // Issue 56, item 3: a build is its files. The index serves evfw 3.0.0+cu128 with sm_90 code; the
  // installed evfw 3.0.0+cu128 came from another source, built for sm_80 (or partly for sm_90). The
  // installed binaries speak for the installed build only: the index's file, another build by its
  // RECORD, is planned in its place (never "no build covers sm_90", never "Nothing to do").
  TEST_CASE("a same-version build from another source: the index's file replaces it; doctor's fix, run as printed, heals") {
    auto spec = [](const std::string& simple_dir, const std::string& files_dir, const std::vector<std::string>& archs) {
      std::string files = R"("evfw/__init__.py": "VALUE = 1\n")";
      for (std::size_t i = 0; i < archs.size(); ++i)
        files += fmt::format(R"(, "evfw/lib/libevfw_kernels{}.so": {})", i, byte_list(arch_shared_object(archs[i])));
      return fmt::format(R"({{"simple_dir": "{}", "files_dir": "{}", "packages": [
        {{"name": "evfw", "version": "3.0.0+cu128", "tags": ["py3-none-manylinux_2_17_x86_64"], "files": {{{}}}}}]}})",
                         simple_dir, files_dir, files);
    };
    World w(spec("whl/cu128", "whl/files", {"90", "90"}));
    write(w.root() / "matrices/evfw.yaml", kEvfwMatrices);
    const std::string m = (w.root() / "matrices").string();
    auto target = [&](std::vector<std::string> head, const fs::path& ve) {
      head.insert(head.end(), {"--framework", "evfw", "--matrices", m, "--mirror", w.base_url(), "--gpu", "sm_90", "--driver",
                               "580.65.06", "--python", (ve / "bin/python").string()});
      return head;
    };
    auto install_other = [&](const std::vector<std::string>& archs) {
      w.rebuild_index(spec("other/simple", "other/files", archs));
      auto ve = w.venv("venv");
      auto pip = w.pip(ve, {"install", "-q", "--index-url", w.http_base() + "/other/simple", "evfw==3.0.0+cu128"});
      REQUIRE_MESSAGE(pip.ok(), pip.err);
      return ve;
    };
    // Each .so of the installed evfw, by its sha256 (the files a build is).
    auto so_hashes = [](const fs::path& ve) {
      std::map<std::string, std::string> out;
      for (const auto& e : fs::recursive_directory_iterator(ve))
        if (e.path().extension() == ".so" && e.path().string().find("/evfw/lib/") != std::string::npos)
          out[e.path().filename().string()] = util::sha256_hex(slurp(e.path()));
      return out;
    };
    const std::string index_so = util::sha256_hex(arch_shared_object("90")); // every .so of the index's build

    SUBCASE("the other build has no sm_90 code: doctor's fix, run as printed, installs the index's file") {
      auto ve = install_other({"80", "80"});
      const auto d = w.envfix(target({"doctor", "--format", "json", "--no-repro"}, ve));
      CHECK(d.rc == 1);
      const auto dj = json::parse(d.out);
      CHECK(dj["verdict"] == "broken");
      const auto fix = dj["fix"].get<std::string>();
      REQUIRE_MESSAGE(fix.starts_with("envfix apply evfw "), fix);
      auto healed = util::run_process({"/bin/sh", "-c", fix}, [&] {
        auto o = w.envfix_options();
        o.set_env["PATH"] = envfix_bin().parent_path().string() + ":/usr/bin:/bin";
        return o;
      }());
      REQUIRE(healed);
      MESSAGE(fix << " -> " << healed->exit_code << "\n" << healed->err);
      CHECK(healed->exit_code == 0);
      CHECK(healed->err.find("no GPU build") == std::string::npos);
      CHECK(w.pip_list(ve).at("evfw") == "3.0.0+cu128");
      for (const auto& [name, sha] : so_hashes(ve)) CHECK_MESSAGE(sha == index_so, name);
      const auto d2 = w.envfix(target({"doctor", "--format", "json", "--no-repro"}, ve));
      CHECK(json::parse(d2.out)["verdict"] == "healthy");
    }
    SUBCASE("the other build covers sm_90 partly: plan replaces it, never 'Nothing to do'") {
      auto ve = install_other({"90", "80"});
      const auto before = manifest(ve);
      const auto p = w.envfix(target({"plan", "--format", "json"}, ve));
      REQUIRE(p.rc == 0);
      const auto j = json::parse(p.out);
      REQUIRE(j["install"].size() == 1);
      CHECK(j["install"][0]["version"] == "3.0.0+cu128");
      CHECK(j["install"][0]["replaces"] == "3.0.0+cu128");
      CHECK(p.err.find("Nothing to do") == std::string::npos);
      CHECK(manifest(ve) == before);
      const auto a = w.envfix(target({"apply", "--yes"}, ve));
      CHECK(a.rc == 0);
      for (const auto& [name, sha] : so_hashes(ve)) CHECK_MESSAGE(sha == index_so, name);
    }
    SUBCASE("the installed build is the index's own file: its binaries decide for that file, nothing to replace") {
      auto ve = w.venv("venv");
      auto pip = w.pip(ve, {"install", "-q", "--index-url", w.http_base() + "/whl/cu128", "evfw==3.0.0+cu128"});
      REQUIRE_MESSAGE(pip.ok(), pip.err);
      const auto p = w.envfix(target({"plan", "--format", "json"}, ve));
      REQUIRE(p.rc == 0);
      CHECK(json::parse(p.out)["install"].empty());
    }
  }

  // Issue 56, item 8 (the guide's fix B, step 3): a wheel file the user downloaded is the user's chosen
  // build. `plan ./x.whl` and `name @ file://` were refused ("a direct URL requirement"); now the file
  // is the only candidate of its project (never replaced by the index's build of the same version),
  // and apply's kernel gate reads it like an index file's.
  TEST_CASE("a wheel file the user names: plan and apply take that very file; one without the GPU's code is refused") {
    auto spec = [](const std::string& simple_dir, const std::string& files_dir, const std::string& arch,
                   const std::string& mark) {
      return fmt::format(R"({{"simple_dir": "{}", "files_dir": "{}", "packages": [
        {{"name": "evfw", "version": "3.0.0+cu128", "tags": ["py3-none-manylinux_2_17_x86_64"], "files": {{
          "evfw/__init__.py": "VALUE = 1\n", "evfw/{}.py": "", "evfw/lib/libevfw_kernels.so": {}}}}}]}})",
                         simple_dir, files_dir, mark, byte_list(arch_shared_object(arch)));
    };
    World w(spec("whl/cu128", "whl/files", "90", "from_index"));
    write(w.root() / "matrices/evfw.yaml", kEvfwMatrices);
    const std::string m = (w.root() / "matrices").string();
    // The hand-downloaded files: another build of the same version, outside any index.
    auto download = [&](const std::string& dir, const std::string& arch, const std::string& mark) {
      w.rebuild_index(spec(dir + "/simple", dir + "/files", arch, mark));
      for (const auto& e : fs::directory_iterator(w.index_dir() / dir / "files"))
        if (e.path().extension() == ".whl") return e.path();
      FAIL("no wheel built under " << dir);
      return fs::path();
    };
    const auto mine = download("mine", "90", "mine");
    const auto old = download("old", "80", "old");
    auto ve = w.venv("venv");
    auto target = [&](std::vector<std::string> head) {
      head.insert(head.end(), {"--framework", "evfw", "--matrices", m, "--mirror", w.base_url(), "--gpu", "sm_90", "--driver",
                               "580.65.06", "--python", (ve / "bin/python").string()});
      return head;
    };
    const auto site = [&] {
      for (const auto& e : fs::recursive_directory_iterator(ve))
        if (e.path().filename() == "site-packages") return e.path();
      return fs::path();
    };

    SUBCASE("plan ./x.whl names that file, not the index's") {
      // As a user types it in the folder envfix runs in (the world's root).
      const auto rel = "./" + fs::relative(mine, w.root()).string();
      REQUIRE(!rel.starts_with("./.."));
      const auto p = w.envfix(target({"plan", "--format", "json", rel}));
      REQUIRE_MESSAGE(p.rc == 0, p.err);
      const auto j = json::parse(p.out);
      REQUIRE(j["install"].size() == 1);
      CHECK(j["install"][0]["url"].get<std::string>().starts_with("file://"));
      CHECK(j["install"][0]["url"].get<std::string>().find("/mine/files/") != std::string::npos);
      CHECK_MESSAGE(j["why"].get<std::string>().find("the file named in the request") != std::string::npos, p.out);
    }
    SUBCASE("apply evfw @ file:// installs that very file; again, it is nothing to do") {
      const auto url = "evfw @ file://" + mine.string();
      const auto a = w.envfix(target({"apply", "--yes", url}));
      REQUIRE_MESSAGE(a.rc == 0, a.err);
      CHECK(fs::exists(site() / "evfw/mine.py"));
      CHECK_FALSE(fs::exists(site() / "evfw/from_index.py"));
      const auto again = w.envfix(target({"plan", "--format", "json", url}));
      REQUIRE_MESSAGE(again.rc == 0, again.err);
      CHECK(json::parse(again.out)["install"].empty());
      // The index's build of the same version replaces it only when asked for by name.
      const auto idx = w.envfix(target({"apply", "--yes", "--reinstall", "evfw"}));
      REQUIRE_MESSAGE(idx.rc == 0, idx.err);
      CHECK(fs::exists(site() / "evfw/from_index.py"));
      // And the file named again replaces the index's build (another build at the same version).
      const auto back = w.envfix(target({"apply", "--yes", mine.string()}));
      REQUIRE_MESSAGE(back.rc == 0, back.err);
      CHECK(fs::exists(site() / "evfw/mine.py"));
    }
    SUBCASE("a file without the GPU's code is refused by the kernel gate, naming it; nothing changes") {
      const auto before = manifest(ve);
      const auto a = w.envfix(target({"apply", "--yes", old.string()}));
      CHECK(a.rc != 0);
      CHECK_MESSAGE(a.err.find("sm_90") != std::string::npos, a.err);
      CHECK_MESSAGE(a.err.find("evfw") != std::string::npos, a.err);
      CHECK(manifest(ve) == before);
    }
    SUBCASE("a plain wheel file (no framework) installs as pip would, beside the index's dependencies") {
      w.rebuild_index(R"({"simple_dir": "loose/simple", "files_dir": "loose/files", "packages": [
        {"name": "loosepkg", "version": "1.0", "files": {"loosepkg/__init__.py": "X = 1\n"}}]})");
      fs::path file;
      for (const auto& e : fs::directory_iterator(w.index_dir() / "loose/files"))
        if (e.path().extension() == ".whl") file = e.path();
      REQUIRE(!file.empty());
      const auto a = w.envfix({"apply", "--yes", file.string(), "--index-url", w.base_url() + "/whl/cu128", "--python",
                               (ve / "bin/python").string()});
      REQUIRE_MESSAGE(a.rc == 0, a.err);
      CHECK(w.pip_list(ve).at("loosepkg") == "1.0");
    }
    SUBCASE("bad file requests are named: no such file, another project's file, an https URL") {
      const auto none = w.envfix(target({"plan", "./no-such-1.0-py3-none-any.whl"}));
      CHECK(none.rc != 0);
      CHECK_MESSAGE(none.err.find("no-such-1.0-py3-none-any.whl': no such wheel file") != std::string::npos, none.err);
      const auto other = w.envfix(target({"plan", "otherpkg @ file://" + mine.string()}));
      CHECK(other.rc != 0);
      CHECK_MESSAGE(other.err.find("a build of evfw, not of otherpkg") != std::string::npos, other.err);
      const auto web = w.envfix(target({"plan", "evfw @ https://example.invalid/evfw-3.0.0-py3-none-any.whl"}));
      CHECK(web.rc != 0);
      CHECK_MESSAGE(web.err.find("only from a local wheel") != std::string::npos, web.err);
    }
  }

  // Issue 56, item 1: the release that covers the GPU lacks a companion (torchaudio for a nightly).
  // "gapfw" 3.0.0 (stable) has sm_80 only; its nightly 3.1.0 has sm_90, but the nightly index has no
  // gapaudio. The error's first line names that, and its hint is the request without gapaudio, proven
  // to resolve before it is printed; run as printed, it installs the nightly and removes gapaudio.
  constexpr const char* kGapfwMatrices = R"YAML(schema: 1
frameworks:
  gapfw:
    main_package: gapfw
    companions: [gapaudio]
    default_mirror: "https://gapfw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
      nightly: "{mirror}/whl/nightly/{variant}"
    nightly_coupling: same-build-date
    source: "envfix tests/apply/test_apply.cpp"
    variants:
      cu128: {cuda: "12.8"}
    smoke:
      step_a: "import gapfw; print('step A ok')"
      step_b: "import gapfw; print('step B ok')"
      companions:
        gapaudio: "import gapaudio; print('gapaudio ok')"
      cpu:
        step: "import gapfw; print('cpu ok')"
        companions:
          gapaudio: "import gapaudio; print('gapaudio ok')"
    releases:
      - versions: ["3.0.0"]
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_80], ptx: [], confidence: verified, source: "test fixture"}
      - nightly: "3.1.0"
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test fixture"}
    coupling:
      - {version: "3.0.0", date: "2026-01-01", companions: {gapaudio: "3.0.0"}, source: "test fixture"}
)YAML";

  TEST_CASE("the covering nightly lacks a companion: the error names it; the proven request without it, run as printed, heals") {
    auto pkg = [](const std::string& name, const std::string& version, const std::string& requires_dist,
                  const std::string& arch) {
      std::string files = fmt::format(R"("{}/__init__.py": "VALUE = 1\n")", name);
      if (!arch.empty()) files += fmt::format(R"(, "{}/lib/lib{}.so": {})", name, name, byte_list(arch_shared_object(arch)));
      return fmt::format(R"({{"name": "{}", "version": "{}", "tags": ["py3-none-manylinux_2_17_x86_64"], "requires_dist": [{}],
        "files": {{{}}}}})",
                         name, version, requires_dist, files);
    };
    World w(fmt::format(R"({{"simple_dir": "whl/cu128", "files_dir": "whl/files", "packages": [{}, {}]}})",
                        pkg("gapfw", "3.0.0+cu128", "", "80"), pkg("gapaudio", "3.0.0+cu128", R"("gapfw==3.0.0")", "80")));
    w.rebuild_index(fmt::format(R"({{"simple_dir": "whl/nightly/cu128", "files_dir": "whl/files", "packages": [{}]}})",
                                pkg("gapfw", "3.1.0.dev20261201+cu128", "", "90")));
    write(w.root() / "matrices/gapfw.yaml", kGapfwMatrices);
    auto ve = w.venv("venv");
    auto pip = w.pip(ve, {"install", "-q", "--index-url", w.http_base() + "/whl/cu128", "gapfw==3.0.0+cu128", "gapaudio"});
    REQUIRE_MESSAGE(pip.ok(), pip.err);
    const auto before = manifest(ve);

    auto a = w.envfix({"apply", "gapfw", "gapaudio", "--framework", "gapfw", "--matrices", (w.root() / "matrices").string(),
                       "--mirror", w.base_url(), "--gpu", "sm_90", "--driver", "580.65.06", "--python",
                       (ve / "bin/python").string(), "--yes"});
    CHECK(a.rc != 0);
    CHECK(manifest(ve) == before);
    // The first line is the real reason of the nearest rejection.
    const auto first = a.err.substr(0, a.err.find('\n'));
    CHECK_MESSAGE(first.find("gapfw 3.1.0.dev20261201+cu128 (nightly cu128) has code for sm_90, but its index has no gapaudio "
                             "for it (companion-missing)") != std::string::npos,
                  first);
    CHECK(first.find("no GPU build") == std::string::npos);
    const auto at = a.err.find("`envfix apply ");
    REQUIRE_MESSAGE(at != std::string::npos, a.err);
    const auto fix = a.err.substr(at + 1, a.err.find('`', at + 1) - at - 1);
    CHECK(fix.find("gapaudio") == std::string::npos);
    CHECK(fix.find("--channel nightly") != std::string::npos);
    CHECK(a.err.find("gapaudio has no build for gapfw 3.1.0.dev20261201+cu128") != std::string::npos);

    // doctor proves its fix before it shows it: the request it would print (gapfw gapaudio) does not
    // resolve, so its fix is that same nearest request, and says why.
    auto d = w.envfix({"doctor", "--format", "json", "--no-repro", "--framework", "gapfw", "--matrices",
                       (w.root() / "matrices").string(), "--mirror", w.base_url(), "--gpu", "sm_90", "--driver", "580.65.06",
                       "--python", (ve / "bin/python").string()});
    CHECK(d.rc == 1);
    const auto dj = json::parse(d.out);
    REQUIRE(dj["frameworks"].size() == 1);
    CHECK(dj["frameworks"][0]["fix_proof"]["state"] == "nearest");
    CHECK(dj["frameworks"][0]["fix_proof"]["detail"].get<std::string>().find("gapaudio has no build for gapfw") !=
          std::string::npos);
    CHECK(dj["fix"] == fix);

    // The printed command, as printed (envfix on PATH; --yes is the answer to its prompt).
    auto o = w.envfix_options();
    o.set_env["PATH"] = envfix_bin().parent_path().string() + ":/usr/bin:/bin";
    auto healed = util::run_process({"/bin/sh", "-c", fix + " --yes"}, o);
    REQUIRE(healed);
    MESSAGE(fix << " -> " << healed->exit_code << "\n" << healed->err);
    CHECK(healed->exit_code == 0);
    const auto after = w.pip_list(ve);
    CHECK(after.at("gapfw") == "3.1.0.dev20261201+cu128");
    CHECK_FALSE(after.contains("gapaudio"));
  }

  // "cpufw" has a CUDA variant and a CPU variant. Its GPU steps always fail, so a pass proves that the
  // CPU step ran instead; the CPU step checks that it cannot see a GPU, and fails when CPUFW_FAIL is set.
  constexpr const char* kCpufwMatrices = R"YAML(schema: 1
frameworks:
  cpufw:
    main_package: cpufw
    default_mirror: "https://cpufw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
    source: "envfix tests/apply/test_apply.cpp"
    variants:
      cu128: {cuda: "12.8"}
      cpu: {kind: cpu}
    smoke:
      step_a: "raise SystemExit('step A ran on the GPU path')"
      step_b: "raise SystemExit('step B ran on the GPU path')"
      cpu:
        step: "import os, cpufw; assert os.environ.get('CUDA_VISIBLE_DEVICES') == '', 'a GPU is visible'; print(cpufw.compute())"
    releases:
      - versions: ["1.0.0", "1.1.0"]
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim"}
          cpu:
            linux_x86_64: {confidence: verified, source: "test claim"}
)YAML";

  std::string cpufw_spec(const std::string& variant) {
    auto init = [](bool can_fail) {
      std::string s = "import os\n\n";
      // A refused build whose import writes under the prefix (issue 60, 1): a .pth Python runs at every
      // start, a script in bin/, a package; with CPUFW_PERSIST=edit also a line into a file it did not install.
      if (can_fail)
        s += "if os.environ.get('CPUFW_PERSIST'):\n"
             "    import sys\n"
             "    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
             "    open(os.path.join(site, 'zz-persist.pth'), 'w').write('import os\\n')\n"
             "    open(os.path.join(os.path.dirname(sys.executable), 'helper'), 'w').write('#!/bin/sh\\n')\n"
             "    os.makedirs(os.path.join(site, 'evil_pkg'), exist_ok=True)\n"
             "    open(os.path.join(site, 'evil_pkg', '__init__.py'), 'w').write('')\n"
             "    if os.environ['CPUFW_PERSIST'] == 'edit':\n"
             "        open(os.path.join(site, 'user-notes.txt'), 'a').write('appended by a refused build\\n')\n"
             "    raise RuntimeError('cpufw: refused build (fixture)')\n\n";
      s += "def compute():\n";
      if (can_fail)
        s += "    if os.environ.get('CPUFW_FAIL'):\n        raise RuntimeError('cpufw: wrong result on the CPU (fixture)')\n"
             "    if os.environ.get('CPUFW_CHATTY'):\n        import sys\n"
             "        while True:\n            sys.stdout.write('y' * 65536)\n";
      return s + "    return sum(i * i for i in range(256))\n";
    };
    return fmt::format(R"({{"simple_dir": "whl/{0}", "files_dir": "whl/files", "packages": [
    {{"name": "cpufw", "version": "1.0.0+{0}", "files": {{"cpufw/__init__.py": {1}}}}},
    {{"name": "cpufw", "version": "1.1.0+{0}", "files": {{"cpufw/__init__.py": {2}}}}}
  ]}})",
                       variant, json(init(false)).dump(), json(init(true)).dump());
  }

  // installer/verify_guard.hpp: the smoke test runs the refused build's own code, which may write under
  // the prefix outside the journal; the rollback removes what appeared, and names what changed in place.
  TEST_CASE("framework apply: what a refused build's import wrote under the prefix goes with the rollback (issue 60, 1)") {
    World w(cpufw_spec("cu128"));
    write(w.root() / "matrices/cpufw.yaml", kCpufwMatrices);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    auto fw = [&](const std::string& req) {
      return std::vector<std::string>{"apply",     req,          "--framework",        "cpufw",
                                      "--variant", "cu128",      "--matrices",         (w.root() / "matrices").string(),
                                      "--mirror",  w.base_url(), "--python",           py,
                                      "--yes",     "--lockfile", w.lockfile().string()};
    };
    auto ok = w.envfix(fw("cpufw==1.0.0"), {{"ENVFIX_NO_NVML", "1"}});
    REQUIRE_MESSAGE(ok.rc == 0, ok.err);
    fs::path site;
    for (const auto& e : fs::directory_iterator(ve / "lib"))
      if (fs::is_directory(e.path() / "site-packages")) site = e.path() / "site-packages";
    REQUIRE(!site.empty());
    write(site / "user-notes.txt", "mine\n");
    const auto before = manifest(ve);

    auto bad = w.envfix(fw("cpufw==1.1.0"), {{"ENVFIX_NO_NVML", "1"}, {"CPUFW_PERSIST", "1"}});
    CHECK(bad.rc == 2);
    INFO(bad.err);
    CHECK(bad.err.find("refused build (fixture)") != std::string::npos);
    CHECK(bad.err.find("the transaction was rolled back; the environment is unchanged") != std::string::npos);
    CHECK(bad.err.find("removed what the smoke test wrote under the prefix: ") != std::string::npos);
    CHECK(bad.err.find("zz-persist.pth") != std::string::npos);
    CHECK(bad.err.find((ve / "bin/helper").string()) != std::string::npos);
    CHECK(manifest(ve) == before); // no .pth, no bin/helper, no evil_pkg, no bytecode of the new set

    // A line written into a file the set does not own cannot be taken back: said, never "unchanged".
    auto edit = w.envfix(fw("cpufw==1.1.0"), {{"ENVFIX_NO_NVML", "1"}, {"CPUFW_PERSIST", "edit"}});
    CHECK(edit.rc == 2);
    INFO(edit.err);
    CHECK(edit.err.find("the environment is unchanged") == std::string::npos);
    CHECK(edit.err.find("rolled back, but the smoke test changed files the rollback cannot restore") != std::string::npos);
    CHECK(edit.err.find("changed in place by the smoke test: " + (site / "user-notes.txt").string()) != std::string::npos);
    auto after = manifest(ve);
    auto expected = before;
    after.erase(fs::relative(site / "user-notes.txt", ve).generic_string());
    expected.erase(fs::relative(site / "user-notes.txt", ve).generic_string());
    CHECK(after == expected);
  }

  TEST_CASE("framework apply without a GPU, or of a CPU build: the smoke test runs on the CPU, and its failure rolls back") {
    World w(cpufw_spec("cu128"));
    w.rebuild_index(cpufw_spec("cpu"));
    write(w.root() / "matrices/cpufw.yaml", kCpufwMatrices);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    const std::map<std::string, std::string> no_gpu{{"ENVFIX_NO_NVML", "1"}};
    auto fw = [&](std::vector<std::string> extra) {
      std::vector<std::string> a{"apply",      "--framework",         "cpufw",    "--matrices", (w.root() / "matrices").string(),
                                 "--mirror",   w.base_url(),          "--python", py,           "--yes",
                                 "--lockfile", w.lockfile().string(), "--format", "json"};
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };

    // No GPU on the host, the CUDA build: the CPU step runs, with the reason said.
    auto ok = w.envfix(fw({"cpufw==1.0.0", "--variant", "cu128"}), no_gpu);
    REQUIRE(ok.rc == 0);
    CHECK(ok.err.find("Smoke test passed on the CPU (no GPU): CPU step") != std::string::npos);
    CHECK(ok.err.find("ran on the GPU path") == std::string::npos);
    auto j = json::parse(ok.out);
    CHECK(j["applied"]["smoke"]["device"] == "cpu");
    CHECK(j["applied"]["smoke"]["passed"] == json::array({"CPU step"}));
    CHECK(j["applied"]["smoke"]["note"] == "no GPU: smoke test ran on the CPU");
    CHECK(w.pip_list(ve).at("cpufw") == "1.0.0+cu128");
    const auto before = manifest(ve);

    SUBCASE("a failing CPU smoke test rolls back to a byte-identical venv, with the framework's error") {
      auto bad = w.envfix(fw({"cpufw==1.1.0", "--variant", "cu128"}), {{"ENVFIX_NO_NVML", "1"}, {"CPUFW_FAIL", "1"}});
      CHECK(bad.rc == 2);
      CHECK(bad.err.find("smoke test CPU step failed") != std::string::npos);
      CHECK(bad.err.find("cpufw: wrong result on the CPU (fixture)") != std::string::npos);
      CHECK(manifest(ve) == before);
      CHECK(w.pip_list(ve).at("cpufw") == "1.0.0+cu128");
    }
    SUBCASE("a CPU build on a GPU host is smoke-tested on the CPU, not with the GPU steps") {
      auto cpu = w.envfix(fw({"cpufw==1.1.0", "--variant", "cpu", "--allow-cpu", "--gpu", "sm_90", "--driver", "580.65.06"}));
      CHECK(cpu.rc == 0);
      CHECK(cpu.err.find("Smoke test passed on the CPU (CPU build): CPU step") != std::string::npos);
      CHECK(w.pip_list(ve).at("cpufw") == "1.1.0+cpu");
    }
    SUBCASE("without a CPU step in the matrices, a GPU-less apply says that no smoke test ran") {
      auto text = std::string(kCpufwMatrices);
      auto at = text.find("      cpu:\n        step:");
      text.erase(at, text.find("    releases:") - at);
      write(w.root() / "matrices/cpufw.yaml", text);
      auto r = w.envfix(fw({"cpufw==1.1.0", "--variant", "cu128"}), no_gpu);
      CHECK(r.rc == 0);
      CHECK(r.err.find("no GPU: smoke test skipped (cpufw has no CPU smoke test in the matrices)") != std::string::npos);
      CHECK(json::parse(r.out)["applied"]["smoke"]["device"].is_null());
    }
  }

  // The shipped torch matrices list no `cpu` row per release, yet download.pytorch.org has a CPU
  // build of every release: --allow-cpu and a GPU-less host must find /whl/cpu (issue 33, item 2).
  TEST_CASE("torch's CPU set from the real matrices: --allow-cpu on a GPU no build covers, and a host without GPUs") {
    World w(kTorchCu126Index);
    w.rebuild_index(R"({"simple_dir": "pt/whl/cpu", "files_dir": "pt/whl/files", "packages": [
    {"name": "torch", "version": "2.7.0+cpu", "tags": ["py3-none-manylinux_2_17_x86_64"]}]})");
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    auto plan = [&](std::vector<std::string> extra, std::map<std::string, std::string> env = {}) {
      std::vector<std::string> a{"--format", "json", "plan", "torch==2.7.0", "--mirror", w.base_url() + "/pt/whl",
                                 "--python", py};
      a.insert(a.end(), extra.begin(), extra.end());
      return w.envfix(a, std::move(env));
    };
    const std::vector<std::string> sm120{"--gpu", "sm_120", "--driver", "580.65.06"};
    auto refused = plan(sm120);
    CHECK(refused.rc == 1);
    CHECK(refused.err.find("--allow-cpu") != std::string::npos);
    // Fix C as it runs: a checkout at the tag, not `pip install --no-binary torch` (no sdist exists).
    CHECK(refused.err.find("git clone --branch v2.7.0 --recursive https://github.com/pytorch/pytorch") != std::string::npos);
    CHECK(refused.err.find("--no-binary") == std::string::npos);

    auto cpu = plan({"--gpu", "sm_120", "--driver", "580.65.06", "--allow-cpu"});
    REQUIRE_MESSAGE(cpu.rc == 0, cpu.err);
    auto j = json::parse(cpu.out);
    CHECK(j["variant"] == "cpu");
    REQUIRE(j["install"].size() == 1);
    CHECK(j["install"][0]["version"] == "2.7.0+cpu");
    CHECK(j["install"][0]["url"].get<std::string>().find("/pt/whl/") != std::string::npos);
    CHECK(j["gpu_set_replaced"].is_null()); // nothing installed yet

    // Over an installed GPU build, the CPU set says what the GPU set it replaces takes (issue 56).
    auto pip = w.pip(ve, {"install", "-q", "--index-url", w.http_base() + "/pt/whl/cu126", "torch==2.7.0+cu126"});
    REQUIRE_MESSAGE(pip.ok(), pip.err);
    auto over = plan({"--gpu", "sm_120", "--driver", "580.65.06", "--allow-cpu"});
    REQUIRE_MESSAGE(over.rc == 0, over.err);
    const auto oj = json::parse(over.out);
    REQUIRE(oj["gpu_set_replaced"].is_object());
    CHECK(oj["gpu_set_replaced"]["packages"] == 1);
    CHECK(oj["gpu_set_replaced"]["bytes"].get<std::uint64_t>() > 0);
    const auto text = w.envfix({"plan", "torch==2.7.0", "--mirror", w.base_url() + "/pt/whl", "--python", py, "--gpu", "sm_120",
                                "--driver", "580.65.06", "--allow-cpu"});
    CHECK_MESSAGE(text.err.find("The CPU set replaces a GPU package that takes") != std::string::npos, text.err);

    // No GPU at all: the CPU set first, not the CUDA build and its runtime wheels.
    auto bare = plan({}, {{"ENVFIX_NO_NVML", "1"}});
    REQUIRE_MESSAGE(bare.rc == 0, bare.err);
    CHECK(json::parse(bare.out)["variant"] == "cpu");
    CHECK(json::parse(bare.out)["install"][0]["version"] == "2.7.0+cpu");
  }

  // Integrated GPUs (Tegra) have no SASS compatibility between minors (issue 34, item 1), on real
  // nvcc-built bytes: an sm_80-only library is `none` on an Orin (tegra:8.7) and `full` on an A10 (8.6);
  // an sm_87 library runs on the Orin only; `--gpu orin` names the Jetson part from the matrices.
  TEST_CASE("inspect on real nvcc output: sm_80 and sm_87 libraries judged for an integrated 8.7 and a discrete 8.6") {
    auto dir = util::make_temp_dir({}, "envfix-tegra").value();
    write(dir / "libsm80.so", arch_shared_object("80"));
    write(dir / "libsm87.so", arch_shared_object("87"));
    auto inspect = [&](const std::string& file, std::vector<std::string> gpus) {
      std::vector<std::string> argv{envfix_bin().string(), "inspect", (dir / file).string(), "--format", "json"};
      for (const auto& g : gpus) argv.insert(argv.end(), {"--gpu", g});
      auto r = util::run_process(argv, {.timeout = std::chrono::seconds(300)});
      REQUIRE(r);
      INFO(r->err);
      return json::parse(r->out)["files"][0]["coverage"];
    };
    auto sm80 = inspect("libsm80.so", {"tegra:8.7", "8.6"});
    INFO(sm80.dump());
    CHECK(sm80["sm_87"]["verdict"] == "none");
    CHECK(sm80["sm_86"]["verdict"] == "full");
    auto sm87 = inspect("libsm87.so", {"tegra:8.7", "8.9"});
    INFO(sm87.dump());
    CHECK(sm87["sm_87"]["verdict"] == "full");
    CHECK(sm87["sm_89"]["verdict"] == "none"); // Tegra SASS does not run on a desktop part
    fs::remove_all(dir);
  }

  // apply's smoke test is envfix verify's layers 1 and 2 (repro, model) unless --smoke-layers says less.
  TEST_CASE("framework apply: the smoke test runs the model layer too, and a failing model rolls back") {
    World w(cpufw_spec("cu128"));
    auto text = std::string(kCpufwMatrices);
    const std::string cpu_step = "        step: \"import os, cpufw;";
    auto at = text.find("\n", text.find(cpu_step)) + 1;
    text.insert(
        at,
        "      model:\n"
        "        \"tiny model\": \"import os, cpufw; assert os.environ['ENVFIX_DEVICE'] == 'cpu'; print('OP matmul', flush=True); "
        "assert not os.environ.get('CPUFW_MODEL_FAIL'), 'matmul gave NaN (fixture)'\"\n"
        "        \"torchvision: needs a companion\": \"raise SystemExit('ran without its companion')\"\n");
    write(w.root() / "matrices/cpufw.yaml", text);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    auto fw = [&](const std::string& req, std::vector<std::string> extra = {}) {
      std::vector<std::string> a{"apply",
                                 "--framework",
                                 "cpufw",
                                 req,
                                 "--variant",
                                 "cu128",
                                 "--matrices",
                                 (w.root() / "matrices").string(),
                                 "--mirror",
                                 w.base_url(),
                                 "--python",
                                 py,
                                 "--yes",
                                 "--lockfile",
                                 w.lockfile().string(),
                                 "--format",
                                 "json"};
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };
    const std::map<std::string, std::string> no_gpu{{"ENVFIX_NO_NVML", "1"}};
    auto ok = w.envfix(fw("cpufw==1.0.0"), no_gpu);
    REQUIRE_MESSAGE(ok.rc == 0, ok.err);
    CHECK(json::parse(ok.out)["applied"]["smoke"]["passed"] == json::array({"CPU step", "model: tiny model"}));
    // The lockfile records where that passed (no GPU: an empty GPU list, the interpreter, the steps).
    auto lock_text = util::read_file(w.lockfile()).value();
    CHECK(lock_text.find("    verified-on:\n      gpus: []\n") != std::string::npos);
    INFO(lock_text);
    // By kind and version, never this machine's path (issue 33, item 8: no per-developer absolute paths).
    CHECK(lock_text.find("      interpreter: \"python ") != std::string::npos);
    CHECK(lock_text.find("(venv)") != std::string::npos);
    CHECK(lock_text.find(w.root().string()) == std::string::npos);
    CHECK(lock_text.find("model: tiny model") != std::string::npos);
    const auto before = manifest(ve);
    auto bad = w.envfix(fw("cpufw==1.1.0"), {{"ENVFIX_NO_NVML", "1"}, {"CPUFW_MODEL_FAIL", "1"}});
    CHECK(bad.rc == 2);
    CHECK(bad.err.find("smoke test model: tiny model failed") != std::string::npos);
    CHECK(bad.err.find("matmul gave NaN (fixture)") != std::string::npos);
    CHECK(manifest(ve) == before);
    auto repro_only =
        w.envfix(fw("cpufw==1.1.0", {"--smoke-layers", "repro"}), {{"ENVFIX_NO_NVML", "1"}, {"CPUFW_MODEL_FAIL", "1"}});
    CHECK(repro_only.rc == 0);
    CHECK(json::parse(repro_only.out)["applied"]["smoke"]["passed"] == json::array({"CPU step"}));
    auto wrong = w.envfix(fw("cpufw==1.0.0", {"--smoke-layers", "repro,app"}), no_gpu);
    CHECK(wrong.rc != 0);
    CHECK(wrong.err.find("'app': the layers are repro and model") != std::string::npos);
  }

  // smoke/smoke.hpp: the smoke steps run in one interpreter (the model step sees what the CPU step left
  // in sys.modules), each timed in the JSON; a step that kills the interpreter or hangs is that
  // step's failure, and the transaction rolls back.
  TEST_CASE("framework apply: the smoke steps share one interpreter; a step that crashes it or hangs rolls back") {
    World w(cpufw_spec("cu128"));
    auto text = std::string(kCpufwMatrices);
    const std::string cpu_step = "        step: \"import os, cpufw;";
    text.replace(text.find(cpu_step), cpu_step.size(),
                 "        step: \"import sys, types; sys.modules['cpufw_marker'] = types.ModuleType('m'); import os, cpufw;");
    auto at = text.find("\n", text.find(cpu_step.substr(0, 14))) + 1;
    text.insert(
        at,
        "      model:\n"
        "        \"shared\": \"import sys; assert 'cpufw_marker' in sys.modules, 'a fresh interpreter: the steps do not share one'\"\n"
        "        \"unstable\": \"import os, signal, time; os.environ.get('CPUFW_SEGV') and os.kill(os.getpid(), signal.SIGSEGV); "
        "os.environ.get('CPUFW_HANG') and time.sleep(3600)\"\n");
    write(w.root() / "matrices/cpufw.yaml", text);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    auto fw = [&](const std::string& req) {
      return std::vector<std::string>{"apply",
                                      "--framework",
                                      "cpufw",
                                      req,
                                      "--variant",
                                      "cu128",
                                      "--matrices",
                                      (w.root() / "matrices").string(),
                                      "--mirror",
                                      w.base_url(),
                                      "--python",
                                      py,
                                      "--yes",
                                      "--smoke-timeout",
                                      "15",
                                      "--lockfile",
                                      w.lockfile().string(),
                                      "--format",
                                      "json"};
    };
    auto ok = w.envfix(fw("cpufw==1.0.0"), {{"ENVFIX_NO_NVML", "1"}});
    REQUIRE_MESSAGE(ok.rc == 0, ok.err);
    auto applied = json::parse(ok.out)["applied"];
    CHECK(applied["smoke"]["passed"] == json::array({"CPU step", "model: shared", "model: unstable"}));
    auto& timed = applied["timings"]["smoke"];
    CHECK(timed["interpreters"] == 1);
    REQUIRE(timed["steps"].size() == 3);
    CHECK(timed["steps"][1]["name"] == "model: shared");
    CHECK(timed["steps"][1]["seconds"].get<double>() >= 0);
    const auto before = manifest(ve);
    auto segv = w.envfix(fw("cpufw==1.1.0"), {{"ENVFIX_NO_NVML", "1"}, {"CPUFW_SEGV", "1"}});
    CHECK(segv.rc == 2);
    CHECK(segv.err.find("smoke test model: unstable failed in") != std::string::npos);
    CHECK(segv.err.find("(exit signal 11)") != std::string::npos);
    CHECK(segv.err.find("rolled back") != std::string::npos);
    CHECK(manifest(ve) == before);
    // The step sleeps an hour: the bound (far below it, far above a loaded machine's whole apply)
    // catches envfix waiting for it. 15 s per step (not less) so that the steps which pass do so on
    // a loaded machine too.
    const auto t0 = std::chrono::steady_clock::now();
    auto hang = w.envfix(fw("cpufw==1.1.0"), {{"ENVFIX_NO_NVML", "1"}, {"CPUFW_HANG", "1"}});
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1500));
    CHECK(hang.rc == 2);
    CHECK(hang.err.find("smoke test model: unstable timed out after 15s") != std::string::npos);
    CHECK(hang.err.find("rolled back") != std::string::npos);
    CHECK(manifest(ve) == before);
    CHECK(w.pip_list(ve).at("cpufw") == "1.0.0+cu128");
  }

  // docs/reliability.md §5 item 8: a smoke test that prints without end (gigabytes within the
  // timeout) once ended in std::bad_alloc, exit 134, mid-transaction. Its output is now capped, the
  // step stopped at its timeout, and the transaction rolled back.
  TEST_CASE("security 8: a smoke test that prints without end is stopped at its timeout, its output capped, and rolled back") {
    World w(cpufw_spec("cu128"));
    write(w.root() / "matrices/cpufw.yaml", kCpufwMatrices);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    auto fw = [&](const std::string& req) {
      return std::vector<std::string>{"apply",
                                      "--framework",
                                      "cpufw",
                                      req,
                                      "--variant",
                                      "cu128",
                                      "--matrices",
                                      (w.root() / "matrices").string(),
                                      "--mirror",
                                      w.base_url(),
                                      "--python",
                                      py,
                                      "--yes",
                                      "--smoke-timeout",
                                      "15",
                                      "--lockfile",
                                      w.lockfile().string()};
    };
    const std::map<std::string, std::string> no_gpu{{"ENVFIX_NO_NVML", "1"}};
    REQUIRE(w.envfix(fw("cpufw==1.0.0"), no_gpu).rc == 0);
    const auto before = manifest(ve);
    auto chatty = w.envfix(fw("cpufw==1.1.0"), {{"ENVFIX_NO_NVML", "1"}, {"CPUFW_CHATTY", "1"}});
    INFO(chatty.err.substr(0, 2000));
    CHECK(chatty.rc == 2);
    CHECK(chatty.err.find("timed out after 15s") != std::string::npos);
    CHECK(chatty.err.find("rolled back") != std::string::npos);
    CHECK(chatty.err.size() < 64 * 1024); // the error quotes the tail of the output, not all of it
    CHECK(manifest(ve) == before);
    CHECK(w.pip_list(ve).at("cpufw") == "1.0.0+cu128");
  }

  // apply --locked removes what a plain apply of the same set removes (resolver/plan.hpp over the
  // locked set): here the old cu126 build's nvidia-* runtime wheel, which the cu128 lock does not have.
  constexpr const char* kRtfwMatrices = R"YAML(schema: 1
frameworks:
  rtfw:
    main_package: rtfw
    default_mirror: "https://rtfw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
    source: "envfix tests/apply/test_apply.cpp"
    variants:
      cu126: {cuda: "12.6"}
      cu128: {cuda: "12.8"}
    smoke:
      step_a: "import rtfw; print('step A ok')"
      step_b: "import rtfw; print('step B ok')"
      cpu:
        step: "import rtfw; print('step A ok')"
    releases:
      - versions: ["1.0.0"]
        python: [cp311, cp312, cp313]
        source: "test fixture"
        variants:
          cu126:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim"}
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim"}
)YAML";

  TEST_CASE("apply --locked removes the old variant's unused nvidia-* runtime wheels, as plain apply does") {
    auto spec = [](const std::string& variant, bool runtime) {
      return fmt::format(R"({{"simple_dir": "whl/{0}", "files_dir": "whl/files", "packages": [
      {{"name": "rtfw", "version": "1.0.0+{0}", "requires_dist": [{1}], "files": {{"rtfw/__init__.py": "X = 1\n"}}}}{2}
    ]}})",
                         variant, runtime ? R"("nvidia-rt-cu12==1.0")" : "",
                         runtime ? R"(, {"name": "nvidia-rt-cu12", "version": "1.0", "files": {"nvidia/rt/__init__.py": ""}})"
                                 : "");
    };
    World w(spec("cu126", true));
    w.rebuild_index(spec("cu128", false));
    write(w.root() / "matrices/rtfw.yaml", kRtfwMatrices);
    auto ve = w.venv("venv");
    auto args = [&](std::vector<std::string> a) {
      a.insert(a.end(),
               {"--framework", "rtfw", "--matrices", (w.root() / "matrices").string(), "--mirror", w.base_url(), "--gpu", "sm_90",
                "--driver", "580.65.06", "--python", (ve / "bin/python").string(), "--lockfile", w.lockfile().string()});
      return a;
    };
    REQUIRE(w.envfix(args({"apply", "rtfw", "--variant", "cu126", "--yes"})).rc == 0);
    REQUIRE(w.pip_list(ve).contains("nvidia-rt-cu12"));
    REQUIRE(w.envfix(args({"lock", "rtfw", "--variant", "cu128"})).rc == 0);
    auto r = w.envfix(args({"apply", "--locked", "--yes"}));
    REQUIRE(r.rc == 0);
    CHECK(r.err.find(" - nvidia-rt-cu12==1.0") != std::string::npos);
    CHECK(r.err.find(" + rtfw==1.0.0+cu128") != std::string::npos);
    const auto after = w.pip_list(ve);
    CHECK_FALSE(after.contains("nvidia-rt-cu12"));
    CHECK(after.at("rtfw") == "1.0.0+cu128");
  }

} // TEST_SUITE

TEST_SUITE("cli/apply/apply") {

  TEST_CASE("cache dir, size and clean") {
    auto root = util::make_temp_dir({}, "envfix-cache-test").value();
    write(root / "c/wheels/ab/x.whl", std::string(3000, 'x'));
    write(root / "c/pages/p", std::string(100, 'y'));
    write(root / "c/.envfix-cache", ""); // envfix's marker: clean refuses a directory without it
    auto run = [&](std::vector<std::string> a) {
      std::vector<std::string> argv{envfix_bin().string()};
      argv.insert(argv.end(), a.begin(), a.end());
      return util::run_process(argv).value();
    };
    auto d = run({"cache", "dir", "--cache-dir", (root / "c").string()});
    CHECK(d.ok());
    CHECK(d.out == (root / "c").string() + "\n");
    auto s = run({"--format", "json", "cache", "size", "--cache-dir", (root / "c").string()});
    REQUIRE(s.ok());
    auto j = json::parse(s.out);
    CHECK(j["bytes"] == 3100);
    CHECK(j["files"] == 3);
    auto c = run({"cache", "clean", "--cache-dir", (root / "c").string()});
    CHECK(c.ok());
    CHECK(fs::exists(root / "c"));
    for (const auto& e : fs::directory_iterator(root / "c")) // only the marker and the cache lock stay
      CHECK_MESSAGE((e.path().filename() == ".envfix-cache" || e.path().filename() == ".lock"), e.path());
    fs::remove_all(root);
  }

  // The environment around the request (docs/architecture.md, Choosing the framework set): pip keeps
  // an installed version that satisfies every requirement on it, and envfix must too.
  // pydantic 2.13.4 needs typing-extensions>=4.14.1; the venv has 4.15.0; the index (HTML only: no
  // sizes, PEP 700 sizes are JSON-only) later holds typing-extensions 4.12.2 alone.
  constexpr const char* kNeighboursFull = R"({"packages": [
  {"name": "pydantic", "version": "2.13.4", "requires_dist": ["typing-extensions>=4.14.1"]},
  {"name": "typing-extensions", "version": "4.15.0"},
  {"name": "typing-extensions", "version": "4.12.2"}
], "json": false})";
  constexpr const char* kNeighboursMirror = R"({"packages": [
  {"name": "typing-extensions", "version": "4.12.2"},
  {"name": "app", "version": "1.0", "requires_dist": ["typing-extensions>=4.0"]},
  {"name": "oldapp", "version": "1.0", "requires_dist": ["typing-extensions<4.13"]}
], "json": false})";

  // A venv with pydantic 2.13.4 and typing-extensions 4.15.0 from the full index, which then becomes
  // the mirror.
  fs::path neighbours_venv(World & w) {
    auto ve = w.venv("venv");
    auto p = w.pip(ve, {"install", "--index-url", w.pip_index_url(), "pydantic==2.13.4", "typing-extensions==4.15.0"});
    REQUIRE_MESSAGE(p.ok(), p.err);
    w.rebuild_index(kNeighboursMirror);
    return ve;
  }

  TEST_CASE("apply keeps an installed version that satisfies every requirement (pydantic/typing-extensions); pip check passes") {
    World w(kNeighboursFull);
    auto ve = neighbours_venv(w);
    auto py = (ve / "bin/python").string();
    std::error_code ec;
    fs::remove_all(w.index_dir() / "simple" / "pydantic", ec);

    auto plan = w.envfix({"--format", "json", "plan", "app", "--index-url", w.index_url(), "--python", py});
    REQUIRE(plan.rc == 0);
    auto j = json::parse(plan.out);
    REQUIRE(j["install"].size() == 1);
    CHECK(j["install"][0]["name"] == "app");
    CHECK(j["remove"].empty());
    CHECK(std::find(j["keep"].begin(), j["keep"].end(), json("typing-extensions==4.15.0")) != j["keep"].end());
    // The target interpreter is named with how it was chosen.
    CHECK(j["host"]["interpreter"] == py);
    CHECK(j["host"]["interpreter_from"] == "--python");
    // An HTML index gives no sizes: the plan says so instead of "0 B".
    CHECK(j["download_size_unknown"] == 1);
    auto text = w.envfix({"plan", "app", "--index-url", w.index_url(), "--python", py});
    CHECK(text.err.find("Would download size unknown (1 file)") != std::string::npos);
    CHECK(text.err.find("0 B") == std::string::npos);
    CHECK(text.err.find("interpreter: " + py + " (from --python)") != std::string::npos);

    auto r =
        w.envfix({"apply", "app", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    REQUIRE(r.rc == 0);
    auto after = w.pip_list(ve);
    CHECK((after.count("typing-extensions") ? after.at("typing-extensions") : after.at("typing_extensions")) == "4.15.0");
    CHECK(after.at("app") == "1.0");
    auto check = w.pip(ve, {"check"});
    CHECK_MESSAGE(check.ok(), (check.out + check.err));
    // The size of what was downloaded is learned; nothing is ever written as 0.
    auto lock = slurp(w.lockfile());
    CHECK(lock.find("name: app") != std::string::npos);
    CHECK(lock.find("size: 0") == std::string::npos);
    auto at = lock.find("name: app");
    CHECK(lock.find("size: ", at) != std::string::npos);
  }

  TEST_CASE("a plan that would break an installed package is refused naming it; the venv is byte-identical after") {
    World w(kNeighboursFull);
    auto ve = neighbours_venv(w);
    auto py = (ve / "bin/python").string();
    auto before = manifest(ve);
    auto plan = w.envfix({"--format", "json", "plan", "oldapp", "--index-url", w.index_url(), "--python", py});
    CHECK(plan.rc == 1);
    CHECK(plan.err.find("pydantic==2.13.4 requires typing-extensions>=4.14.1") != std::string::npos);
    CHECK(plan.err.find("--allow-breaking") != std::string::npos);
    auto j = json::parse(plan.out);
    CHECK(j["error"]["code"] == "unsatisfiable");
    auto r =
        w.envfix({"apply", "oldapp", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    CHECK(r.rc == 1);
    CHECK(r.err.find("would break 1 installed package: pydantic==2.13.4") != std::string::npos);
    CHECK(manifest(ve) == before);
    CHECK(!fs::exists(w.lockfile()));
    // The forced replacement names who forces it; --allow-breaking plans it with a warning.
    auto forced =
        w.envfix({"--format", "json", "plan", "oldapp", "--index-url", w.index_url(), "--python", py, "--allow-breaking"});
    REQUIRE(forced.rc == 0);
    auto fj = json::parse(forced.out);
    bool named = false;
    for (const auto& i : fj["install"])
      if (i["name"] == "typing-extensions")
        named = i["replaces"] == "4.15.0" && i["required_by"].dump().find("oldapp") != std::string::npos;
    CHECK(named);
    CHECK(fj["warnings"].dump().find("pydantic==2.13.4 requires typing-extensions>=4.14.1") != std::string::npos);
  }

  TEST_CASE("lock from an HTML index without sizes: sizes from HEAD, never size = 0; export --all -o DIR creates DIR") {
    World w(kNeighboursMirror);
    auto lk = w.envfix({"lock", "app", "--index-url", w.index_url(), "-o", w.lockfile().string()});
    REQUIRE(lk.rc == 0);
    auto lock = slurp(w.lockfile());
    CHECK(lock.find("size: 0") == std::string::npos);
    std::size_t n = 0;
    for (auto at = lock.find("size: "); at != std::string::npos; at = lock.find("size: ", at + 1)) ++n;
    CHECK(n == 2);
    auto dir = w.root() / "out" / "nested";
    auto ex = w.envfix({"--lockfile", w.lockfile().string(), "export", "--as", "pylock", "--all", "-o", dir.string()});
    REQUIRE(ex.rc == 0);
    REQUIRE(fs::is_directory(dir));
    for (const auto& e : fs::directory_iterator(dir)) {
      auto t = slurp(e.path());
      CHECK(t.find("size = 0") == std::string::npos);
      CHECK(t.find("size = ") != std::string::npos);
    }
  }

  TEST_CASE("repeatable options take one value per occurrence: --gpu, --find-links, --target never swallow what follows") {
    World w(kPlainIndex);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    auto links = w.index_dir() / "files";
    auto fl = w.envfix({"plan", "--find-links", links.string(), "alpha", "--python", py});
    CHECK(fl.rc == 0);
    CHECK(fl.err.find("nothing to resolve") == std::string::npos);
    CHECK(fl.err.find(" + alpha==1.1") != std::string::npos);
    auto gpu = w.envfix({"plan", "--gpu", "sm_120", "alpha", "--index-url", w.index_url(), "--python", py});
    CHECK(gpu.err.find("not an arch") == std::string::npos);
    CHECK(gpu.rc == 0);
    auto gpus = w.envfix({"plan", "--gpu", "sm_120,sm_90", "alpha", "--index-url", w.index_url(), "--python", py});
    CHECK(gpus.rc == 0);
    CHECK(gpus.err.find("(sm_120), planned sm_90 (sm_90)") != std::string::npos);
    auto lk = w.envfix({"lock", "--target", "python=3.11", "alpha", "--index-url", w.index_url(), "-o", w.lockfile().string()});
    CHECK(lk.rc == 0);
    CHECK(slurp(w.lockfile()).find("name: alpha") != std::string::npos);
    auto ins = w.envfix({"inspect", "--gpu", "sm_90", (links / "beta-1.0-py3-none-any.whl").string()});
    CHECK(ins.err.find("files is required") == std::string::npos);
    // A --mirror whose indexes all answer 404 says so, naming the URLs (not "no build fits").
    auto mirror = w.envfix({"plan", "torch", "--mirror", w.base_url() + "/no-such-mirror", "--gpu", "sm_90", "--driver",
                            "580.65.06", "--python", py});
    CHECK(mirror.rc == 1);
    CHECK(mirror.err.find("answered HTTP 404") != std::string::npos);
    CHECK(mirror.err.find("/no-such-mirror/") != std::string::npos);
    CHECK(mirror.err.find("driver-too-old") == std::string::npos);
    auto ap = w.envfix(
        {"apply", "--find-links", links.string(), "alpha", "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    CHECK(ap.rc == 0);
    CHECK(w.pip_list(ve).at("alpha") == "1.1");
    // rollback -y (as scripts written for apply pass it) undoes that apply.
    auto rb = w.envfix({"rollback", "-y", "--python", py});
    CHECK(rb.rc == 0);
    CHECK(!w.pip_list(ve).count("alpha"));
    // --gpu before a requirement on apply and lock, and repeated on matrix and doctor.
    auto ag = w.envfix({"apply", "--gpu", "sm_90", "alpha", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile",
                        w.lockfile().string()});
    CHECK(ag.rc == 0);
    CHECK(w.pip_list(ve).at("alpha") == "1.1");
    auto lg = w.envfix({"lock", "--gpu", "sm_90", "alpha", "--index-url", w.index_url(), "-o", (w.root() / "g.lock").string()});
    CHECK(lg.rc == 0);
    CHECK(slurp(w.root() / "g.lock").find("id: sm_90-") != std::string::npos);
    auto mg = w.envfix({"--format", "json", "matrix", "--gpu", "sm_61", "--gpu", "sm_90,sm_120"});
    REQUIRE(mg.rc == 0);
    CHECK(json::parse(mg.out)["gpus"].size() == 3);
    auto dg = w.envfix({"--format", "json", "doctor", "--gpu", "sm_90", "--gpu", "sm_80", "--driver", "580.65.06", "--python", py,
                        "--no-repro"});
    CHECK(json::parse(dg.out)["gpus"].size() == 2);
  }

  TEST_CASE("free-threaded targets: plan and lock for --python-version 3.13t pick cp313t wheels") {
    World w(R"({"packages": [
    {"name": "ftpkg", "version": "1.0", "tags": ["cp313-cp313-manylinux_2_28_x86_64", "cp313-cp313t-manylinux_2_28_x86_64",
                                                  "cp39-abi3-manylinux_2_28_x86_64"]}]})");
    auto plan = w.envfix({"--format", "json", "plan", "ftpkg", "--index-url", w.index_url(), "--python-version", "3.13t",
                          "--platform", "manylinux_2_28_x86_64"});
    REQUIRE(plan.rc == 0);
    auto j = json::parse(plan.out);
    REQUIRE(j["install"].size() == 1);
    CHECK(j["install"][0]["filename"] == "ftpkg-1.0-cp313-cp313t-manylinux_2_28_x86_64.whl");
    auto text = w.envfix(
        {"plan", "ftpkg", "--index-url", w.index_url(), "--python-version", "3.13t", "--platform", "manylinux_2_28_x86_64"});
    CHECK(text.err.find("free-threaded (cp313t") != std::string::npos);
    // Without the t: the GIL build.
    auto gil = w.envfix({"--format", "json", "plan", "ftpkg", "--index-url", w.index_url(), "--python-version", "3.13",
                         "--platform", "manylinux_2_28_x86_64"});
    REQUIRE(gil.rc == 0);
    CHECK(json::parse(gil.out)["install"][0]["filename"] == "ftpkg-1.0-cp313-cp313-manylinux_2_28_x86_64.whl");
    auto lk = w.envfix({"lock", "ftpkg", "--index-url", w.index_url(), "--target", "python=3.13t,platform=manylinux_2_28_x86_64",
                        "--target", "python=3.12,platform=manylinux_2_28_x86_64", "-o", w.lockfile().string()});
    REQUIRE(lk.rc == 0);
    auto lock = slurp(w.lockfile());
    CHECK(lock.find("id: cpu-cp313t-manylinux_2_28_x86_64") != std::string::npos);
    CHECK(lock.find("filename: ftpkg-1.0-cp313-cp313t-manylinux_2_28_x86_64.whl") != std::string::npos);
    CHECK(lock.find("filename: ftpkg-1.0-cp39-abi3-manylinux_2_28_x86_64.whl") != std::string::npos); // the 3.12 target
    // --explain lists every rejected candidate on a failed plan too, in the JSON error document as well.
    auto ex = w.envfix({"--format", "json", "plan", "ftpkg", "--index-url", w.index_url(), "--python-version", "3.13",
                        "--platform", "manylinux_2_17_x86_64", "--explain"});
    CHECK(ex.rc == 1);
    auto ej = json::parse(ex.out);
    REQUIRE(ej["error"]["rejected"].size() == 3);
    CHECK(ej["error"]["rejected"][0]["reason"] == "platform");
    auto ext = w.envfix({"plan", "ftpkg", "--index-url", w.index_url(), "--python-version", "3.13", "--platform",
                         "manylinux_2_17_x86_64", "--explain"});
    CHECK(ext.err.find("rejected (3):") != std::string::npos);
    auto bad = w.envfix({"plan", "ftpkg", "--index-url", w.index_url(), "--python-version", "3.12t"});
    CHECK(bad.rc == 1);
    CHECK(bad.err.find("free-threaded builds exist from 3.13 on") != std::string::npos);
  }

  // A conda-like prefix: conda-meta/ records own dist-infos (and kernels in $PREFIX/lib); envfix reads
  // them and leaves conda's packages to conda unless --allow-conda-overwrite.
  TEST_CASE("conda prefix: doctor reads conda-meta; apply refuses to replace conda's package, then succeeds with the flag") {
    World w(kPlainIndex);
    auto ve = w.venv("condaenv");
    auto py = (ve / "bin/python").string();
    auto p = w.pip(ve, {"install", "--index-url", w.pip_index_url(), "alpha==1.0"});
    REQUIRE_MESSAGE(p.ok(), p.err);
    fs::path site;
    for (const auto& e : fs::directory_iterator(ve / "lib"))
      if (e.path().filename().string().starts_with("python3")) site = e.path() / "site-packages";
    REQUIRE(fs::is_directory(site));
    auto rel_site = fs::relative(site, ve).generic_string();
    // alpha belongs to conda; so does a torch whose kernels conda put in $PREFIX/lib.
    write(site / "alpha-1.0.dist-info" / "INSTALLER", "conda\n");
    write(ve / "conda-meta" / "alpha-1.0-py_0.json",
          json{{"name", "alpha"},
               {"version", "1.0"},
               {"build", "py_0"},
               {"channel", "conda-forge"},
               {"files", {rel_site + "/alpha-1.0.dist-info/METADATA", rel_site + "/alpha/__init__.py"}}}
              .dump());
    // conda-forge's layout: the pytorch record owns the dist-info, the libtorch record it depends on
    // owns the CUDA kernels in $PREFIX/lib (here a real sm_80-only object, so that on sm_90 the read
    // shows: no code runs). torchvision came from pip, beside conda's torch.
    write(site / "torch-2.9.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n");
    write(site / "torch-2.9.0.dist-info" / "INSTALLER", "conda\n");
    write(site / "torch-2.9.0.dist-info" / "RECORD", "");
    write(ve / "lib" / "libtorch_cuda.so", arch_shared_object("80"));
    write(ve / "conda-meta" / "pytorch-2.9.0-cuda129_mkl_py311_h0_300.json",
          json{{"name", "pytorch"},
               {"version", "2.9.0"},
               {"build", "cuda129_mkl_py311_h0_300"},
               {"channel", "https://conda.anaconda.org/conda-forge"},
               {"depends", {"libtorch 2.9.0 cuda129_mkl_h0_300", "python >=3.11"}},
               {"files", {rel_site + "/torch-2.9.0.dist-info/METADATA", rel_site + "/torch/__init__.py"}}}
              .dump());
    write(ve / "conda-meta" / "libtorch-2.9.0-cuda129_mkl_h0_300.json",
          json{{"name", "libtorch"},
               {"version", "2.9.0"},
               {"build", "cuda129_mkl_h0_300"},
               {"depends", json::array()},
               {"files", {"lib/libtorch_cuda.so", "include/torch/torch.h"}}}
              .dump());
    write(site / "torchvision-0.24.0.dist-info" / "METADATA",
          "Metadata-Version: 2.1\nName: torchvision\nVersion: 0.24.0\nRequires-Dist: torch==2.9.0\n");
    write(site / "torchvision-0.24.0.dist-info" / "INSTALLER", "pip\n");
    write(site / "torchvision-0.24.0.dist-info" / "RECORD", "");

    auto doc = w.envfix({"doctor", "--python", py, "--gpu", "sm_90", "--driver", "580.65.06", "--no-repro", "--format", "json"});
    auto dj = json::parse(doc.out);
    bool seen = false, vision = false;
    for (const auto& pk : dj["packages"]) {
      if (pk["name"] == "torch") {
        seen = true;
        CHECK(pk["variant"] == "cu129");
        CHECK(pk["variant_from"] == "conda-meta");
        CHECK(pk["source"].get<std::string>().starts_with("conda:pytorch 2.9.0 cuda129"));
        REQUIRE(pk["kernels"].is_object()); // $PREFIX/lib was read, through libtorch's record
        CHECK(pk["kernels"]["scanned"].get<int>() >= 1);
        CHECK(pk["kernels"]["sass"] == json::array({"sm_80"}));
        CHECK(pk["kernels"]["coverage"]["sm_90"]["verdict"] == "none");
      }
      if (pk["name"] == "torchvision") {
        vision = true;
        CHECK(pk["installer"] == "pip");
        CHECK(pk["source"].get<std::string>().find("conda") == std::string::npos);
      }
    }
    CHECK(seen);
    CHECK(vision);
    CHECK(dj["python"]["env"] != "system");
    CHECK(dj["findings"].dump().find("conda-owned") != std::string::npos);
    CHECK(dj["findings"].dump().find("torch 2.9.0 belongs to conda (pytorch 2.9.0 cuda129_mkl_py311_h0_300)") !=
          std::string::npos);
    CHECK(dj["findings"].dump().find("torchvision 0.24.0 belongs to conda") == std::string::npos);

    auto before = manifest(ve);
    auto shown = w.envfix(
        {"--format", "json", "plan", "alpha==1.1", "--index-url", w.index_url(), "--python", py, "--allow-conda-overwrite"});
    REQUIRE(shown.rc == 0);
    auto sj = json::parse(shown.out);
    REQUIRE(sj["remove"].size() == 1);
    CHECK(sj["remove"][0]["conda"] == "alpha 1.0 py_0");
    auto r = w.envfix(
        {"apply", "alpha==1.1", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    CHECK(r.rc == 1);
    CHECK(r.err.find("conda owns: alpha 1.0 (conda package alpha 1.0 py_0)") != std::string::npos);
    CHECK(r.err.find("conda install") != std::string::npos);
    CHECK(r.err.find("--allow-conda-overwrite") != std::string::npos);
    CHECK(manifest(ve) == before);
    auto ok = w.envfix({"apply", "alpha==1.1", "--index-url", w.index_url(), "--python", py, "--yes", "--allow-conda-overwrite",
                        "--lockfile", w.lockfile().string()});
    CHECK(ok.rc == 0);
    CHECK(ok.err.find("--allow-conda-overwrite: replacing alpha 1.0") != std::string::npos);
    // (the plan shows the removal as conda's)
    CHECK(w.pip_list(ve).at("alpha") == "1.1");
    // apply --locked replaces every locked package: conda's are refused there too.
    write(site / "alpha-1.1.dist-info" / "INSTALLER", "conda\n");
    auto before_locked = manifest(ve);
    auto locked = w.envfix({"apply", "--locked", "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    CHECK(locked.rc == 1);
    CHECK(locked.err.find("conda owns: alpha 1.1") != std::string::npos);
    CHECK(manifest(ve) == before_locked);
  }

  // Index errors are reported as what they are, naming the URL: a 404 (plain and framework mode), a
  // certificate the client does not trust (TLS), a host that does not resolve (DNS; .invalid never
  // resolves, RFC 6761) - never "nothing found" or "no build fits".
  TEST_CASE("index errors: 404, TLS and DNS are reported as such, naming the URL; nothing changes") {
    World w(kPlainIndex);
    World other(R"({"packages": [{"name": "zeta", "version": "1.0"}]})");
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    const auto before = manifest(ve);
    auto run_with = [&](std::vector<std::string> args, util::SubprocessOptions o) {
      std::vector<std::string> argv{envfix_bin().string()};
      argv.insert(argv.end(), args.begin(), args.end());
      argv.insert(argv.end(), {"--cache-dir", w.cache().string()});
      auto r = util::run_process(argv, o);
      REQUIRE(r);
      MESSAGE("-> " << r->exit_code << "\n" << r->err);
      return Run{r->exit_code, r->out, r->err};
    };
    // TLS: the index's certificate is signed by a CA this envfix does not trust (the other world's).
    auto o = w.envfix_options();
    o.set_env["SSL_CERT_FILE"] = other.envfix_options().set_env.at("SSL_CERT_FILE");
    auto tls = run_with(
        {"apply", "alpha", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()}, o);
    CHECK(tls.rc != 0);
    CHECK(tls.err.find(w.index_url() + "/alpha/") != std::string::npos);
    CHECK(tls.err.find("TLS certificate not trusted") != std::string::npos);
    CHECK(tls.err.find("SSL_CERT_FILE") != std::string::npos);
    CHECK(tls.err.find("nothing to resolve") == std::string::npos);
    // DNS.
    const std::string dead = "https://envfix-no-such-host.invalid/simple";
    auto dns = w.envfix({"plan", "alpha", "--index-url", dead, "--python", py});
    CHECK(dns.rc != 0);
    CHECK(dns.err.find(dead + "/alpha/") != std::string::npos);
    CHECK(dns.err.find("DNS lookup failed") != std::string::npos);
    CHECK(dns.err.find("host name") != std::string::npos);
    auto dns_fw = w.envfix({"plan", "torch", "--mirror", "https://envfix-no-such-host.invalid", "--gpu", "sm_90", "--driver",
                            "580.65.06", "--python", py});
    CHECK(dns_fw.rc != 0);
    CHECK(dns_fw.err.find("envfix-no-such-host.invalid/") != std::string::npos);
    CHECK(dns_fw.err.find("DNS lookup failed") != std::string::npos);
    CHECK(dns_fw.err.find("no build of") == std::string::npos);
    // 404: a wrong --index-url base.
    auto nf = w.envfix({"plan", "alpha", "--index-url", w.base_url() + "/wrong/simple", "--python", py});
    CHECK(nf.rc != 0);
    CHECK(nf.err.find(w.base_url() + "/wrong/simple/alpha/") != std::string::npos);
    CHECK(nf.err.find("404") != std::string::npos);
    CHECK(manifest(ve) == before);
    CHECK(!fs::exists(w.lockfile()));
  }

  // The framework path (matrices, variant, lock target) for a free-threaded interpreter: a matrices
  // release listing cp313t, an index with the GIL and the free-threaded build of one version.
  TEST_CASE("framework plan and lock for --python-version 3.13t pick the cp313t build; envfix matrix lists cp313t") {
    std::string spec = R"({"simple_dir": "whl/cu128", "files_dir": "whl/files", "packages": [
    {"name": "fixfw", "version": "1.0.0+cu128", "tags": ["cp313-cp313-manylinux_2_28_x86_64", "cp313-cp313t-manylinux_2_28_x86_64",
                                                         "cp312-cp312-manylinux_2_28_x86_64"]}]})";
    World w(spec);
    std::string m = kFixfwMatrices;
    m.replace(m.find("python: [cp311, cp312]"), 22, "python: [cp312, cp313, cp313t]");
    write(w.root() / "matrices/fixfw.yaml", m);
    const std::string mdir = (w.root() / "matrices").string();
    auto fw = [&](std::vector<std::string> a) {
      a.insert(a.end(), {"--framework", "fixfw", "--matrices", mdir, "--mirror", w.base_url()});
      return a;
    };
    auto plan = w.envfix(fw({"--format", "json", "plan", "fixfw", "--gpu", "sm_90", "--driver", "580.65.06", "--python-version",
                             "3.13t", "--platform", "manylinux_2_28_x86_64"}));
    REQUIRE(plan.rc == 0);
    auto j = json::parse(plan.out);
    CHECK(j["variant"] == "cu128");
    CHECK(j["channel"] == "stable");
    REQUIRE(j["install"].size() == 1);
    CHECK(j["install"][0]["filename"] == "fixfw-1.0.0+cu128-cp313-cp313t-manylinux_2_28_x86_64.whl");
    auto gil = w.envfix(fw({"--format", "json", "plan", "fixfw", "--gpu", "sm_90", "--driver", "580.65.06", "--python-version",
                            "3.13", "--platform", "manylinux_2_28_x86_64"}));
    REQUIRE(gil.rc == 0);
    CHECK(json::parse(gil.out)["install"][0]["filename"] == "fixfw-1.0.0+cu128-cp313-cp313-manylinux_2_28_x86_64.whl");
    auto lk = w.envfix(
        fw({"lock", "fixfw", "--target", "gpu=sm_90,python=3.13t,driver=580.65.06,platform=manylinux_2_28_x86_64", "--target",
            "gpu=sm_90,python=3.12,driver=580.65.06,platform=manylinux_2_28_x86_64", "-o", w.lockfile().string()}));
    REQUIRE(lk.rc == 0);
    auto lock = slurp(w.lockfile());
    CHECK(lock.find("framework: fixfw") != std::string::npos);
    auto ft = lock.find("id: sm_90-cp313t-manylinux_2_28_x86_64");
    REQUIRE(ft != std::string::npos);
    CHECK(lock.find("python: 3.13t", ft) != std::string::npos);
    CHECK(lock.find("filename: fixfw-1.0.0+cu128-cp313-cp313t-manylinux_2_28_x86_64.whl", ft) != std::string::npos);
    CHECK(lock.find("variant: cu128", ft) != std::string::npos);
    CHECK(lock.find("filename: fixfw-1.0.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl") != std::string::npos);
    // The pylock of the free-threaded target installs the cp313t wheel on 3.13.
    auto dir = w.root() / "pylock";
    REQUIRE(w.envfix({"--lockfile", w.lockfile().string(), "export", "--as", "pylock", "--all", "-o", dir.string()}).rc == 0);
    auto ftl = slurp(dir / "pylock.sm_90-cp313t-manylinux_2_28_x86_64.toml");
    CHECK_MESSAGE(ftl.find("requires-python = '==3.13.*'") != std::string::npos, ftl);
    CHECK(ftl.find("cp313-cp313t-manylinux_2_28_x86_64.whl") != std::string::npos);
    CHECK(ftl.find("cp313-cp313-manylinux") == std::string::npos);
    // The matrices row says which Python builds the release has, free-threaded ones included.
    auto mx = w.envfix({"--format", "json", "matrix", "--matrices", mdir, "--framework", "fixfw", "--version", "1.0.0"});
    REQUIRE(mx.rc == 0);
    CHECK(json::parse(mx.out)["release"]["python"] == json::array({"cp312", "cp313", "cp313t"}));
  }

  // A kept package the index does not serve is never silently left out of the lockfile: it is locked
  // under installed-only with its provenance; apply --locked requires it (docs/lockfile.md).
  TEST_CASE("lockfile: a kept package no index serves is locked as installed-only, and apply --locked requires it") {
    World w(kNeighboursFull);
    auto ve = neighbours_venv(w);
    auto py = (ve / "bin/python").string();
    auto r =
        w.envfix({"apply", "app", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    REQUIRE(r.rc == 0);
    CHECK(r.err.find("typing-extensions 4.15.0 is kept as installed, but no index of the set serves it") != std::string::npos);
    CHECK(r.err.find("interpreter: " + py + " (from --python)") != std::string::npos);
    auto lock = slurp(w.lockfile());
    auto io = lock.find("    installed-only:\n      - name: typing-extensions\n        version: \"4.15.0\"\n");
    REQUIRE(io != std::string::npos);
    CHECK(lock.find("provenance: \"installed by pip; not served by " + w.index_url(), io) != std::string::npos);
    CHECK(lock.find("filename: typing_extensions-4.15.0") == std::string::npos);
    // envfix lock resolves from the index alone (a lock is for every machine of its targets): the
    // index's typing-extensions, nothing installed-only.
    auto lk_path = w.root() / "lock2.lock";
    auto lk = w.envfix({"lock", "app", "--index-url", w.index_url(), "--python", py, "-o", lk_path.string()});
    REQUIRE(lk.rc == 0);
    CHECK(lk.err.find("kept as installed") == std::string::npos);
    CHECK(slurp(lk_path).find("installed-only:") == std::string::npos);
    CHECK(slurp(lk_path).find("filename: typing_extensions-4.12.2-") != std::string::npos);
    CHECK(lk.err.find("interpreter: " + py + " (from --python)") != std::string::npos);
    // That lock would break pydantic here: apply --locked runs the same pip check as a plan.
    const auto before_locked = manifest(ve);
    auto breaking = w.envfix({"apply", "--locked", "--python", py, "--yes", "--lockfile", lk_path.string()});
    CHECK(breaking.rc == 1);
    CHECK(breaking.err.find("pydantic==2.13.4 requires typing-extensions>=4.14.1") != std::string::npos);
    CHECK(manifest(ve) == before_locked);
    // Here it is installed: --locked reinstalls app and leaves typing-extensions be.
    auto again = w.envfix({"apply", "--locked", "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    CHECK(again.rc == 0);
    auto check = w.pip(ve, {"check"});
    CHECK_MESSAGE(check.ok(), (check.out + check.err));
    // A fresh venv lacks it: refused naming it, nothing changed.
    auto fresh = w.venv("fresh");
    const auto before = manifest(fresh);
    auto refused = w.envfix(
        {"apply", "--locked", "--python", (fresh / "bin/python").string(), "--yes", "--lockfile", w.lockfile().string()});
    CHECK(refused.rc == 1);
    CHECK(refused.err.find("keeps 1 package no index serves") != std::string::npos);
    CHECK(refused.err.find("typing-extensions 4.15.0 (installed by pip; not served by") != std::string::npos);
    CHECK(refused.err.find("not installed") != std::string::npos);
    CHECK(manifest(fresh) == before);
    // The exports name it instead of pretending to install it.
    auto rq = w.envfix({"--lockfile", w.lockfile().string(), "export", "--as", "requirements"});
    REQUIRE(rq.rc == 0);
    CHECK(rq.out.find("# not installed by this file: typing-extensions==4.15.0") != std::string::npos);
  }

} // TEST_SUITE

} // namespace apply_apply_test
