// The CLI half of the security issue (docs/reliability.md §5): the real envfix binary against
// nginx over HTTPS (tests/support), real venvs, wheels made by tests/support/index_builder.py.
// Each case reran a hole found by review and failed before its fix.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/apply/apply_world.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"

namespace apply_security_cli_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace envfix::apply_test;

namespace {

// One package, and a second one with a member whose name sets the terminal title and clears the screen.
constexpr const char* kIndex = R"({"packages": [
  {"name": "alpha", "version": "1.0", "files": {"alpha/__init__.py": "VALUE = 1\n"}},
  {"name": "evil", "version": "1.0", "files": {"evil/\u001b]0;pwned\u0007\u001b[2J.py": "x = 1\n"}}
]})";

} // namespace

TEST_SUITE("integration/apply/security_cli") {

  TEST_CASE("security 2: apply --locked with a filename that is a path fails at parse time and writes nothing") {
    World w(kIndex);
    auto ve = w.venv("venv");
    auto py = (ve / "bin/python").string();
    REQUIRE(w.envfix({"lock", "alpha", "--index-url", w.index_url(), "--python", py, "-o", w.lockfile().string()}).rc == 0);
    const auto good = slurp(w.lockfile());
    const auto before = manifest(ve);
    const auto victim = w.root() / "victim.txt";
    write(victim, "precious\n");
    const std::string name = "alpha-1.0-py3-none-any.whl";
    for (std::string bad : {victim.string(), "../../../../../../.." + victim.string(), "../" + name}) {
      CAPTURE(bad);
      auto text = good;
      auto at = text.find("filename: " + name);
      REQUIRE(at != std::string::npos);
      text.replace(at + 10, name.size(), bad);
      auto f = w.root() / "bad.lock";
      write(f, text);
      auto r = w.envfix({"apply", "--locked", "--lockfile", f.string(), "--python", py, "--yes"}, {}, w.root() / "cache-bad");
      CHECK(r.rc == 1);
      CHECK(r.err.find("bad.lock:") != std::string::npos);
      CHECK(r.err.find("must be a file name, not a path") != std::string::npos);
      CHECK(slurp(victim) == "precious\n");
      CHECK_FALSE(fs::exists(w.root() / "cache-bad" / "wheels")); // nothing downloaded
      CHECK(manifest(ve) == before);
    }
  }

  TEST_CASE("security 4: a json.py or venv.py in the current directory never runs") {
    World w(kIndex);
    const auto marker = w.root() / "ran";
    const std::string code = "open(" + json(marker.string()).dump() + ", 'a').write(__name__ + '\\n')\n";
    write(w.root() / "json.py", code); // envfix runs in w.root()
    write(w.root() / "venv.py", code);
    auto ve = w.root() / "made-venv";
    auto r = w.envfix(
        {"apply", "alpha", "--index-url", w.index_url(), "--venv", ve.string(), "--yes", "--lockfile", w.lockfile().string()});
    CHECK(r.rc == 0);
    auto py = (ve / "bin/python").string();
    CHECK(w.envfix({"plan", "alpha", "--index-url", w.index_url(), "--python", py}).rc == 0);
    CHECK(w.envfix({"lock", "alpha", "--index-url", w.index_url(), "--python", py, "-o", (w.root() / "l2.lock").string()}).rc ==
          0);
    CHECK(w.envfix({"apply", "--locked", "--lockfile", w.lockfile().string(), "--python", py, "--yes"}).rc == 0);
    auto d = w.envfix({"doctor", "--python", py});
    CHECK((d.rc == 0 || d.rc == 1));
    CHECK_MESSAGE(!fs::exists(marker), (fs::exists(marker) ? slurp(marker) : ""));
  }

  TEST_CASE("security 6: a member name with terminal escapes is printed escaped") {
    World w(kIndex);
    auto ve = w.venv("venv");
    auto r = w.envfix({"--color", "always", "apply", "evil", "--index-url", w.index_url(), "--python",
                       (ve / "bin/python").string(), "--yes", "--lockfile", w.lockfile().string()});
    CHECK(r.rc != 0);
    CHECK(r.err.find("contains a control character") != std::string::npos);
    CHECK(r.err.find("evil/\\x1b]0;pwned\\x07\\x1b[2J.py") != std::string::npos);
    CHECK(r.err.find("\x1b]") == std::string::npos);   // no title sequence
    CHECK(r.err.find("\x1b[2J") == std::string::npos); // no clear screen
    CHECK(r.err.find("\x07") == std::string::npos);
    CHECK(r.err.find("\x1b[1;31merror") != std::string::npos); // our own colour still works
  }

} // TEST_SUITE

