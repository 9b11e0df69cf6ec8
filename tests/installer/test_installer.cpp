// Installer tests in real venvs (python3 -m venv), with pip as the reference installer.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <set>
#include <sys/wait.h>

#include "installer/early_unpack.hpp"
#include "installer/install_target.hpp"
#include "installer/transaction.hpp"
#include "installer/uninstall.hpp"
#include "installer/unpacked_cache.hpp"
#include "installer/wheel_install.hpp"
#include "tests/installer/wheel_factory.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace installer_installer_test {

using namespace envfix;
using namespace envfix::installer;
namespace fs = std::filesystem;

namespace {

struct Venv {
  fs::path root;
  fs::path dir;
  InstallTarget target;
  explicit Venv(const std::string& name) {
    root = test::temp_dir("envfix-inst-" + name);
    dir = root / "venv";
    auto py = create_venv(dir, "python3");
    REQUIRE_MESSAGE(py, (py ? "" : py.error().render()));
    auto t = InstallTarget::from_interpreter(*py);
    REQUIRE_MESSAGE(t, (t ? "" : t.error().render()));
    target = *t;
  }
  ~Venv() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

util::SubprocessResult pip(const Venv& v, std::vector<std::string> args) {
  std::vector<std::string> argv = {"python3", "-m", "pip", "--python", (v.dir / "bin" / "python").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  util::SubprocessOptions opt;
  opt.timeout = std::chrono::seconds(300);
  opt.unset_env = {"PIP_FIND_LINKS", "PIP_CERT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_REQUIRE_VIRTUALENV"};
  opt.set_env = {{"PIP_DISABLE_PIP_VERSION_CHECK", "1"}, {"PIP_NO_INPUT", "1"}};
  auto r = util::run_process(argv, opt);
  REQUIRE(r);
  return *r;
}

// Runs with byte-code writing on (the test environment sets PYTHONDONTWRITEBYTECODE), as users do.
util::SubprocessResult run(const std::vector<std::string>& argv) {
  util::SubprocessOptions opt;
  opt.unset_env = {"PYTHONDONTWRITEBYTECODE"};
  auto r = util::run_process(argv, opt);
  REQUIRE(r);
  return *r;
}

std::vector<fs::path> make_demo_wheels(const fs::path& dir, int n, const std::string& version, int extra = 0) {
  std::vector<fs::path> out;
  for (int i = 0; i < n; ++i) out.push_back(test::make_wheel(test::demo_spec(i, version, extra), dir));
  return out;
}

Expected<TransactionResult> apply_wheels(const InstallTarget& t, const std::vector<fs::path>& wheels, TransactionOptions opt = {},
                                         const std::vector<fs::path>& remove = {}) {
  Transaction txn(t, std::move(opt));
  for (const auto& w : wheels) txn.install({w});
  for (const auto& r : remove) txn.remove(r);
  return txn.run();
}

// Replace the venv path so trees from two venvs compare.
std::string normalize_text(std::string s, const std::string& venv) {
  for (std::size_t p; (p = s.find(venv)) != std::string::npos;) s.replace(p, venv.size(), "<VENV>");
  return s;
}

// Files added to a venv (relative path → mode + normalized content), RECORD rows as a path set.
struct InstalledTree {
  std::map<std::string, std::string> files;
  std::map<std::string, std::set<std::string>> record_paths;
};

InstalledTree installed_tree(const Venv& v, const std::map<std::string, std::string>& before) {
  InstalledTree t;
  for (const auto& [rel, desc] : test::manifest(v.dir)) {
    if (before.contains(rel) || rel.find("__pycache__") != std::string::npos) continue;
    if (desc.starts_with("d ")) {
      t.files[rel] = desc;
      continue;
    }
    auto content = util::read_file(v.dir / rel).value();
    if (rel.ends_with("/RECORD")) {
      std::set<std::string> paths;
      auto rec = util::read_file(v.dir / rel).value();
      std::size_t pos = 0;
      while (pos < rec.size()) {
        auto eol = rec.find('\n', pos);
        auto line = rec.substr(pos, eol - pos);
        pos = eol == std::string::npos ? rec.size() : eol + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) paths.insert(line.substr(0, line.find(',')));
      }
      t.record_paths[rel] = paths;
      t.files[rel] = "RECORD";
      continue;
    }
    if (rel.ends_with("/INSTALLER")) {
      t.files[rel] = "INSTALLER";
      continue;
    }
    t.files[rel] = desc.substr(0, 6) + " " + normalize_text(content, v.dir.string());
  }
  return t;
}

} // namespace

TEST_SUITE("integration/installer/installer") {
  TEST_CASE("envfix and pip install the same trees; pip list/check/uninstall work on envfix's") {
    Venv a("envfix"), b("pip");
    auto wheels_dir = a.root / "wheels";
    fs::create_directories(wheels_dir);
    const int n = 3;
    auto wheels = make_demo_wheels(wheels_dir, n, "1.0");
    auto before_a = test::manifest(a.dir), before_b = test::manifest(b.dir);

    auto r = apply_wheels(a.target, wheels);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    CHECK(r->installed.size() == n);
    CHECK(r->removed.empty());

    std::vector<std::string> args = {"install", "--no-deps", "--no-compile", "--no-index", "--find-links", wheels_dir.string()};
    for (int i = 0; i < n; ++i) args.push_back("demo-pkg-" + std::to_string(i));
    auto p = pip(b, args);
    INFO(p.out, p.err);
    REQUIRE(p.ok());

    auto ta = installed_tree(a, before_a), tb = installed_tree(b, before_b);
    std::string diff;
    for (const auto& [k, v] : ta.files)
      if (!tb.files.contains(k))
        diff += "only envfix: " + k + "\n";
      else if (tb.files[k] != v)
        diff += "differs: " + k + "\n  envfix: " + v + "\n  pip:    " + tb.files[k] + "\n";
    for (const auto& [k, v] : tb.files)
      if (!ta.files.contains(k)) diff += "only pip: " + k + "\n";
    CHECK_MESSAGE(diff.empty(), diff);
    CHECK(ta.record_paths == tb.record_paths);
    CHECK(ta.files.size() > 20 * n);
    // Exactly one INSTALLER per dist, saying envfix.
    CHECK(util::read_file(a.target.purelib / "demo_pkg_0-1.0.dist-info" / "INSTALLER").value() == "envfix\n");
    CHECK(fs::exists(a.target.purelib / "demo_pkg_0-1.0.dist-info" / "REQUESTED"));

    // Entry points and #!python scripts run.
    auto ep = run({(a.dir / "bin" / "demo-0").string()});
    CHECK(ep.ok());
    CHECK(ep.out == "hello from demo_pkg_0 1.0\n");
    auto gui = run({(a.dir / "bin" / "demo-gui-1").string()});
    CHECK(gui.out == "hello from demo_pkg_1 1.0\n");
    auto sc = run({(a.dir / "bin" / "demo_pkg_2-script").string()});
    CHECK(sc.ok());
    CHECK(sc.out == "script 1.0\n");

    auto list = pip(a, {"list", "--format", "freeze"});
    CHECK(list.ok());
    for (int i = 0; i < n; ++i) CHECK(list.out.find("demo-pkg-" + std::to_string(i) + "==1.0") != std::string::npos);
    auto check = pip(a, {"check"});
    INFO(check.out, check.err);
    CHECK(check.ok());
    auto un = pip(a, {"uninstall", "-y", "demo-pkg-1"});
    INFO(un.out, un.err);
    CHECK(un.ok());
    CHECK_FALSE(fs::exists(a.target.purelib / "demo_pkg_1"));
    CHECK_FALSE(fs::exists(a.dir / "bin" / "demo-1"));
    CHECK_FALSE(fs::exists(a.target.headers / "demo-pkg-1"));

    // envfix's own uninstall removes the rest down to the venv's original tree.
    for (int i : {0, 2}) {
      auto dists = find_dist_infos(a.target, "demo_pkg_" + std::to_string(i));
      REQUIRE(dists);
      REQUIRE(dists->size() == 1);
      auto u = uninstall(dists->front(), a.target);
      REQUIRE_MESSAGE(u, (u ? "" : u.error().render()));
    }
    auto after = test::manifest(a.dir);
    for (auto it = after.begin(); it != after.end();)
      it = it->first.find("__pycache__") != std::string::npos ? after.erase(it) : std::next(it);
    CHECK_MESSAGE(after == before_a, test::manifest_diff(before_a, after));
  }
}

TEST_SUITE("unit/installer/installer") {
  TEST_CASE("entry points, shebangs and launcher text") {
    auto eps = parse_entry_points(
        "[console_scripts]\nfoo = pkg.mod:main.run [extra]\n# c\n[gui_scripts]\nBar=pkg:gui\n[other]\nx = y\n", "ep");
    REQUIRE(eps);
    REQUIRE(eps->size() == 2);
    CHECK((*eps)[0].name == "foo");
    CHECK((*eps)[0].module == "pkg.mod");
    CHECK((*eps)[0].attr == "main.run");
    CHECK((*eps)[1].name == "Bar");
    CHECK((*eps)[1].gui);
    CHECK_FALSE(parse_entry_points("[console_scripts]\nfoo = pkg.mod\n", "ep"));
    CHECK(launcher_script((*eps)[0], "/v/bin/python") ==
          "#!/v/bin/python\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom pkg.mod import main\n"
          "if __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
          "    sys.exit(main.run())\n");
    CHECK(shebang_for("/a b/python") == "#!/bin/sh\n'''exec' '/a b/python' \"$0\" \"$@\"\n' '''\n");
    CHECK(shebang_for("/" + std::string(130, 'x')).starts_with("#!/bin/sh\n"));
  }

  TEST_CASE("PEP 668: externally managed interpreters are refused unless overridden") {
    InstallTarget t = InstallTarget::for_venv_layout("/nonexistent", 3, 11);
    t.is_venv = false;
    t.externally_managed = true;
    t.externally_managed_message = "Use apt.";
    auto r = check_externally_managed(t, false);
    REQUIRE_FALSE(r);
    CHECK(r.error().render().find("Use apt.") != std::string::npos);
    CHECK(r.error().hint.find("--venv") != std::string::npos);
    CHECK(check_externally_managed(t, true));
    t.is_venv = true;
    CHECK(check_externally_managed(t, false));
    // A Transaction refuses before touching anything.
    t.is_venv = false;
    Transaction txn(t);
    auto tr = txn.run();
    REQUIRE_FALSE(tr);
    CHECK(tr.error().message.find("externally managed") != std::string::npos);
    CHECK_FALSE(fs::exists("/nonexistent/.envfix"));
  }
}

TEST_SUITE("integration/installer/installer") {
  TEST_CASE("uninstall: shared files kept, missing RECORD refused with a hint, pycache and empty dirs removed") {
    Venv v("uninst");
    auto wd = v.root / "wheels";
    fs::create_directories(wd);
    // Two distributions sharing a namespace-style file.
    test::WheelSpec s1, s2;
    s1.name = "ns-a";
    s1.version = "1.0";
    s1.members = {{"nspkg/shared.txt", "same\n"}, {"nspkg/a/__init__.py", "A = 1\n"}};
    s2.name = "ns-b";
    s2.version = "1.0";
    s2.members = {{"nspkg/shared.txt", "same\n"}, {"nspkg/b/__init__.py", "B = 1\n"}};
    auto w1 = test::make_wheel(s1, wd), w2 = test::make_wheel(s2, wd);
    auto before = test::manifest(v.dir);
    REQUIRE(apply_wheels(v.target, {w1}));
    // ns-b's own shared.txt replaces ns-a's (the backup keeps the old one).
    auto r2 = apply_wheels(v.target, {w2});
    REQUIRE_MESSAGE(r2, (r2 ? "" : r2.error().render()));
    CHECK(r2->warnings.size() >= 1);
    // Byte-code as the interpreter writes it.
    auto imp = run({(v.dir / "bin" / "python").string(), "-c", "import nspkg.a, nspkg.b"});
    REQUIRE(imp.ok());
    REQUIRE(fs::exists(v.target.purelib / "nspkg" / "a" / "__pycache__"));

    auto da = find_dist_infos(v.target, "NS_A").value();
    REQUIRE(da.size() == 1);
    auto plan = plan_uninstall(da[0], v.target);
    REQUIRE(plan);
    REQUIRE(plan->shared.size() == 1);
    CHECK(plan->shared[0].filename() == "shared.txt");
    REQUIRE(uninstall(da[0], v.target));
    CHECK(fs::exists(v.target.purelib / "nspkg" / "shared.txt"));
    CHECK_FALSE(fs::exists(v.target.purelib / "nspkg" / "a"));
    auto db = find_dist_infos(v.target, "ns-b").value();
    REQUIRE(db.size() == 1);
    REQUIRE(uninstall(db[0], v.target));
    CHECK_FALSE(fs::exists(v.target.purelib / "nspkg"));
    auto after = test::manifest(v.dir);
    CHECK_MESSAGE(after == before, test::manifest_diff(before, after));

    // RECORD missing.
    REQUIRE(apply_wheels(v.target, {w1}));
    auto d = find_dist_infos(v.target, "ns-a").value();
    REQUIRE(d.size() == 1);
    fs::remove(d[0] / "RECORD");
    auto bad = uninstall(d[0], v.target);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("RECORD file not found") != std::string::npos);
    CHECK(bad.error().hint.find("envfix") != std::string::npos); // INSTALLER says envfix
    CHECK(fs::exists(v.target.purelib / "nspkg" / "a" / "__init__.py"));
  }

