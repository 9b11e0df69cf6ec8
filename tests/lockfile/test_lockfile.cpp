#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "lockfile/diff.hpp"
#include "lockfile/lockfile.hpp"
#include "lockfile/target.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"

using namespace envfix;
using namespace envfix::lockfile;
namespace fs = std::filesystem;

namespace {

LockFile sample() {
  LockFile l;
  l.created_by = "envfix 0.1.0";
  l.framework = "torch";
  l.request = {"torch", "torchvision"};
  LockTarget t;
  t.host = {{"sm_120"}, "570.26", "3.10", "manylinux_2_28_x86_64"};
  t.id = make_target_id(t.host);
  t.channel = "stable";
  t.index = "https://user:secret@download.example.org/whl/cu128";
  t.variant = "cu128";
  t.packages.push_back({"torchvision", "0.22.0+cu128", "torchvision-0.22.0+cu128-cp310-cp310-manylinux_2_28_x86_64.whl",
                        "https://download.example.org/whl/cu128/torchvision-0.22.0%2Bcu128-cp310-cp310-manylinux_2_28_x86_64.whl",
                        std::string(64, 'b'), 8000, LockedKernels{{"sm_120", "sm_90"}, {}, true}});
  t.packages.push_back(
      {"torch", "2.7.0+cu128", "torch-2.7.0+cu128-cp310-cp310-manylinux_2_28_x86_64.whl",
       "https://user:secret@download.example.org/whl/cu128/torch-2.7.0%2Bcu128-cp310-cp310-manylinux_2_28_x86_64.whl",
       std::string(64, 'a'), 123456789, LockedKernels{{"sm_75", "sm_120"}, {"compute_120"}, false}});
  l.targets.push_back(t);
  return l;
}

std::string python() { return util::find_in_path("python3").value_or("python3").string(); }

} // namespace

