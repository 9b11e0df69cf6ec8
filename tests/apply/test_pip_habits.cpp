// Issue 36, the habits of pip and uv users, end to end through the binary against nginx over HTTPS:
// the index pip and uv are configured with (pip.conf, PIP_INDEX_URL, uv.toml) and envfix.toml, used
// and said so; -r requirements files with pip-compile-style hashes and --require-hashes; -c
// constraints; pyproject.toml with extras; apply --dry-run.
#include <doctest/doctest.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/apply/apply_world.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"

namespace apply_pip_habits_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace envfix::apply_test;

namespace {

// A PyPI-like index ("pypi/simple") and a mirror of it ("mirror/simple") that alone has `habit-dep`
// 1.5, so that a plan says which one it read. `habit-app` needs habit-dep.
constexpr const char* kPypi = R"({"simple_dir": "pypi/simple", "files_dir": "pypi/files", "packages": [
  {"name": "habit-app", "version": "1.0", "requires_dist": ["habit-dep>=1"]},
  {"name": "habit-dep", "version": "1.0"},
  {"name": "habit-dep", "version": "2.0"},
  {"name": "habit-opt", "version": "3.0"}
]})";
constexpr const char* kMirror = R"({"simple_dir": "mirror/simple", "files_dir": "mirror/files", "packages": [
  {"name": "habit-app", "version": "1.0", "requires_dist": ["habit-dep>=1"]},
  {"name": "habit-dep", "version": "1.5"}
]})";

struct Habits {
  World w{kPypi};
  fs::path venv;
  std::string py;
  Habits() {
    w.rebuild_index(kMirror);
    venv = w.venv("venv");
    py = (venv / "bin/python").string();
  }
  std::string pypi() const { return w.base_url() + "/pypi/simple"; }
  std::string mirror() const { return w.base_url() + "/mirror/simple"; }
  std::string sha(const std::string& file) const { return util::sha256_file_hex(w.index_dir() / "pypi/files" / file).value(); }
  // name -> version of a JSON plan's installs.
  static std::map<std::string, std::string> planned(const std::string& out) {
    std::map<std::string, std::string> m;
    const auto doc = json::parse(out);
    for (const auto& i : doc["install"]) m[i["name"].get<std::string>()] = i["version"].get<std::string>();
    return m;
  }
};

} // namespace