  TEST_CASE("a failure injected at every step leaves the venv byte-identical") {
    Venv v("faults");
    auto wd = v.root / "wheels";
    fs::create_directories(wd / "old");
    fs::create_directories(wd / "new");
    auto old_wheels = make_demo_wheels(wd / "old", 2, "1.0");
    auto new_wheels = make_demo_wheels(wd / "new", 2, "2.0");
    new_wheels.push_back(test::make_wheel(test::demo_spec(2, "2.0"), wd / "new"));
    test::WheelSpec gone;
    gone.name = "to-remove";
    gone.version = "0.1";
    gone.members = {{"to_remove/__init__.py", "R = 1\n"}, {"to_remove/sub/x.py", "X = 1\n"}};
    old_wheels.push_back(test::make_wheel(gone, wd / "old"));
    const auto bare = test::manifest(v.dir);
    REQUIRE(apply_wheels(v.target, old_wheels));
    auto to_remove = find_dist_infos(v.target, "to-remove").value();
    REQUIRE(to_remove.size() == 1);
    const auto before = test::manifest(v.dir);

    // A clean run tells how many remove/install steps there are.
    std::size_t removes = 0, installs = 0;
    {
      TransactionOptions probe;
      probe.fault = [&](std::string_view step, std::size_t i) -> Expected<void> {
        if (step == "remove") removes = std::max(removes, i + 1);
        if (step == "install") installs = std::max(installs, i + 1);
        if (step == "verify") return fail(ErrorCode::internal, "injected at verify");
        return {};
      };
      auto r = apply_wheels(v.target, new_wheels, probe, to_remove);
      REQUIRE_FALSE(r);
      CHECK(r.error().render().find("injected at verify") != std::string::npos);
      auto now = test::manifest(v.dir);
      REQUIRE_MESSAGE(now == before, test::manifest_diff(before, now));
    }
    REQUIRE(removes > 10);
    REQUIRE(installs > 20);

    std::vector<std::pair<std::string, std::size_t>> points = {{"unpack", 0},       {"unpack", 2},   {"hash", 1},
                                                               {"kernel-check", 0}, {"prepared", 0}, {"verify", 0}};
    for (std::size_t i = 0; i < removes; ++i) points.emplace_back("remove", i);
    for (std::size_t i = 0; i < installs; ++i) points.emplace_back("install", i);
    std::size_t fired = 0;
    for (const auto& [step, index] : points) {
      CAPTURE(step);
      CAPTURE(index);
      bool hit = false;
      TransactionOptions opt;
      opt.fault = [&, s = step, idx = index](std::string_view st, std::size_t i) -> Expected<void> {
        if (st == s && (i == idx || s == "hash")) {
          hit = true;
          return fail(ErrorCode::io, "injected failure at {} {}", st, i);
        }
        return {};
      };
      auto r = apply_wheels(v.target, new_wheels, opt, to_remove);
      REQUIRE_FALSE(r);
      CHECK(hit);
      fired += hit;
      auto now = test::manifest(v.dir);
      REQUIRE_MESSAGE(now == before, test::manifest_diff(before, now));
    }
    CHECK(fired == points.size());

    // A kernel check that refuses, and a verify step that imports the new code (writing
    // byte-code) and then fails, and a SIGTERM during verify.
    {
      TransactionOptions opt;
      std::size_t seen = 0;
      opt.kernel_check = [&](const std::vector<StagedObject>& sos) -> Expected<void> {
        seen = sos.size();
        return fail(ErrorCode::unsatisfiable, "libfoo.so lacks sm_120");
      };
      auto r = apply_wheels(v.target, new_wheels, opt, to_remove);
      REQUIRE_FALSE(r);
      CHECK(r.error().render().find("lacks sm_120") != std::string::npos);
      CHECK(test::manifest(v.dir) == before);
    }
    {
      TransactionOptions opt;
      opt.verify = [&]() -> Expected<void> {
        auto imp = run({(v.dir / "bin" / "python").string(), "-c",
                        "import demo_pkg_0.sub.deep, demo_mod_0, demo_pkg_2, demo_pkg_2_extra; print(demo_pkg_0.__file__)"});
        if (!imp.ok()) return fail(ErrorCode::subprocess, "import failed: {}", imp.err);
        return fail(ErrorCode::subprocess, "smoke test failed: no kernel image");
      };
      auto r = apply_wheels(v.target, new_wheels, opt, to_remove);
      REQUIRE_FALSE(r);
      CHECK(r.error().render().find("no kernel image") != std::string::npos);
      auto now = test::manifest(v.dir);
      CHECK_MESSAGE(now == before, test::manifest_diff(before, now));
    }
    {
      TransactionOptions opt;
      opt.verify = []() -> Expected<void> {
        ::raise(SIGTERM);
        return {};
      };
      auto r = apply_wheels(v.target, new_wheels, opt, to_remove);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == ErrorCode::interrupted);
      auto now = test::manifest(v.dir);
      CHECK_MESSAGE(now == before, test::manifest_diff(before, now));
    }