TEST_SUITE("unit/lockfile/lockfile") {
  TEST_CASE("diff: one line per package added, removed or changed, per target new or gone; none for equal locks") {
    const LockFile a = sample();
    CHECK(diff(a, a).empty());
    LockFile b = a;
    auto& t = b.targets[0];
    t.packages[1].version = "2.7.1+cu128"; // torch upgraded, same file name is irrelevant: the value differs
    t.packages[1].sha256 = std::string(64, 'c');
    t.packages.erase(t.packages.begin()); // torchvision gone
    t.packages.push_back({"numpy",
                          "2.1.0",
                          "numpy-2.1.0-cp310-cp310-manylinux_2_28_x86_64.whl",
                          "https://x/numpy.whl",
                          std::string(64, 'd'),
                          10,
                          {}});
    const auto id = a.targets[0].id;
    auto d = diff(a, b);
    std::sort(d.begin(), d.end());
    std::vector<std::string> want = {fmt::format("target {}: + numpy==2.1.0", id),
                                     fmt::format("target {}: - torchvision==0.22.0+cu128", id),
                                     fmt::format("target {}: torch 2.7.0+cu128 -> 2.7.1+cu128 (file changed)", id)};
    std::sort(want.begin(), want.end());
    CHECK(d == want);
    LockFile c = a;
    c.request = {"torch"};
    c.targets[0].id = "other";
    auto dc = diff(a, c);
    CHECK(std::ranges::find(dc, "the request or framework changed") != dc.end());
    CHECK(std::ranges::find(dc, "target other: new") != dc.end());
    CHECK(std::ranges::find(dc, fmt::format("target {}: no longer requested", id)) != dc.end());
  }

  TEST_CASE("lockfile round trip is exact and deterministic") {
    LockFile l = sample();
    CHECK(l.targets[0].id == "sm_120-cp310-manylinux_2_28_x86_64");
    std::string y = l.to_yaml();
    auto back = LockFile::parse(y, "envfix.lock");
    REQUIRE_MESSAGE(back, (back ? "" : back.error().render()));
    // Parsing sorts and strips credentials on output; printing again gives the same bytes.
    CHECK(back->to_yaml() == y);
    CHECK(back->targets[0].packages[0].name == "torch");
    CHECK(back->targets[0].packages[0].kernels->verified == false);
    CHECK(back->targets[0].packages[1].kernels->sass == std::vector<std::string>{"sm_120", "sm_90"});
    // Numbers-looking strings stay strings.
    CHECK(y.find("python: \"3.10\"") != std::string::npos);
    CHECK(back->targets[0].host.python == "3.10");
    CHECK(back->targets[0].host.driver_min == "570.26");
  }

  TEST_CASE("verified-on: the machine an apply verified a target on is written, read back equal, and checked") {
    LockFile l = sample();
    l.targets[0].verified_on = VerifiedOn{{"NVIDIA GeForce RTX 5090 (sm_120)"},
                                          "580.65.06",
                                          "12.8",
                                          "nvcc 12.8 (PATH)",
                                          "/work/.venv/bin/python 3.10.14",
                                          "container (docker)",
                                          {"step A", "step B", "model: small CNN fp32/bf16 forward and backward"}};
    auto y = l.to_yaml();
    INFO(y);
    CHECK(y.find("    verified-on:\n      gpus: [") != std::string::npos);
    CHECK(y.find("NVIDIA GeForce RTX 5090 (sm_120)") != std::string::npos);
    auto back = LockFile::parse(y, "envfix.lock");
    REQUIRE_MESSAGE(back, (back ? "" : back.error().render()));
    REQUIRE(back->targets[0].verified_on);
    CHECK(*back->targets[0].verified_on == *l.targets[0].verified_on);
    CHECK(back->to_yaml() == y);
    // Without a record nothing is written; an unknown key in it is named with its line.
    CHECK(sample().to_yaml().find("verified-on") == std::string::npos);
    auto bad = y;
    bad.insert(bad.find("      driver: "), "      colour: blue\n");
    auto e = LockFile::parse(bad, "envfix.lock");
    REQUIRE_FALSE(e);
    CHECK(e.error().render().find("colour") != std::string::npos);
  }

  TEST_CASE("values that YAML would misread are quoted and read back equal (fuzz finding)") {
    LockFile l = sample();
    // A trailing ':' made `python: 3.10us:` a mapping key on the way back.
    // Issue 36 (8): yaml-cpp's emitter escapes what the hand-written quoting did not try: quotes,
    // backslashes, line breaks, control bytes, spaces at either end, non-ASCII text.
    for (const std::string& odd : std::vector<std::string>{"3.10us:",
                                                           "a:",
                                                           "x: y",
                                                           "#c",
                                                           "-x",
                                                           "a #b",
                                                           "say \"hi\"",
                                                           "back\\slash",
                                                           "two\nlines",
                                                           "tab\there",
                                                           " lead",
                                                           "trail ",
                                                           std::string("\x01ctl"),
                                                           "中文 (zh)",
                                                           "[x]",
                                                           "{y}",
                                                           "*z",
                                                           "&a",
                                                           "!t",
                                                           "'q'",
                                                           "|",
                                                           ">",
                                                           "? k",
                                                           "yes",
                                                           "~"}) {
      CAPTURE(odd);
      l.targets[0].host.python = odd;
      l.framework = odd;
      auto back = LockFile::parse(l.to_yaml(), "envfix.lock");
      REQUIRE_MESSAGE(back, (back ? "" : back.error().render()));
      CHECK(back->targets[0].host.python == odd);
      CHECK(back->framework == odd);
    }
  }

  TEST_CASE("credentials never reach the lockfile") {
    std::string y = sample().to_yaml();
    CHECK(y.find("secret") == std::string::npos);
    CHECK(y.find("user:") == std::string::npos);
    CHECK(strip_credentials("https://u:p@h.org/x@y") == "https://h.org/x@y");
    CHECK(strip_credentials("https://h.org/a@b") == "https://h.org/a@b");
    CHECK(strip_credentials("file:///tmp/x") == "file:///tmp/x");
  }

  TEST_CASE("upsert replaces a target with the same id and keeps others") {
    LockFile l = sample();
    LockTarget t2 = l.targets[0];
    t2.host.gpus = {"sm_90"};
    t2.id = make_target_id(t2.host);
    l.upsert(t2);
    CHECK(l.targets.size() == 2);
    t2.variant = "cu126";
    l.upsert(t2);
    CHECK(l.targets.size() == 2);
    CHECK(l.find("sm_90-cp310-manylinux_2_28_x86_64")->variant == "cu126");
    CHECK(make_target_id({{"sm_86", "sm_120"}, "", "3.12", "manylinux_2_28_x86_64"}) ==
          "sm_120+sm_86-cp312-manylinux_2_28_x86_64");
  }

  TEST_CASE("broken lockfiles: every problem named with its line") {
    std::string y = sample().to_yaml();
    SUBCASE("syntax error") {
      auto r = LockFile::parse("lock-version: 1\ntargets: [\n", "bad.lock");
      REQUIRE(!r);
      CHECK(r.error().message.find("bad.lock:") == 0);
      CHECK(r.error().message.find("invalid YAML") != std::string::npos);
    }
    SUBCASE("newer lock-version") {
      std::string z = y;
      z.replace(z.find("lock-version: 1"), 15, "lock-version: 7");
      auto r = LockFile::parse(z, "envfix.lock");
      REQUIRE(!r);
      CHECK(r.error().message.find("newer envfix") != std::string::npos);
      CHECK(r.error().hint.find("upgrade envfix") != std::string::npos);
    }
    SUBCASE("bad hash, unknown key and bad size are all reported at once") {
      std::string z = y;
      z.replace(z.find(std::string(64, 'a')), 64, "nothex");
      z.replace(z.find("size: 8000"), 10, "size: lots");
      z.replace(z.find("    channel: stable"), 19, "    chanel: stable");
      auto r = LockFile::parse(z, "envfix.lock");
      REQUIRE(!r);
      const auto& causes = r.error().causes;
      CHECK(r.error().message.find("3 problems") != std::string::npos);
      REQUIRE(causes.size() == 3);
      bool hash = false, size = false, key = false;
      for (const auto& c : causes) {
        CHECK(c.find("envfix.lock:") == 0);
        hash = hash || c.find("sha256 must be 64") != std::string::npos;
        size = size || c.find("'size' must be a byte count") != std::string::npos;
        key = key || c.find("unknown key 'chanel'") != std::string::npos;
      }
      CHECK((hash && size && key));
    }
    SUBCASE("duplicate package") {
      std::string z = y;
      auto at = z.find("      - name: torchvision");
      z.replace(at, 26, "      - name: torch");
      CHECK(!LockFile::parse(z, "l"));
    }
    SUBCASE("not a mapping") { CHECK(!LockFile::parse("- a\n- b\n", "l")); }
    SUBCASE("optional sections of the wrong kind: each named, with its target or package") {
      std::string z = y;
      z.replace(z.find("    channel: stable"), 19, "    verified-on: yesterday\n    installed-only: {a: b}\n    channel: stable");
      auto at = z.find("        sha256: ");
      z.insert(at, "        kernels: [sm_90]\n");
      auto r = LockFile::parse(z, "envfix.lock");
      REQUIRE(!r);
      std::string all;
      for (const auto& c : r.error().causes) all += c + "\n";
      CAPTURE(all);
      CHECK(all.find("'verified-on' must be a mapping") != std::string::npos);
      CHECK(all.find("'installed-only' must be a list") != std::string::npos);
      CHECK(all.find("in target '") != std::string::npos);
      CHECK(all.find(": 'kernels' must be a mapping") != std::string::npos);
    }
  }

  // docs/reliability.md §5, case 2: a lockfile's filename became a path in the cache, so "../" or an
  // absolute name chose where `apply --locked` wrote the downloaded bytes.
  TEST_CASE("security 2: a filename that is a path, not a wheel, or another package's is refused with file:line:column") {
    const std::string y = sample().to_yaml();
    const std::string good = "torch-2.7.0+cu128-cp310-cp310-manylinux_2_28_x86_64.whl";
    REQUIRE(y.find("filename: " + good) != std::string::npos);
    for (std::string bad : {"../../../../tmp/evil-2.7.0-py3-none-any.whl", "/etc/passwd", "/tmp/torch-1-py3-none-any.whl", "..",
                            "torch.tar.gz", "torchvision-0.22.0-py3-none-any.whl"}) {
      CAPTURE(bad);
      std::string z = y;
      z.replace(z.find(good), good.size(), "\"" + bad + "\"");
      auto r = LockFile::parse(z, "envfix.lock");
      REQUIRE(!r);
      REQUIRE(r.error().causes.size() == 1);
      const auto& c = r.error().causes[0];
      CHECK(c.find("envfix.lock:") == 0);
      CHECK(c.find("filename") != std::string::npos);
      // file:line:column points at the value.
      auto line = std::count(z.begin(), z.begin() + static_cast<std::ptrdiff_t>(z.find(bad)), '\n') + 1;
      CHECK(c.find(fmt::format("envfix.lock:{}:", line)) == 0);
      CHECK(c.find('\x1b') == std::string::npos);
    }
  }

  TEST_CASE("requirements export has index, pins and hashes") {
    LockFile l = sample();
    std::string r = to_requirements_txt(l, l.targets[0]).value();
    CHECK(r.find("--index-url https://download.example.org/whl/cu128\n") != std::string::npos);
    CHECK(r.find("torch==2.7.0+cu128 \\\n    --hash=sha256:" + std::string(64, 'a')) != std::string::npos);
    CHECK(r.find("secret") == std::string::npos);
  }

  TEST_CASE("an unknown size is left out, never written as 0; size: 0 of older files reads as unknown") {
    LockFile l = sample();
    l.targets[0].packages[1].size.reset(); // torch
    std::string y = l.to_yaml();
    CHECK(y.find("size: 0") == std::string::npos);
    CHECK(y.find("size: 8000") != std::string::npos);
    auto back = LockFile::parse(y, "envfix.lock");
    REQUIRE_MESSAGE(back, (back ? "" : back.error().render()));
    CHECK(back->to_yaml() == y);
    CHECK(!back->find(back->targets[0].id)->packages[0].size); // sorted: torch first
    auto py = to_pylock_toml(*back, back->targets[0]).value();
    CHECK(py.find("size = 0") == std::string::npos);
    CHECK(py.find("size = 8000") != std::string::npos);
    std::string old = y;
    old.replace(old.find("size: 8000"), 10, "size: 0");
    auto o = LockFile::parse(old, "envfix.lock");
    REQUIRE(o);
    CHECK(o->to_yaml().find("size: ") == std::string::npos);
  }

  TEST_CASE("a free-threaded target: id cp313t, pylock requires-python without the t") {
    LockFile l = sample();
    l.targets[0].host.python = "3.13t";
    l.targets[0].id = make_target_id(l.targets[0].host);
    CHECK(l.targets[0].id == "sm_120-cp313t-manylinux_2_28_x86_64");
    auto py = to_pylock_toml(l, l.targets[0]).value();
    CHECK(py.find("==3.13.*") != std::string::npos);
    CHECK(py.find("3.13t.*") == std::string::npos);
  }

  TEST_CASE("installed-only: a kept package no index serves is locked with its provenance, read back, named by the exports") {
    LockFile l = sample();
    l.targets[0].installed_only.push_back(
        {"typing-extensions", "4.15.0", "installed by pip; not served by https://m.example/simple"});
    auto y = l.to_yaml();
    CHECK(y.find("    installed-only:\n      - name: typing-extensions\n        version: \"4.15.0\"\n") != std::string::npos);
    auto back = LockFile::parse(y, "envfix.lock");
    REQUIRE(back);
    REQUIRE(back->targets[0].installed_only.size() == 1);
    CHECK(back->targets[0].installed_only[0] == l.targets[0].installed_only[0]);
    CHECK(back->to_yaml() == y);
    // Nothing pretends to install it: the pylock names it in [tool.envfix], requirements in a comment.
    auto py = to_pylock_toml(l, l.targets[0]).value();
    CHECK(py.find("installed-only = [") != std::string::npos);
    CHECK(py.find("typing-extensions==4.15.0 (installed by pip") != std::string::npos);
    auto rq = to_requirements_txt(l, l.targets[0]).value();
    CHECK(rq.find("# not installed by this file: typing-extensions==4.15.0") != std::string::npos);
    CHECK(rq.find("\ntyping-extensions==") == std::string::npos);
    // apply --locked's check: the exact version installed, or a line naming what is there.
    CHECK(unmet_installed_only(l.targets[0], {{"typing_extensions", "4.15"}, {"torch", "2.7.0"}}).empty());
    auto older = unmet_installed_only(l.targets[0], {{"typing-extensions", "4.12.2"}});
    REQUIRE(older.size() == 1);
    CHECK(older[0] == "typing-extensions 4.15.0 (installed by pip; not served by https://m.example/simple): 4.12.2 is installed");
    auto none = unmet_installed_only(l.targets[0], {});
    REQUIRE(none.size() == 1);
    CHECK(none[0].ends_with(": not installed"));
    // A name both locked with a file and installed-only is a broken file.
    auto dup = y;
    dup.replace(dup.find("      - name: typing-extensions"), 31, "      - name: torch");
    auto bad = LockFile::parse(dup, "envfix.lock");
    REQUIRE(!bad);
    REQUIRE(!bad.error().causes.empty());
    CHECK(bad.error().causes[0].find("duplicate installed-only 'torch'") != std::string::npos);
    // A lock written by hand names them as it likes (issue 60, 8): the same project spelled two ways is
    // a duplicate, and an installed-only name matches the installed dist by its normalized name.
    auto spelled = y;
    spelled.replace(spelled.find("      - name: typing-extensions"), 31, "      - name: Torch");
    auto twice = LockFile::parse(spelled, "envfix.lock");
    REQUIRE(!twice);
    REQUIRE(!twice.error().causes.empty());
    CHECK(twice.error().causes[0].find("duplicate installed-only 'Torch'") != std::string::npos);
    auto upper = y;
    upper.replace(upper.find("      - name: typing-extensions"), 31, "      - name: Typing_Extensions");
    auto hand = LockFile::parse(upper, "envfix.lock");
    REQUIRE(hand);
    CHECK(unmet_installed_only(hand->targets[0], {{"typing-extensions", "4.15.0"}}).empty());
    CHECK(!LockFile::parse(y + "      - nope\n", "envfix.lock"));
  }
}

