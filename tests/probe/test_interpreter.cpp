// Interpreter discovery (probe/interpreter.hpp) with the setups users have: the real pyenv (its shims
// resolved in the project directory, where .python-version decides), a uv-style project .venv, a
// conda-style prefix, and --python as a version request. Each case checks that the interpreter chosen
// is the one `python` runs there.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "probe/host_facts.hpp"
#include "probe/interpreter.hpp"
#include "tests/probe/test_support.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

using namespace envfix;
namespace fs = std::filesystem;

namespace {

// Sets variables (nullopt: unsets; test::ScopedEnv each) and the working directory for one case,
// and puts them back.
class Scope {
public:
  Scope(const fs::path& cwd, const std::map<std::string, std::optional<std::string>>& vars) : m_cwd(fs::current_path()) {
    for (const auto& [k, v] : vars) m_env.push_back(std::make_unique<test::ScopedEnv>(k, v));
    fs::current_path(cwd);
  }
  ~Scope() { fs::current_path(m_cwd); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

private:
  fs::path m_cwd;
  std::vector<std::unique_ptr<test::ScopedEnv>> m_env;
};

// What `python3` run in `dir` with this PATH really is: the truth each choice is checked against.
fs::path python_runs_in(const fs::path& dir, const std::string& path_value, const std::string& pyenv_root) {
  util::SubprocessOptions o;
  o.cwd = dir;
  o.set_env = {{"PATH", path_value}, {"PYENV_ROOT", pyenv_root}};
  o.unset_env = {"PYENV_VERSION"};
  auto r = util::run_process({"sh", "-c", "python3 -c 'import sys; print(sys.executable)'"}, o);
  REQUIRE(r);
  REQUIRE_MESSAGE(r->ok(), r->err);
  return fs::canonical(std::string(util::trim(r->out)));
}

fs::path canon(const fs::path& p) { return fs::canonical(p); }

// The real pyenv and two of its CPython versions, or a reason to skip.
struct RealPyenv {
  fs::path pyenv, root;
  std::string older, newer; // "3.10.13", "3.11.7"
};
std::optional<RealPyenv> real_pyenv(std::string& why) {
  auto pyenv = util::find_in_path("pyenv");
  if (!pyenv) {
    const char* home = std::getenv("HOME");
    if (home && fs::exists(fs::path(home) / ".pyenv/bin/pyenv")) pyenv = fs::path(home) / ".pyenv/bin/pyenv";
  }
  if (!pyenv) {
    why = "pyenv is not installed (neither on PATH nor ~/.pyenv/bin/pyenv)";
    return std::nullopt;
  }
  auto root = util::run_process({pyenv->string(), "root"}, {});
  if (!root || !root->ok()) {
    why = "`pyenv root` failed";
    return std::nullopt;
  }
  RealPyenv r{*pyenv, std::string(util::trim(root->out)), {}, {}};
  std::vector<std::pair<std::vector<int>, std::string>> versions;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(r.root / "versions", ec))
    if (auto v = probe::cpython_dir_version(e.path().filename().string()); v && (*v)[1] >= 8)
      versions.emplace_back(*v, e.path().filename().string());
  std::sort(versions.begin(), versions.end());
  if (versions.size() < 2) {
    why = "pyenv has fewer than two CPython 3.8+ versions installed";
    return std::nullopt;
  }
  r.older = versions[versions.size() - 2].second;
  r.newer = versions.back().second;
  return r;
}

} // namespace