    // Then it succeeds, and rollback() returns to the old set exactly.
    auto ok = apply_wheels(v.target, new_wheels, {}, to_remove);
    REQUIRE_MESSAGE(ok, (ok ? "" : ok.error().render()));
    CHECK(ok->backup_bytes > 0);
    CHECK(ok->removed.size() == 3);
    CHECK(fs::exists(v.target.purelib / "demo_pkg_2"));
    CHECK_FALSE(fs::exists(v.target.purelib / "to_remove"));
    auto run2 = run({(v.dir / "bin" / "demo-0").string()});
    CHECK(run2.out == "hello from demo_pkg_0 2.0\n");
    auto lb = last_backup(v.target);
    REQUIRE(lb);
    REQUIRE(lb->has_value());
    CHECK((*lb)->bytes == ok->backup_bytes);
    auto rb = rollback(v.target);
    REQUIRE_MESSAGE(rb, (rb ? "" : rb.error().render()));
    CHECK(rb->freed_bytes >= ok->backup_bytes);
    auto now = test::manifest(v.dir);
    for (auto it = now.begin(); it != now.end();)
      it = it->first.find("__pycache__") != std::string::npos && !before.contains(it->first) ? now.erase(it) : std::next(it);
    CHECK_MESSAGE(now == before, test::manifest_diff(before, now));
    // issue 33 item 7: rollback is a stack (keep_backups 2 by default): the apply before, which
    // installed the old set into the bare venv, is the next step back; then nothing is left.
    auto kept = kept_backups(v.target);
    REQUIRE(kept);
    CHECK(kept->size() == 1);
    auto again = rollback(v.target);
    REQUIRE_MESSAGE(again, (again ? "" : again.error().render()));
    now = test::manifest(v.dir);
    for (auto it = now.begin(); it != now.end();)
      it = it->first.find("__pycache__") != std::string::npos && !bare.contains(it->first) ? now.erase(it) : std::next(it);
    CHECK_MESSAGE(now == bare, test::manifest_diff(bare, now));
    auto third = rollback(v.target);
    REQUIRE_FALSE(third);
    CHECK(third.error().code == ErrorCode::not_found);
    // --no-backup: nothing kept, nothing to roll back.
    TransactionOptions nb;
    nb.keep_backup = false;
    auto r3 = apply_wheels(v.target, new_wheels, nb); // into the bare venv the two rollbacks left
    REQUIRE(r3);
    CHECK(r3->backup_bytes == 0);
    CHECK_FALSE(rollback(v.target));
    // keep_backups 1: each apply forgets the one before (one step back, as before issue 33).
    TransactionOptions one;
    one.keep_backups = 1;
    REQUIRE(apply_wheels(v.target, old_wheels, one));
    REQUIRE(apply_wheels(v.target, new_wheels, one, find_dist_infos(v.target, "to-remove").value()));
    CHECK(kept_backups(v.target)->size() == 1);
    REQUIRE(rollback(v.target));
    CHECK_FALSE(rollback(v.target));
    // Three applies with the default: the two newest are kept.
    REQUIRE(apply_wheels(v.target, new_wheels, {}, find_dist_infos(v.target, "to-remove").value()));
    REQUIRE(apply_wheels(v.target, old_wheels));
    REQUIRE(apply_wheels(v.target, new_wheels, {}, find_dist_infos(v.target, "to-remove").value()));
    CHECK(kept_backups(v.target)->size() == 2);
    // Then --no-backup (issue 60, point 3): the older backups go too, so rollback refuses rather
    // than undo an older apply under the newer one.
    REQUIRE(apply_wheels(v.target, old_wheels, nb));
    CHECK(kept_backups(v.target)->empty());
    auto past = rollback(v.target);
    REQUIRE_FALSE(past);
    CHECK(past.error().code == ErrorCode::not_found);
  }

  TEST_CASE("rollback after the new set was imported: regenerated byte-code does not block it") {
    // Seen on the GPU machine: the old set's __pycache__ (written when the user ran it) goes to the
    // backup, running the new set writes byte-code at the same paths, and rollback refused with
    // "... .pyc exists again". Such files are derived: they leave with the new set.
    Venv v("pycache-rollback");
    auto wd = v.root / "wheels";
    fs::create_directories(wd / "old");
    fs::create_directories(wd / "new");
    auto old_wheels = make_demo_wheels(wd / "old", 1, "1.0");
    auto new_wheels = make_demo_wheels(wd / "new", 1, "2.0");
    REQUIRE(apply_wheels(v.target, old_wheels));
    const std::string py = (v.dir / "bin" / "python").string();
    auto imp = run({py, "-c", "import demo_pkg_0.sub.deep, demo_mod_0"});
    REQUIRE_MESSAGE(imp.ok(), imp.err);
    const auto before = test::manifest(v.dir);
    std::size_t pycs = 0;
    for (const auto& [p, h] : before) pycs += p.find("__pycache__/") != std::string::npos && p.ends_with(".pyc");
    REQUIRE(pycs >= 2);
    auto ok = apply_wheels(v.target, new_wheels); // replaces 1.0, whose byte-code goes to the backup
    REQUIRE_MESSAGE(ok, (ok ? "" : ok.error().render()));
    imp = run({py, "-c", "import demo_pkg_0.sub.deep, demo_mod_0"});
    REQUIRE_MESSAGE(imp.ok(), imp.err);
    auto rb = rollback(v.target);
    REQUIRE_MESSAGE(rb, (rb ? "" : rb.error().render()));
    auto now = test::manifest(v.dir);
    CHECK_MESSAGE(now == before, test::manifest_diff(before, now)); // the old byte-code is back, the new is gone
  }

  TEST_CASE("the environment lock: a second envfix fails clearly when asked not to wait") {
    Venv v("lock");
    auto wd = v.root / "wheels";
    fs::create_directories(wd);
    auto w = make_demo_wheels(wd, 1, "1.0");
    fs::create_directories(v.dir / ".envfix");
    util::Fd fd(::open((v.dir / ".envfix" / "lock").c_str(), O_RDWR | O_CREAT, 0644));
    REQUIRE(fd.valid());
    REQUIRE(::flock(fd.get(), LOCK_EX) == 0);
    REQUIRE(::write(fd.get(), "4242\n", 5) == 5);
    // flock locks belong to the open file description: a fork'ed child holding it is "another envfix".
    pid_t child = ::fork();
    if (child == 0) {
      ::pause();
      ::_exit(0);
    }
    fd = util::Fd();
    TransactionOptions opt;
    opt.wait_for_lock = false;
    auto r = apply_wheels(v.target, w, opt);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("another envfix process (pid 4242)") != std::string::npos);
    CHECK_FALSE(fs::exists(v.target.purelib / "demo_pkg_0"));
    auto r2 = apply_wheels(v.target, w, opt);
    CHECK(r2);
  }
}