TEST_SUITE("integration/apply/pip_habits") {

  TEST_CASE("issue 36 (2): the index pip or uv is configured with is used, and the plan says where it was read") {
    Habits h;
    auto& w = h.w;
    // pip.conf through PIP_CONFIG_FILE, [global] then [install] as pip reads them.
    write(w.root() / "pip.conf", fmt::format("[global]\nindex-url = {}\n[install]\nindex_url = {}\n", h.pypi(), h.mirror()));
    auto conf = w.envfix({"plan", "habit-app", "--python", h.py}, {{"PIP_CONFIG_FILE", (w.root() / "pip.conf").string()}});
    REQUIRE(conf.rc == 0);
    CHECK(conf.err.find("index: " + h.mirror() + " (from " + (w.root() / "pip.conf").string() + ")") != std::string::npos);
    CHECK(conf.err.find("habit-dep==1.5") != std::string::npos);

    // PIP_INDEX_URL over the file, as pip has it; JSON names the source.
    auto env = w.envfix({"--format", "json", "plan", "habit-app", "--python", h.py},
                        {{"PIP_CONFIG_FILE", (w.root() / "pip.conf").string()}, {"PIP_INDEX_URL", h.pypi()}});
    REQUIRE(env.rc == 0);
    CHECK(json::parse(env.out)["index_from"] == "PIP_INDEX_URL");
    CHECK(Habits::planned(env.out).at("habit-dep") == "2.0");

    // uv's settings come before pip's: the user's uv.toml under XDG_CONFIG_HOME.
    write(w.root() / "xdg/uv/uv.toml", fmt::format("[[index]]\nurl = \"{}\"\ndefault = true\n", h.mirror()));
    auto uv = w.envfix({"--format", "json", "plan", "habit-app", "--python", h.py}, {{"PIP_INDEX_URL", h.pypi()}});
    REQUIRE(uv.rc == 0);
    CHECK(json::parse(uv.out)["index_from"] == (w.root() / "xdg/uv/uv.toml").string());
    CHECK(Habits::planned(uv.out).at("habit-dep") == "1.5");

    // envfix.toml in the project folder (the current one) comes before both; --index-url before it.
    write(w.root() / "envfix.toml", fmt::format("index-url = \"{}\"\n", h.pypi()));
    auto own = w.envfix({"--format", "json", "plan", "habit-app", "--python", h.py});
    REQUIRE(own.rc == 0);
    CHECK(Habits::planned(own.out).at("habit-dep") == "2.0");
    auto cli = w.envfix({"--format", "json", "plan", "habit-app", "--python", h.py, "--index-url", h.mirror()});
    REQUIRE(cli.rc == 0);
    CHECK(Habits::planned(cli.out).at("habit-dep") == "1.5");

    // --no-config reads none of the files: pip's default index, unreachable here, is what it tries.
    auto none = w.envfix({"plan", "habit-app", "--python", h.py, "--no-config", "--offline"});
    CHECK(none.rc != 0);
    CHECK(none.err.find("pypi.org") != std::string::npos);

    // A project's pyproject.toml that is not TOML stops nothing (it holds no settings envfix can read).
    write(w.root() / "pyproject.toml", "[project\nname = \n");
    auto broken_project = w.envfix({"--format", "json", "plan", "habit-app", "--python", h.py, "--index-url", h.pypi()});
    CHECK(broken_project.rc == 0);
    fs::remove(w.root() / "pyproject.toml");

    // A broken envfix.toml is named, with the way around it.
    write(w.root() / "envfix.toml", "index-url = [1, 2]\nmirrors = \"x\"\n");
    auto bad = w.envfix({"plan", "habit-app", "--python", h.py});
    CHECK(bad.rc == 1);
    CHECK(bad.err.find((w.root() / "envfix.toml").string()) != std::string::npos);
    // A command that reads no index and no cache reads no configuration either: export says what is
    // wrong with its lockfile, not with envfix.toml.
    auto exported = w.envfix({"export", "--as", "pylock", "--lockfile", (w.root() / "none.lock").string()});
    CHECK(exported.rc != 0);
    CHECK(exported.err.find("none.lock") != std::string::npos);
    CHECK(exported.err.find("envfix.toml") == std::string::npos);
  }

  TEST_CASE("issue 36 (2): -r with pip-compile hashes and --require-hashes installs exactly those files; others are refused") {
    Habits h;
    auto& w = h.w;
    const auto app = h.sha("habit_app-1.0-py3-none-any.whl"), dep = h.sha("habit_dep-2.0-py3-none-any.whl");
    // What `pip-compile --generate-hashes` writes: continuation lines, comments, two hashes for one file.
    write(w.root() / "requirements.txt", fmt::format("# generated\nhabit-app==1.0 \\\n    --hash=sha256:{}\n"
                                                     "habit-dep==2.0 \\\n    --hash=sha256:{} \\\n    --hash=sha256:{}\n"
                                                     "    # via habit-app\n",
                                                     app, std::string(64, '0'), dep));
    const auto before = manifest(h.venv);
    auto dry = w.envfix({"apply", "-r", "requirements.txt", "--require-hashes", "--index-url", h.pypi(), "--python", h.py,
                         "--dry-run", "--lockfile", w.lockfile().string()});
    REQUIRE(dry.rc == 0);
    CHECK(dry.err.find("Nothing was changed (--dry-run)") != std::string::npos);
    CHECK(manifest(h.venv) == before);
    CHECK_FALSE(fs::exists(w.lockfile()));

    auto a = w.envfix({"apply", "-r", "requirements.txt", "--require-hashes", "--index-url", h.pypi(), "--python", h.py, "--yes",
                       "--no-verify", "--lockfile", w.lockfile().string()});
    REQUIRE(a.rc == 0);
    auto listed = w.pip_list(h.venv);
    CHECK(listed.at("habit-app") == "1.0");
    CHECK(listed.at("habit-dep") == "2.0");
    CHECK(slurp(w.lockfile()).find("habit-dep==2.0") != std::string::npos); // the file's request is recorded

    // A hash the index's file does not have: that file is rejected (hash-not-listed), nothing fits.
    write(w.root() / "wrong.txt",
          fmt::format("habit-app==1.0 --hash=sha256:{}\nhabit-dep==2.0 --hash=sha256:{}\n", app, std::string(64, 'a')));
    auto wrong = w.envfix({"plan", "-r", "wrong.txt", "--index-url", h.pypi(), "--python", h.py, "--explain", "-U"});
    CHECK(wrong.rc != 0);
    CHECK(wrong.err.find("[hash-not-listed]") != std::string::npos);

    // A dependency the file does not list with hashes, and a requirement not pinned with ==.
    write(w.root() / "partial.txt", fmt::format("habit-app==1.0 --hash=sha256:{}\n", app));
    auto partial = w.envfix({"plan", "-r", "partial.txt", "--index-url", h.pypi(), "--python", h.py, "--reinstall"});
    CHECK(partial.rc == 1);
    CHECK(partial.err.find("habit-dep 2.0 would be installed, but no requirement lists its hashes") != std::string::npos);
    write(w.root() / "loose.txt", fmt::format("habit-app>=1 --hash=sha256:{}\n", app));
    auto loose = w.envfix({"plan", "-r", "loose.txt", "--index-url", h.pypi(), "--python", h.py});
    CHECK(loose.rc == 1);
    CHECK(loose.err.find("loose.txt:1: habit-app>=1 is not pinned with ==") != std::string::npos);

    // What envfix cannot take is named with its file and line.
    write(w.root() / "editable.txt", "habit-dep\n-e ./src\n");
    auto ed = w.envfix({"plan", "-r", "editable.txt", "--index-url", h.pypi(), "--python", h.py});
    CHECK(ed.rc == 1);
    CHECK(ed.err.find("editable.txt:2: -e ./src is an editable install") != std::string::npos);
  }

  TEST_CASE("issue 36 (2): -c constraints limit versions without asking for a package; nested -r and the file's index") {
    Habits h;
    auto& w = h.w;
    write(w.root() / "c.txt", "habit-dep<2\nhabit-opt==9 ; python_version < '3'\n");
    write(w.root() / "base.txt", fmt::format("--index-url {}\nhabit-app\n", h.pypi()));
    write(w.root() / "sub/req.txt", "-r ../base.txt\n-c ../c.txt\n");
    auto p = w.envfix({"--format", "json", "plan", "-r", "sub/req.txt", "--python", h.py});
    REQUIRE(p.rc == 0);
    const auto planned = Habits::planned(p.out);
    CHECK(planned.at("habit-dep") == "1.0");    // 2.0 is outside the constraint
    CHECK_FALSE(planned.contains("habit-opt")); // a constraint asks for nothing
    // lock takes the same files; the lock records the file's request and the constrained version.
    auto lock = w.envfix({"lock", "-r", "sub/req.txt", "--python", h.py, "-o", w.lockfile().string()});
    REQUIRE(lock.rc == 0);
    const auto text = slurp(w.lockfile());
    CHECK(text.find("request: [habit-app]") != std::string::npos);
    CHECK(text.find("habit_dep-1.0-py3-none-any.whl") != std::string::npos);
    write(w.root() / "tight.txt", "habit-dep<1\n");
    auto tight = w.envfix({"plan", "habit-app", "-c", "tight.txt", "--index-url", h.pypi(), "--python", h.py, "--explain"});
    CHECK(tight.rc != 0);
    CHECK(tight.err.find("[constraint] the constraint habit-dep<1 excludes it") != std::string::npos);
    write(w.root() / "loop.txt", "-r loop.txt\n");
    auto loop = w.envfix({"plan", "-r", "loop.txt", "--python", h.py});
    CHECK(loop.rc == 1);
    CHECK(loop.err.find("includes itself") != std::string::npos);
  }

  TEST_CASE("issue 36 (2): pyproject.toml's dependencies and the extras asked for") {
    Habits h;
    auto& w = h.w;
    write(w.root() / "proj/pyproject.toml", "[project]\nname = \"mine\"\nversion = \"0.1\"\ndependencies = [\"habit-app\"]\n"
                                            "[project.optional-dependencies]\nExtra_One = [\"habit-opt>=3\"]\n");
    const std::string file = (w.root() / "proj/pyproject.toml").string();
    auto base = w.envfix({"--format", "json", "plan", "-r", file, "--index-url", h.pypi(), "--python", h.py});
    REQUIRE(base.rc == 0);
    CHECK_FALSE(Habits::planned(base.out).contains("habit-opt"));
    CHECK_FALSE(Habits::planned(base.out).contains("mine")); // the project itself is not installed
    auto extra =
        w.envfix({"--format", "json", "plan", "-r", file, "--extra", "extra-one", "--index-url", h.pypi(), "--python", h.py});
    REQUIRE(extra.rc == 0);
    CHECK(Habits::planned(extra.out).at("habit-opt") == "3.0");
    auto all = w.envfix({"--format", "json", "plan", "-r", file, "--all-extras", "--index-url", h.pypi(), "--python", h.py});
    REQUIRE(all.rc == 0);
    CHECK(Habits::planned(all.out).contains("habit-opt"));
    auto unknown = w.envfix({"plan", "-r", file, "--extra", "gpu", "--index-url", h.pypi(), "--python", h.py});
    CHECK(unknown.rc == 1);
    CHECK(unknown.err.find("has no optional dependencies named gpu") != std::string::npos);
    CHECK(unknown.err.find("Extra_One") != std::string::npos);
  }

  TEST_CASE("issue 36 (8): --no-cache installs through a temporary cache it removes; the user's cache is not touched") {
    Habits h;
    auto& w = h.w;
    const auto tmp = w.root() / "tmp", user_cache = w.root() / "user-cache";
    fs::create_directories(tmp);
    auto o = w.envfix_options({{"TMPDIR", tmp.string()}, {"ENVFIX_CACHE_DIR", user_cache.string()}});
    const std::vector<std::string> argv{envfix_bin().string(),
                                        "apply",
                                        "habit-app",
                                        "--no-cache",
                                        "--index-url",
                                        h.pypi(),
                                        "--python",
                                        h.py,
                                        "--yes",
                                        "--lockfile",
                                        (w.root() / "no-cache.lock").string()};
    auto r = util::run_process(argv, o);
    REQUIRE(r);
    INFO(r->err);
    CHECK(r->exit_code == 0);
    CHECK(w.pip_list(h.venv).at("habit-app") == "1.0");
    CHECK_FALSE(fs::exists(user_cache));
    for (const auto& e : fs::directory_iterator(tmp))
      CHECK_MESSAGE(!e.path().filename().string().starts_with("envfix-no-cache"), e.path().string());
    // -v says what the plan asked of the index and the cache (issue 36, item 8: `-v` that adds little).
    auto verbose = w.envfix({"plan", "habit-app", "-v", "--index-url", h.pypi(), "--python", h.py});
    CHECK(verbose.rc == 0);
    CHECK(verbose.err.find("page requests in") != std::string::npos);
    CHECK(verbose.err.find("cache " + w.cache().string()) != std::string::npos);
    // Both at once is a contradiction, refused before anything runs.
    auto both = w.envfix({"plan", "habit-app", "--no-cache", "--index-url", h.pypi(), "--python", h.py});
    CHECK(both.rc != 0);
    CHECK(both.err.find("--no-cache") != std::string::npos);
  }
}

} // namespace apply_pip_habits_test