TEST_SUITE("unit/probe/interpreter") {
  TEST_CASE("--python version requests as uv spells them; pyenv's and uv's version folders") {
    for (const auto* s : {"3.12", "cpython@3.12", "cpython3.12", "python3.12"}) {
      CAPTURE(s);
      auto r = probe::parse_version_request(s);
      REQUIRE(r);
      CHECK(r->release == std::vector<int>{3, 12});
    }
    CHECK(probe::parse_version_request("3.12.1")->matches({3, 12, 1}));
    CHECK(probe::parse_version_request("3.12")->matches({3, 12, 7}));
    CHECK_FALSE(probe::parse_version_request("3.12")->matches({3, 11, 7}));
    for (const auto* s : {"python3", "2.7", "3.12.", "3.x", "/usr/bin/python3.12", "venv", "3.12.1.4"}) {
      CAPTURE(s);
      if (std::string_view(s) == "python3") // a command (python3 on PATH), yet the request "3" if it were not one
        CHECK(probe::parse_version_request(s)->release == std::vector<int>{3});
      else
        CHECK_FALSE(probe::parse_version_request(s));
    }
    CHECK(probe::cpython_dir_version("3.12.1") == std::vector<int>{3, 12, 1});
    CHECK(probe::cpython_dir_version("cpython-3.13.0-linux-x86_64-gnu") == std::vector<int>{3, 13, 0});
    CHECK_FALSE(probe::cpython_dir_version("pypy3.10-7.3.17"));
    CHECK_FALSE(probe::cpython_dir_version("miniconda3-latest"));
    CHECK_FALSE(probe::cpython_dir_version("3.13.0t"));
  }
}