TEST_SUITE("unit/lockfile/target") {
  TEST_CASE("a target's platform: the most demanding manylinux tag of its wheels, on the arch") {
    CHECK(lockfile::set_platform({"torch-2.7.0+cu128-cp310-cp310-manylinux_2_28_x86_64.whl",
                                  "numpy-2.2.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                                  "filelock-3.16.1-py3-none-any.whl"},
                                 "x86_64") == "manylinux_2_28_x86_64");
    // A wheel counts by its easiest tag; another arch's tags do not count.
    CHECK(lockfile::set_platform({"numpy-2.2.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                                  "x-1.0-cp310-cp310-manylinux_2_34_aarch64.whl"},
                                 "x86_64") == "manylinux_2_17_x86_64");
    CHECK(lockfile::set_platform({"filelock-3.16.1-py3-none-any.whl", "not a wheel"}, "aarch64") == "linux_aarch64");
  }

  TEST_CASE("lock --target descriptions: keys, defaults, and errors that name the part") {
    auto t = lockfile::parse_target_spec("gpu=sm_86+RTX 5090,python=3.10,driver=570.86,platform=manylinux_2_28_x86_64").value();
    CHECK(t.gpus == std::vector<std::string>{"sm_86", "RTX 5090"});
    CHECK(t.python == "3.10");
    CHECK(t.driver == "570.86");
    CHECK(t.platform == "manylinux_2_28_x86_64");
    CHECK(lockfile::parse_target_spec("python=3.12").value().gpus == std::vector<std::string>{"none"}); // CPU-only
    CHECK(lockfile::parse_target_spec("gpu=").value().gpus == std::vector<std::string>{"none"});
    auto bad = lockfile::parse_target_spec("gpu=sm_90,cuda=12.8");
    REQUIRE(!bad);
    CHECK(bad.error().message == "--target 'gpu=sm_90,cuda=12.8': unknown key 'cuda'");
    auto novalue = lockfile::parse_target_spec("sm_90");
    REQUIRE(!novalue);
    CHECK(novalue.error().message == "--target 'sm_90': 'sm_90' is not key=value");
  }
}

TEST_SUITE("integration/lockfile/lockfile") {
  TEST_CASE("pylock export parses with tomllib and has every PEP 751 field") {
    LockFile l = sample();
    auto dir = util::make_temp_dir({}, "envfix-pylock").value();
    REQUIRE(util::write_file_atomic(dir / "pylock.toml", to_pylock_toml(l, l.targets[0]).value()));
    const char* check = R"PY(
import sys, tomllib, re
d = tomllib.load(open(sys.argv[1], 'rb'))
assert d['lock-version'] == '1.0', d
assert isinstance(d['created-by'], str) and d['created-by']
assert all(isinstance(e, str) for e in d['environments'])
assert d['requires-python'] == '==3.10.*'
names = [p['name'] for p in d['packages']]
assert names == ['torch', 'torchvision'], names
for p in d['packages']:
    assert re.fullmatch(r'[a-z0-9-]+', p['name'])
    assert p['version'] and p['index']
    sources = [k for k in ('vcs', 'directory', 'archive', 'sdist', 'wheels') if k in p]
    assert sources == ['wheels'], sources
    for w in p['wheels']:
        assert w['url'].endswith(w['name'].replace('+', '%2B'))
        assert isinstance(w['size'], int) and w['size'] > 0
        assert re.fullmatch(r'[0-9a-f]{64}', w['hashes']['sha256'])
        assert 'secret' not in w['url']
assert d['tool']['envfix']['target'] == 'sm_120-cp310-manylinux_2_28_x86_64'
print('ok')
)PY";
    auto r = util::run_process({python(), "-c", check, (dir / "pylock.toml").string()}).value();
    CHECK_MESSAGE(r.out == "ok\n", r.err);
    fs::remove_all(dir);
  }

  TEST_CASE("requirements export installs with real pip --require-hashes into a fresh venv") {
    auto dir = util::make_temp_dir({}, "envfix-req").value();
    // A real wheel in a PEP 503 file:// index.
    const char* mk = R"PY(
import sys, os, zipfile, hashlib, base64
root = sys.argv[1]
os.makedirs(f'{root}/simple/demo-pkg', exist_ok=True)
name = 'demo_pkg-1.2.0+cu128-py3-none-any.whl'
files = {'demo_pkg/__init__.py': b'VALUE = 42\n',
         'demo_pkg-1.2.0+cu128.dist-info/METADATA': b'Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.2.0+cu128\n\n',
         'demo_pkg-1.2.0+cu128.dist-info/WHEEL': b'Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n'}
rec = []
for p, d in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()
    rec.append(f'{p},sha256={h},{len(d)}')
rec.append('demo_pkg-1.2.0+cu128.dist-info/RECORD,,')
files['demo_pkg-1.2.0+cu128.dist-info/RECORD'] = ('\n'.join(rec) + '\n').encode()
path = f'{root}/simple/demo-pkg/{name}'
with zipfile.ZipFile(path, 'w') as z:
    for p, d in files.items(): z.writestr(p, d)
data = open(path, 'rb').read()
open(f'{root}/simple/demo-pkg/index.html', 'w').write(f'<a href="{name}#sha256={hashlib.sha256(data).hexdigest()}">{name}</a>')
print(hashlib.sha256(data).hexdigest(), len(data))
)PY";
    auto made = util::run_process({python(), "-c", mk, dir.string()}).value();
    REQUIRE_MESSAGE(made.ok(), made.err);
    std::string sha = made.out.substr(0, 64);
    std::uint64_t size = std::stoull(made.out.substr(65));
    LockFile l;
    l.created_by = "envfix test";
    l.request = {"demo-pkg"};
    LockTarget t;
    t.host = {{}, "", "3.11", "manylinux_2_36_x86_64"};
    t.id = make_target_id(t.host);
    t.index = "file://" + (dir / "simple").string();
    t.packages.push_back({"demo-pkg", "1.2.0+cu128", "demo_pkg-1.2.0+cu128-py3-none-any.whl",
                          t.index + "/demo-pkg/demo_pkg-1.2.0%2Bcu128-py3-none-any.whl", sha, size, std::nullopt});
    l.targets.push_back(t);
    REQUIRE(util::write_file_atomic(dir / "requirements.txt", to_requirements_txt(l, l.targets[0]).value()));
    auto venv = util::run_process({python(), "-m", "venv", "--without-pip", (dir / "venv").string()}).value();
    REQUIRE_MESSAGE(venv.ok(), venv.err);
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(600);
    o.unset_env = {"PIP_FIND_LINKS", "PIP_CERT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"};
    // The host's pip (23.2.1) installs into the venv through --python, like a user's pip would.
    auto pip_install = [&](const fs::path& req) {
      return util::run_process({python(), "-m", "pip", "--python", (dir / "venv/bin/python").string(), "install",
                                "--force-reinstall", "--disable-pip-version-check", "--no-cache-dir", "--require-hashes", "-r",
                                req.string()},
                               o);
    };
    auto pip = pip_install(dir / "requirements.txt");
    REQUIRE(pip);
    CHECK_MESSAGE(pip->ok(), (pip->out + pip->err));
    auto run = util::run_process({(dir / "venv/bin/python").string(), "-c",
                                  "import demo_pkg, importlib.metadata as m; print(demo_pkg.VALUE, m.version('demo-pkg'))"})
                   .value();
    CHECK(run.out == "42 1.2.0+cu128\n");
    // A tampered hash is refused by pip too.
    l.targets[0].packages[0].sha256 = std::string(64, '0');
    REQUIRE(util::write_file_atomic(dir / "bad.txt", to_requirements_txt(l, l.targets[0]).value()));
    auto bad = pip_install(dir / "bad.txt").value();
    CHECK_MESSAGE(!bad.ok(), (bad.out + bad.err));
    CHECK_MESSAGE((bad.out + bad.err).find("THESE PACKAGES DO NOT MATCH THE HASHES") != std::string::npos, (bad.out + bad.err));
    fs::remove_all(dir);
  }
}