namespace {

std::string tree_diff(const InstalledTree& a, const InstalledTree& b) {
  std::string diff;
  for (const auto& [k, v] : a.files)
    if (!b.files.contains(k))
      diff += "only envfix: " + k + "\n";
    else if (b.files.at(k) != v)
      diff += "differs: " + k + "\n  envfix: " + v + "\n  pip:    " + b.files.at(k) + "\n";
  for (const auto& [k, v] : b.files)
    if (!a.files.contains(k)) diff += "only pip: " + k + "\n";
  if (a.record_paths != b.record_paths) diff += "RECORD paths differ\n";
  return diff;
}

std::vector<WheelToInstall> hashed(const std::vector<fs::path>& wheels) {
  std::vector<WheelToInstall> out;
  for (const auto& w : wheels) {
    WheelToInstall t{w};
    t.sha256 = util::sha256_file_hex(w).value();
    out.push_back(std::move(t));
  }
  return out;
}

Expected<TransactionResult> apply_to(const InstallTarget& t, const std::vector<WheelToInstall>& wheels, TransactionOptions opt) {
  Transaction txn(t, std::move(opt));
  for (const auto& w : wheels) txn.install(w);
  return txn.run();
}

ino_t inode_of(const fs::path& p) {
  struct stat st;
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_ino;
}

} // namespace