TEST_SUITE("integration/probe/interpreter") {
  TEST_CASE("real pyenv: the shim is resolved where the user runs envfix; --python 3.X finds pyenv's version") {
    std::string why;
    auto real = real_pyenv(why);
    if (!real) {
      MESSAGE("SKIPPED (visible): " << why);
      return;
    }
    const auto work = util::make_temp_dir({}, "envfix-pyenv").value();
    // Our own PYENV_ROOT: two real versions, a global one, shims made by `pyenv rehash`.
    const fs::path root = work / "pyenv";
    fs::create_directories(root / "versions");
    fs::create_directory_symlink(real->root / "versions" / real->older, root / "versions" / real->older);
    fs::create_directory_symlink(real->root / "versions" / real->newer, root / "versions" / real->newer);
    REQUIRE(util::write_file_atomic(root / "version", real->newer + "\n", 0644));
    auto rehash = util::run_process({real->pyenv.string(), "rehash"}, {.set_env = {{"PYENV_ROOT", root.string()}}});
    REQUIRE(rehash);
    REQUIRE_MESSAGE(rehash->ok(), rehash->err);
    REQUIRE(fs::exists(root / "shims/python3"));
    // A project pinned to the older version; the test runs from a folder inside it.
    const fs::path proj = work / "proj", sub = proj / "src";
    fs::create_directories(sub);
    REQUIRE(util::write_file_atomic(proj / ".python-version", real->older + "\n", 0644));
    const fs::path elsewhere = work / "elsewhere";
    fs::create_directories(elsewhere);
    const std::string path_value = (root / "shims").string() + ":/usr/bin:/bin";
    const std::map<std::string, std::optional<std::string>> env = {
        {"PATH", path_value},          {"PYENV_ROOT", root.string()},  {"PYENV_VERSION", std::nullopt},
        {"VIRTUAL_ENV", std::nullopt}, {"CONDA_PREFIX", std::nullopt}, {"ENVFIX_PYTHON", std::nullopt}};

    for (const auto& [dir, version] : {std::pair{sub, real->older}, std::pair{elsewhere, real->newer}}) {
      CAPTURE(dir);
      Scope s(dir, env);
      auto c = probe::choose_interpreter(std::nullopt);
      REQUIRE_MESSAGE(c, (c ? "" : c.error().render()));
      CHECK(canon(c->path) == python_runs_in(dir, path_value, root.string()));
      CHECK(canon(c->path).string().find("/" + version + "/") != std::string::npos);
      CHECK(c->how.find("through the shim") != std::string::npos);
      // The `python` on PATH is that same interpreter: the other-interpreter check sees it so.
      auto facts = probe::probe_host({.gpus = false, .installed = false});
      REQUIRE(facts);
      REQUIRE_FALSE(facts->path_interpreters.empty());
      CHECK(facts->path_interpreters.front().resolved == canon(c->path));
      REQUIRE(facts->python);
      CHECK(canon(facts->python->executable) == canon(c->path));
      REQUIRE(facts->pip_interpreter.has_value() == fs::exists(root / "shims/pip"));
    }
    {
      // --python 3.X (the older minor) from the folder whose pyenv version is the newer one.
      Scope s(elsewhere, env);
      auto v = probe::parse_version_request(real->older.substr(0, real->older.rfind('.')));
      REQUIRE(v);
      auto c = probe::choose_interpreter(fs::path(v->to_string()));
      REQUIRE_MESSAGE(c, (c ? "" : c.error().render()));
      CHECK(canon(c->path).string().find("/" + real->older + "/") != std::string::npos);
      // A version nobody has: the error says where it looked and how to get it.
      auto none = probe::choose_interpreter(fs::path("3.99"));
      REQUIRE_FALSE(none);
      CHECK(none.error().code == ErrorCode::not_found);
      CHECK(none.error().message.find((root / "versions").string()) != std::string::npos);
      CHECK(none.error().hint.find("pyenv install 3.99") != std::string::npos);
    }
    {
      // A pinned version that is not installed: whatever the shim then runs (pyenv 2.6 falls back to
      // the next python3 on PATH), envfix targets the same interpreter `python3` starts there.
      REQUIRE(util::write_file_atomic(proj / ".python-version", "3.99.0\n", 0644));
      Scope s(sub, env);
      auto c = probe::choose_interpreter(std::nullopt);
      if (c)
        CHECK(canon(c->path) == python_runs_in(sub, path_value, root.string()));
      else
        CHECK(c.error().message.find("is a shim that runs no interpreter") != std::string::npos);
    }
    fs::remove_all(work);
  }

  TEST_CASE("a uv-style project .venv is found from a subfolder; VIRTUAL_ENV and CONDA_PREFIX come first") {
    const auto work = util::make_temp_dir({}, "envfix-venv").value();
    const fs::path proj = work / "proj", sub = proj / "pkg" / "mod";
    fs::create_directories(sub);
    // The real interpreter behind python3 (which may itself be a pyenv shim on this machine).
    auto which = util::run_process({"python3", "-c", "import sys; print(sys.executable)"}, {});
    REQUIRE(which);
    REQUIRE(which->ok());
    const std::optional<fs::path> py = fs::canonical(std::string(util::trim(which->out)));
    auto made = util::run_process({py->string(), "-m", "venv", "--without-pip", (proj / ".venv").string()},
                                  {.timeout = std::chrono::seconds(600)});
    REQUIRE(made);
    REQUIRE_MESSAGE(made->ok(), made->err);
    // A conda-style prefix: conda-meta/ and bin/python.
    const fs::path conda = work / "conda-env";
    fs::create_directories(conda / "conda-meta");
    fs::create_directories(conda / "bin");
    fs::create_symlink(*py, conda / "bin/python");
    std::map<std::string, std::optional<std::string>> env = {
        {"VIRTUAL_ENV", std::nullopt}, {"CONDA_PREFIX", std::nullopt}, {"ENVFIX_PYTHON", std::nullopt}};
    {
      Scope s(sub, env);
      auto c = probe::choose_interpreter(std::nullopt);
      REQUIRE(c);
      CHECK(c->path == proj / ".venv/bin/python");
      CHECK(c->how == ".venv in " + proj.string());
    }
    env["CONDA_PREFIX"] = conda.string();
    {
      Scope s(sub, env);
      auto c = probe::choose_interpreter(std::nullopt);
      REQUIRE(c);
      CHECK(c->path == conda / "bin/python");
      CHECK(c->how == "$CONDA_PREFIX");
    }
    {
      // Outside the project: no .venv above, so python3 on PATH.
      env["CONDA_PREFIX"] = std::nullopt;
      Scope s(work, env);
      auto c = probe::choose_interpreter(std::nullopt);
      REQUIRE(c);
      CHECK(c->how.starts_with("python3 on PATH"));
    }
    fs::remove_all(work);
  }
}
