#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "probe/host_facts.hpp"
#include "probe/python_probe.hpp"
#include "specs/tag.hpp"
#include "test_support.hpp"
#include "util/subprocess.hpp"

using namespace envfix;
using namespace envfix::probe;
using envfix::test::fixture;
using envfix::test::ScopedEnv;
using envfix::test::TempDir;

namespace fs = std::filesystem;

TEST_SUITE("unit/probe/python_probe") {

  TEST_CASE("interpreter probe JSON captured on the H200 machine") {
    auto info = parse_python_probe(fixture("python-probe.json")).value();
    CHECK(info.executable == "/opt/torch/.venv/bin/python3");
    CHECK(info.version.to_string() == "3.12.3");
    CHECK(info.implementation == "cpython");
    CHECK(info.prefix == "/opt/torch/.venv");
    CHECK(info.base_prefix == "/usr");
    CHECK(info.is_venv);
    CHECK(!info.is_conda);
    CHECK(info.scheme.at("purelib") == "/opt/torch/.venv/lib/python3.12/site-packages");
    CHECK(info.scheme.at("scripts") == "/opt/torch/.venv/bin");
    CHECK(info.scheme.at("headers") == "/usr/include/python3.12");
    CHECK(info.markers.values.at("platform_release") == "6.18.44-fc-v657-gpu");
    CHECK(info.markers.values.at("python_version") == "3.12");
    CHECK(info.tag_env.implementation == "cp");
    CHECK(info.tag_env.major == 3);
    CHECK(info.tag_env.minor == 12);
    CHECK(info.tag_env.arch == "x86_64");
    REQUIRE(info.tag_env.glibc);
    CHECK(*info.tag_env.glibc == std::pair{2, 39});
    CHECK(info.soabi == "cpython-312-x86_64-linux-gnu");
    CHECK(!info.externally_managed);
  }

  TEST_CASE(
      "a free-threaded interpreter (3.13t): abiflags t, or Py_GIL_DISABLED where there are no abiflags; cp313t tags first") {
    auto j = nlohmann::json::parse(fixture("python-probe.json"));
    j["markers"]["python_full_version"] = "3.13.1";
    j["markers"]["python_version"] = "3.13";
    j["abiflags"] = "t";
    j["gil_disabled"] = 1;
    auto ft = parse_python_probe(j.dump()).value();
    CHECK(ft.tag_env.abiflags == "t");
    auto tags = specs::supported_tags(ft.tag_env);
    REQUIRE(!tags.empty());
    CHECK(tags.front().to_string().starts_with("cp313-cp313t-manylinux"));
    bool abi3 = false, gil = false;
    for (const auto& t : tags) {
      abi3 = abi3 || t.abi == "abi3";
      gil = gil || t.abi == "cp313";
    }
    CHECK(!abi3); // the stable ABI is not available to free-threaded builds
    CHECK(!gil);
    j["abiflags"] = ""; // Windows: no sys.abiflags
    CHECK(parse_python_probe(j.dump()).value().tag_env.abiflags == "t");
    j["gil_disabled"] = 0;
    CHECK(parse_python_probe(j.dump()).value().tag_env.abiflags.empty());
    j["gil_disabled"] = nullptr; // older interpreters: the variable does not exist
    CHECK(parse_python_probe(j.dump()).value().tag_env.abiflags.empty());
  }

  TEST_CASE("PEP 668 marker counts only outside a venv") {
    auto j = nlohmann::json::parse(fixture("python-probe.json"));
    j["externally_managed"] = {{"path", "/usr/lib/python3.12/EXTERNALLY-MANAGED"},
                               {"message", "To install Python packages system-wide, try apt install"}};
    CHECK(!parse_python_probe(j.dump()).value().externally_managed); // prefix != base_prefix: a venv
    j["prefix"] = "/usr";
    j.erase("in_venv");
    auto sys = parse_python_probe(j.dump()).value();
    CHECK(!sys.is_venv);
    CHECK(sys.externally_managed);
    CHECK(sys.externally_managed_message.find("apt install") != std::string::npos);
    j["in_venv"] = true; // the script's own answer (sys.real_prefix virtualenvs) wins
    CHECK(!parse_python_probe(j.dump()).value().externally_managed);
  }

  TEST_CASE("interpreter probe errors name what is wrong") {
    CHECK(!parse_python_probe("not json"));
    CHECK(!parse_python_probe("[]"));
    CHECK(parse_python_probe("{}").error().message.find("executable") != std::string::npos);
    CHECK(parse_python_probe(R"({"executable": "/x", "markers": {}})").error().message.find("python_full_version") !=
          std::string::npos);
    CHECK(!parse_python_probe(R"({"executable": "/x", "markers": {"python_full_version": "three"}})"));
  }

  TEST_CASE("glibc strings") {
    CHECK(parse_glibc("glibc 2.36") == std::pair{2, 36});
    CHECK(parse_glibc("glibc 2.39\n") == std::pair{2, 39});
    CHECK(!parse_glibc(""));
    CHECK(!parse_glibc("musl 1.2"));
    CHECK(!parse_glibc("glibc 2"));
    CHECK(!parse_glibc("glibc x.y"));
  }

  TEST_CASE("shebang interpreters, including pip's /bin/sh launcher") {
    CHECK(parse_shebang_interpreter("#!/v/bin/python3\n# -*- coding: utf-8 -*-\n") == fs::path("/v/bin/python3"));
    CHECK(parse_shebang_interpreter("#!/usr/bin/python3 -E\n") == fs::path("/usr/bin/python3"));
    CHECK(parse_shebang_interpreter("#!/bin/sh\n'''exec' \"/a b/venv/bin/python\" \"$0\" \"$@\"\n' '''\n") ==
          fs::path("/a b/venv/bin/python"));
    CHECK(!parse_shebang_interpreter("#!/bin/sh\necho hi\n"));
    CHECK(!parse_shebang_interpreter("\177ELF"));
    CHECK(!parse_shebang_interpreter(""));
  }

} // TEST_SUITE unit