namespace {

// Issue 42 item 7a: indexes whose PEP 658 .metadata files lie about their wheels (each lie's hash is
// published, so the hash check passes): a hidden Requires-Dist, a hidden Requires-Python, another version.
constexpr const char* kLyingMetadataIndex = R"({"packages": [
  {"name": "helper", "version": "1.0"},
  {"name": "hidden", "version": "1.0", "requires_dist": ["helper"],
   "metadata_file_text": "Metadata-Version: 2.1\nName: hidden\nVersion: 1.0\n"},
  {"name": "pylie", "version": "1.0", "requires_python": ">=3.99", "index_requires_python": null,
   "metadata_file_text": "Metadata-Version: 2.1\nName: pylie\nVersion: 1.0\n"},
  {"name": "honest", "version": "1.0", "requires_dist": ["helper"]}
]})";

} // namespace

TEST_SUITE("integration/apply/security_cli") {

  TEST_CASE("round3 7a: a wheel whose METADATA disagrees with the index's PEP 658 metadata is refused before install") {
    World w(kLyingMetadataIndex);
    auto ve = w.venv("venv");
    const std::string py = (ve / "bin/python").string();
    const auto before = manifest(ve);
    struct Case {
      std::string package, says;
    };
    for (const Case& c :
         {Case{"hidden", R"(Requires-Dist: the wheel's METADATA requires "helper", the index's metadata does not)"},
          Case{"pylie", "Requires-Python: the index's metadata says (none), the wheel's METADATA says >=3.99"}}) {
      CAPTURE(c.package);
      auto r = w.envfix(
          {"apply", c.package, "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
      CHECK((r.rc == 1 || r.rc == 2));
      CHECK(r.err.find(c.package + "-1.0-py3-none-any.whl") != std::string::npos);
      CHECK(r.err.find("disagrees with the wheel's own METADATA") != std::string::npos);
      CHECK(r.err.find(c.says) != std::string::npos);
      CHECK(manifest(ve) == before); // nothing installed
      CHECK_FALSE(fs::exists(w.lockfile()));
    }
    // The lie was dropped from the cache: the next run reads the downloaded wheel's own METADATA, so its
    // plan is the true one (pylie needs Python 3.99: refused by the resolver; hidden brings helper).
    auto py_again = w.envfix({"apply", "pylie", "--index-url", w.index_url(), "--python", py, "--yes"});
    CHECK(py_again.rc == 1);
    CHECK(py_again.err.find("requires Python>=3.99") != std::string::npos);
    CHECK(manifest(ve) == before);
    auto hidden_again =
        w.envfix({"apply", "hidden", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    CHECK(hidden_again.rc == 0);
    CHECK(w.pip_list(ve).contains("hidden"));
    CHECK(w.pip_list(ve).contains("helper"));
    // The control: metadata that agrees with its wheel installs, with its dependency.
    auto ok =
        w.envfix({"apply", "honest", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    CHECK(ok.rc == 0);
    CHECK(w.pip_list(ve).contains("helper"));
  }

} // TEST_SUITE

} // namespace apply_security_cli_test