TEST_SUITE("integration/installer/installer") {
  TEST_CASE("unpacked cache: every link mode installs pip's tree, the first time and from the cache") {
    Venv ref("linkref");
    auto wheels_dir = ref.root / "wheels";
    fs::create_directories(wheels_dir);
    const int n = 3;
    auto wheels = make_demo_wheels(wheels_dir, n, "1.0", 4);
    auto before_ref = test::manifest(ref.dir);
    std::vector<std::string> args = {"install", "--no-deps", "--no-compile", "--no-index", "--find-links", wheels_dir.string()};
    for (int i = 0; i < n; ++i) args.push_back("demo-pkg-" + std::to_string(i));
    auto p = pip(ref, args);
    INFO(p.out, p.err);
    REQUIRE(p.ok());
    const auto pip_tree = installed_tree(ref, before_ref);
    const auto to_install = hashed(wheels);

    for (LinkMode mode : {LinkMode::copy, LinkMode::hardlink, LinkMode::clone, LinkMode::automatic}) {
      CAPTURE(to_string(mode));
      const fs::path cache = ref.root / (std::string("cache-") + to_string(mode));
      for (int round = 0; round < 2; ++round) {
        CAPTURE(round);
        Venv v(std::string("link-") + to_string(mode));
        auto before = test::manifest(v.dir);
        TransactionOptions opt;
        opt.unpacked_cache = cache;
        opt.link_mode = mode;
        opt.threads = 3;
        auto r = apply_to(v.target, to_install, opt);
        REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
        CHECK(r->installed.size() == n);
        // Round 0 unpacks into the cache, round 1 only links from it.
        CHECK(r->cache_hits == static_cast<std::size_t>(round == 0 ? 0 : n));
        REQUIRE(r->link_mode);
        if (mode == LinkMode::copy || mode == LinkMode::hardlink) CHECK(*r->link_mode == mode);
        auto diff = tree_diff(installed_tree(v, before), pip_tree);
        CHECK_MESSAGE(diff.empty(), diff);
        auto run_ep = run({(v.dir / "bin" / "demo-0").string()});
        CHECK(run_ep.out == "hello from demo_pkg_0 1.0\n");
        // Hard links share the cache's inode; copies do not.
        auto sha = *to_install[0].sha256;
        auto cached_file = cache / sha / "tree" / "demo_pkg_0" / "__init__.py";
        REQUIRE(fs::exists(cached_file));
        bool same = inode_of(cached_file) == inode_of(v.target.purelib / "demo_pkg_0" / "__init__.py");
        CHECK(same == (*r->link_mode == LinkMode::hardlink));
      }
    }
  }

  TEST_CASE("unpacked cache: an entry edited through a hard link is not trusted again") {
    Venv a("cache-edit");
    auto wheels_dir = a.root / "wheels";
    fs::create_directories(wheels_dir);
    auto wheels = make_demo_wheels(wheels_dir, 1, "1.0");
    auto to_install = hashed(wheels);
    TransactionOptions opt;
    opt.unpacked_cache = a.root / "cache";
    opt.link_mode = LinkMode::hardlink;
    auto r = apply_to(a.target, to_install, opt);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    const auto installed = a.target.purelib / "demo_pkg_0" / "__init__.py";
    const auto original = util::read_file(installed).value();
    UnpackedCache cache(opt.unpacked_cache);
    REQUIRE(cache.find(*to_install[0].sha256));
    // An in-place edit (an editor, a sed -i that keeps the inode) reaches the cache file too.
    {
      std::ofstream out(installed, std::ios::app);
      out << "EDITED = True\n";
    }
    CHECK_FALSE(cache.find(*to_install[0].sha256));

    Venv b("cache-edit-2");
    auto r2 = apply_to(b.target, to_install, opt);
    REQUIRE_MESSAGE(r2, (r2 ? "" : r2.error().render()));
    CHECK(r2->cache_hits == 0); // unpacked again from the archive
    CHECK(util::read_file(b.target.purelib / "demo_pkg_0" / "__init__.py").value() == original);
    CHECK(cache.find(*to_install[0].sha256));
  }

  TEST_CASE("early unpack: entries the transaction links as it would its own; a broken wheel is left to it") {
    Venv ref("early-ref"), v("early");
    auto wheels_dir = v.root / "wheels";
    fs::create_directories(wheels_dir);
    auto wheels = make_demo_wheels(wheels_dir, 2, "1.0", 3);
    auto to_install = hashed(wheels);
    // A truncated copy: its sha256 is its own, but it is no zip.
    const fs::path broken = wheels_dir / "broken" / wheels[0].filename();
    fs::create_directories(broken.parent_path());
    {
      auto bytes = util::read_file(wheels[0]).value();
      std::ofstream(broken, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    }
    const auto broken_sha = util::sha256_file_hex(broken).value();
    const fs::path cache_root = v.root / "cache";
    UnpackedCache cache(cache_root);
    std::vector<std::optional<wheel::StagedWheel>> out;
    {
      EarlyUnpacker early(cache, 4, 2, 2);
      early.ready(0, wheels[0], *to_install[0].sha256);
      early.ready(1, wheels[1], *to_install[1].sha256);
      early.ready(2, broken, broken_sha);
      out = early.finish(); // slot 3 was never queued
    }
    REQUIRE(out.size() == 4);
    REQUIRE(out[0]);
    REQUIRE(out[1]);
    CHECK_FALSE(out[2]);
    CHECK_FALSE(out[3]);
    CHECK_FALSE(cache.find(broken_sha));
    auto found = cache.find(*to_install[0].sha256);
    REQUIRE(found);
    CHECK(found->files.size() == out[0]->files.size());
    std::error_code ec;
    for (fs::directory_iterator it(cache_root, ec), end; !ec && it != end; it.increment(ec))
      CHECK_MESSAGE(!it->path().filename().string().starts_with(".tmp-"), it->path().string()); // nothing left behind

    // The transaction links the early entries (not counted as cache hits) and installs the same tree
    // as a transaction that unpacks them itself.
    auto with_early = to_install;
    for (std::size_t i = 0; i < 2; ++i) {
      with_early[i].cached = out[i];
      with_early[i].unpacked_now = true;
    }
    TransactionOptions opt;
    opt.unpacked_cache = cache_root;
    auto before = test::manifest(v.dir);
    auto r = apply_to(v.target, with_early, opt);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    CHECK(r->cache_hits == 0);
    TransactionOptions ref_opt;
    ref_opt.unpacked_cache = ref.root / "cache";
    auto ref_before = test::manifest(ref.dir);
    auto rr = apply_to(ref.target, to_install, ref_opt);
    REQUIRE_MESSAGE(rr, (rr ? "" : rr.error().render()));
    auto diff = tree_diff(installed_tree(v, before), installed_tree(ref, ref_before));
    CHECK_MESSAGE(diff.empty(), diff);

    // A run killed mid-unpack leaves a temp directory: removed once it is an hour old, not before.
    fs::create_directories(cache_root / ".tmp-old" / "tree");
    fs::create_directories(cache_root / ".tmp-live" / "tree");
    fs::last_write_time(cache_root / ".tmp-old", fs::file_time_type::clock::now() - std::chrono::hours(2));
    cache.remove_stale();
    CHECK_FALSE(fs::exists(cache_root / ".tmp-old"));
    CHECK(fs::exists(cache_root / ".tmp-live"));
    CHECK(cache.find(*to_install[0].sha256));

    // Cancelled with work queued (a download failed): returns promptly, joins its workers.
    EarlyUnpacker cancelled(cache, 8, 1, 1);
    for (std::size_t i = 0; i < 8; ++i) cancelled.ready(i, wheels[i % 2], *to_install[i % 2].sha256);
    cancelled.cancel();
  }

  TEST_CASE("unpacked cache: a wrong archive hash refuses the wheel and caches nothing") {
    Venv a("cache-hash");
    auto wheels_dir = a.root / "wheels";
    fs::create_directories(wheels_dir);
    auto wheels = make_demo_wheels(wheels_dir, 1, "1.0");
    auto to_install = hashed(wheels);
    to_install[0].sha256 = std::string(64, 'a');
    TransactionOptions opt;
    opt.unpacked_cache = a.root / "cache";
    const auto before = test::manifest(a.dir);
    auto r = apply_to(a.target, to_install, opt);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::hash_mismatch);
    CHECK(test::manifest(a.dir) == before);
    std::error_code ec;
    std::size_t entries = 0;
    for (fs::directory_iterator it(opt.unpacked_cache, ec), end; !ec && it != end; it.increment(ec)) ++entries;
    CHECK(entries == 0);
  }
}