TEST_SUITE("integration/probe/python_probe") {

  TEST_CASE("probe a real venv made by python3 -m venv, with the cache") {
    TempDir tmp;
    auto venv = tmp.path() / "venv";
    // An error (not a throw) names what failed; the bound ends a hang only (a loaded machine).
    auto made =
        util::run_process({"python3", "-m", "venv", "--without-pip", venv.string()}, {.timeout = std::chrono::seconds(600)});
    REQUIRE_MESSAGE(made, (made ? "" : made.error().render()));
    auto& mk = *made;
    REQUIRE_MESSAGE(mk.ok(), mk.err);
    auto cache = tmp.path() / "cache";
    auto info = probe_python(venv / "bin/python", cache).value();
    CHECK(info.is_venv);
    CHECK(info.prefix == venv);
    CHECK(info.executable == venv / "bin/python");
    CHECK(info.scheme.at("purelib").string().starts_with(venv.string()));
    CHECK(fs::is_directory(info.scheme.at("purelib")));
    CHECK(info.version.release().at(0) == 3);
    CHECK(info.markers.values.at("sys_platform") == "linux");
    CHECK(!info.externally_managed);
    auto dirs = site_directories(info);
    REQUIRE(!dirs.empty());
    CHECK(dirs[0] == info.scheme.at("purelib"));
    // The result was cached under <cache>/interpreters; a second probe reads it back (we prove that
    // by editing the cached copy).
    std::vector<fs::path> files;
    for (auto& e : fs::directory_iterator(cache / "interpreters")) files.push_back(e.path());
    REQUIRE(files.size() == 1);
    auto j = nlohmann::json::parse(util::read_file(files[0]).value());
    j["soabi"] = "from-cache";
    REQUIRE(util::write_file_atomic(files[0], j.dump()));
    CHECK(probe_python(venv / "bin/python", cache).value().soabi == "from-cache");
    // A corrupt cache entry is ignored and rewritten.
    REQUIRE(util::write_file_atomic(files[0], "{garbage"));
    CHECK(probe_python(venv / "bin/python", cache).value().soabi != "from-cache");
    // A directory is accepted where an interpreter is expected (--python VENV).
    CHECK(default_interpreter(venv).value() == venv / "bin/python");
  }

  TEST_CASE("default interpreter order: --python, ENVFIX_PYTHON, VIRTUAL_ENV, CONDA_PREFIX, PATH") {
    ScopedEnv e1("ENVFIX_PYTHON", std::nullopt);
    ScopedEnv e2("VIRTUAL_ENV", "/venv-a");
    ScopedEnv e3("CONDA_PREFIX", "/conda-b");
    CHECK(default_interpreter(fs::path("/x/bin/python")).value() == "/x/bin/python");
    CHECK(default_interpreter(std::nullopt).value() == "/venv-a/bin/python");
    {
      ScopedEnv v("VIRTUAL_ENV", std::nullopt);
      CHECK(default_interpreter(std::nullopt).value() == "/conda-b/bin/python");
      ScopedEnv c("CONDA_PREFIX", std::nullopt);
      CHECK(default_interpreter(std::nullopt).value().filename() == "python3");
      ScopedEnv p("PATH", "/nonexistent");
      auto none = default_interpreter(std::nullopt);
      REQUIRE(!none);
      CHECK(none.error().code == ErrorCode::not_found);
    }
  }

  TEST_CASE("a broken interpreter is an error that names it, never a crash") {
    TempDir tmp;
    auto fake = tmp.path() / "python";
    test::write(fake, "#!/bin/sh\necho 'Traceback: boom' >&2\nexit 3\n", 0755);
    auto r = probe_python(fake);
    REQUIRE(!r);
    CHECK(r.error().code == ErrorCode::subprocess);
    CHECK(r.error().message.find(fake.string()) != std::string::npos);
    CHECK(r.error().message.find("boom") != std::string::npos);
    auto missing = probe_python(tmp.path() / "nope");
    REQUIRE(!missing);
    CHECK(missing.error().code == ErrorCode::not_found);
    test::write(fake, "#!/bin/sh\necho 'not json'\n", 0755);
    CHECK(!probe_python(fake));
  }

} // TEST_SUITE integration

TEST_SUITE("integration/probe/python_probe") {
  // docs/reliability.md §5, case 4: the probe ran `python -c` in the caller's cwd without -I, so a
  // json.py there ran on plan, lock, doctor and apply.
  TEST_CASE("security 4: the interpreter probe does not run a json.py from the current directory") {
    TempDir dir;
    const auto marker = dir.path() / "json.py-ran";
    envfix::test::write(dir.path() / "json.py", "open(" + nlohmann::json(marker.string()).dump() + ", 'w').write('x')\n");
    const auto old = fs::current_path();
    fs::current_path(dir.path());
    auto info = probe_python(util::find_in_path("python3").value(), {}, std::chrono::seconds(60));
    fs::current_path(old);
    REQUIRE_MESSAGE(info, (info ? "" : info.error().render()));
    CHECK_FALSE(fs::exists(marker));
    CHECK(info->version.release().at(0) == 3);
  }
} // TEST_SUITE integration