TEST_SUITE("integration/installer/installer") {
  TEST_CASE("site-packages on another filesystem: replace, a failure, and rollback work by rename on that filesystem") {
    // /dev/shm is a tmpfs; the venv lives on the disk. Moving site-packages there behind a symlink
    // makes every rename between .envfix/ and site-packages cross filesystems (EXDEV).
    struct stat shm, tmp;
    if (::stat("/dev/shm", &shm) != 0 || ::stat(fs::temp_directory_path().c_str(), &tmp) != 0 || shm.st_dev == tmp.st_dev) {
      MESSAGE("SKIP: needs /dev/shm on another filesystem than the temp directory");
      return;
    }
    Venv v("xfs");
    auto other = util::make_temp_dir("/dev/shm", "envfix-xfs");
    REQUIRE(other);
    struct Cleanup {
      fs::path p;
      ~Cleanup() {
        std::error_code ec;
        fs::remove_all(p, ec);
      }
    } cleanup{*other};
    const fs::path real_sp = *other / "site-packages";
    REQUIRE(util::run_process({"mv", v.target.purelib.string(), real_sp.string()}).value().ok());
    fs::create_directory_symlink(real_sp, v.target.purelib);

    auto wd = v.root / "wheels";
    fs::create_directories(wd / "old");
    fs::create_directories(wd / "new");
    auto old_wheels = make_demo_wheels(wd / "old", 2, "1.0");
    auto new_wheels = make_demo_wheels(wd / "new", 2, "2.0");
    auto r0 = apply_wheels(v.target, old_wheels);
    REQUIRE_MESSAGE(r0, (r0 ? "" : r0.error().render()));
    CHECK(fs::exists(real_sp / "demo_pkg_0" / "__init__.py"));
    auto leftovers = [&] {
      std::vector<std::string> out;
      for (const auto& e : fs::directory_iterator(real_sp))
        if (e.path().filename().string().starts_with(".envfix-txn-")) out.push_back(e.path().filename().string());
      return out;
    };
    // The backup of that first transaction is empty (nothing removed); older ones are pruned.
    const auto before = test::manifest(real_sp, {".envfix-txn-never"});
    const auto before_venv = test::manifest(v.dir);

    // A failure in the middle of installing: everything back by rename, no auxiliary directory left.
    {
      TransactionOptions opt;
      opt.fault = [](std::string_view step, std::size_t i) -> Expected<void> {
        if (step == "install" && i == 5) return fail(ErrorCode::io, "injected at install 5");
        return {};
      };
      auto r = apply_wheels(v.target, new_wheels, opt);
      REQUIRE_FALSE(r);
      auto now = test::manifest(real_sp, {".envfix-txn-never"});
      CHECK_MESSAGE(now == before, test::manifest_diff(before, now));
      CHECK(test::manifest(v.dir) == before_venv);
      CHECK(leftovers().empty());
    }

    auto r1 = apply_wheels(v.target, new_wheels);
    REQUIRE_MESSAGE(r1, (r1 ? "" : r1.error().render()));
    CHECK(r1->backup_bytes > 0);
    CHECK(util::read_file(real_sp / "demo_pkg_0-2.0.dist-info" / "INSTALLER").value() == "envfix\n");
    CHECK_FALSE(fs::exists(real_sp / "demo_pkg_0-1.0.dist-info"));
    CHECK(leftovers().size() == 1); // the backup, kept for rollback, on site-packages' filesystem
    auto ep = run({(v.dir / "bin" / "demo-0").string()});
    CHECK(ep.out == "hello from demo_pkg_0 2.0\n");

    auto rb = rollback(v.target);
    REQUIRE_MESSAGE(rb, (rb ? "" : rb.error().render()));
    auto after = test::manifest(real_sp, {".envfix-txn-never"});
    for (auto it = after.begin(); it != after.end();)
      it = it->first.find("__pycache__") != std::string::npos ? after.erase(it) : std::next(it);
    CHECK_MESSAGE(after == before, test::manifest_diff(before, after));
    CHECK(leftovers().empty());
    CHECK(run({(v.dir / "bin" / "demo-0").string()}).out == "hello from demo_pkg_0 1.0\n");
  }
}

} // namespace installer_installer_test
