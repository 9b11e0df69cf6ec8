// The installer's half of the security issue (docs/reliability.md §5): hostile wheels, RECORDs and
// unpacked-cache entries against real venvs (python3 -m venv) and real wheels (gen_wheel.py).
// Each case is a regression test: it failed before the fix named in its title.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "installer/install_target.hpp"
#include "installer/transaction.hpp"
#include "installer/uninstall.hpp"
#include "installer/unpacked_cache.hpp"
#include "tests/installer/wheel_factory.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

namespace installer_security_test {

using namespace envfix;
using namespace envfix::installer;
namespace fs = std::filesystem;

namespace {

struct Venv {
  fs::path root, dir;
  InstallTarget target;
  explicit Venv(const std::string& name) {
    root = test::temp_dir("envfix-sec-" + name);
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
  [[nodiscard]] fs::path wheels() const {
    fs::create_directories(root / "wheels");
    return root / "wheels";
  }
};

Expected<TransactionResult> apply(const InstallTarget& t, const std::vector<WheelToInstall>& wheels, TransactionOptions opt = {},
                                  const std::vector<fs::path>& remove = {}) {
  opt.durable = false;
  Transaction txn(t, std::move(opt));
  for (const auto& w : wheels) txn.install(w);
  for (const auto& r : remove) txn.remove(r);
  return txn.run();
}

WheelToInstall hashed(const fs::path& w) {
  WheelToInstall t{w};
  t.sha256 = util::sha256_file_hex(w).value();
  return t;
}

test::WheelSpec simple(const std::string& name, const std::string& version, std::vector<test::Member> extra = {}) {
  test::WheelSpec s;
  s.name = name;
  s.version = version;
  std::string pkg = name;
  for (auto& c : pkg)
    if (c == '-') c = '_';
  s.members = {{pkg + "/__init__.py", "V = '" + version + "'\n"}};
  for (auto& m : extra) s.members.push_back(std::move(m));
  return s;
}

// Rewrites one byte of `path` in place and sets its mtime back: the same size and mtime, only the
// change time tells (security 12).
void edit_keeping_size_and_mtime(const fs::path& path, off_t offset, char byte) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  {
    util::Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    REQUIRE(fd.valid());
    REQUIRE(::pwrite(fd.get(), &byte, 1, offset) == 1);
  }
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

bool has_warning(const std::vector<util::Message>& ws, std::string_view needle) {
  for (const auto& w : ws)
    if (w.text.find(needle) != std::string::npos) return true;
  return false;
}

// Appends rows to an installed distribution's RECORD (what a hostile or broken installer left).
void add_record_rows(const InstallTarget& t, const std::string& project, const std::vector<std::string>& rows) {
  auto d = find_dist_infos(t, project).value();
  REQUIRE(d.size() == 1);
  std::ofstream out(d[0] / "RECORD", std::ios::app);
  for (const auto& r : rows) out << r << "\n";
}

ino_t inode_of(const fs::path& p) {
  struct stat st;
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_ino;
}

} // namespace

TEST_SUITE("integration/installer/security") {

  TEST_CASE("security 1: a wheel cannot plant a journal in .envfix, and a planted journal deletes nothing it names") {
    Venv v("journal");
    const auto victim = v.root / "victim";
    fs::create_directories(victim);
    REQUIRE(util::write_file_atomic(victim / "keep.txt", "precious\n"));
    const std::string id = "20200101T000000.000000-1";
    const std::string ops = R"({"format":1,"id":")" + id +
                            R"(","kind":"apply","rolls_back":"","started":0,"split":0,)"
                            R"("installed":[],"removed":[],"ops":[],"aux":[")" +
                            victim.string() + R"("]})";
    auto spec = simple("planter", "1.0");
    spec.members.push_back({spec.data_dir() + "/data/.envfix/txn/" + id + "/journal", "committed\n"});
    spec.members.push_back({spec.data_dir() + "/data/.envfix/txn/" + id + "/ops.json", ops});
    const auto before = test::manifest(v.dir);
    auto r = apply(v.target, {WheelToInstall{test::make_wheel(spec, v.wheels())}});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("envfix's own state") != std::string::npos);
    CHECK(fs::exists(victim / "keep.txt"));
    CHECK(test::manifest(v.dir) == before);

    // Defense in depth: the same journal written by hand. Its aux entry is not named
    // .envfix-txn-<id>, so discarding the old transaction leaves the directory alone.
    const auto planted = v.dir / ".envfix" / "txn" / id;
    fs::create_directories(planted);
    REQUIRE(util::write_file_atomic(planted / "journal", "committed\n"));
    REQUIRE(util::write_file_atomic(planted / "ops.json", ops));
    TransactionOptions one; // keep no older backup: the planted transaction is discarded
    one.keep_backups = 1;
    auto ok = apply(v.target, {WheelToInstall{test::make_wheel(simple("plain", "1.0"), v.wheels())}}, one);
    REQUIRE_MESSAGE(ok, (ok ? "" : ok.error().render()));
    CHECK(fs::exists(victim / "keep.txt"));
    CHECK_FALSE(fs::exists(planted));

    // Named exactly like an auxiliary directory of that transaction, but outside every scheme
    // directory of the target: still not envfix's own, so it is kept. Inside one (here beside
    // purelib's files), the same name is the transaction's and goes with it.
    const std::string id2 = "20200101T000000.000000-2";
    const auto outside = v.root / (".envfix-txn-" + id2);
    const auto inside = v.target.purelib / (".envfix-txn-" + id2);
    for (const auto& d : {outside, inside}) {
      fs::create_directories(d / "backup");
      REQUIRE(util::write_file_atomic(d / "backup" / "keep.txt", "precious\n"));
    }
    const auto planted2 = v.dir / ".envfix" / "txn" / id2;
    fs::create_directories(planted2);
    REQUIRE(util::write_file_atomic(planted2 / "journal", "committed\n"));
    REQUIRE(util::write_file_atomic(planted2 / "ops.json", R"({"format":1,"id":")" + id2 +
                                                               R"(","kind":"apply","rolls_back":"","started":0,"split":0,)"
                                                               R"("installed":[],"removed":[],"ops":[],"aux":[")" +
                                                               outside.string() + R"(",")" + inside.string() + R"("]})"));
    auto ok2 = apply(v.target, {WheelToInstall{test::make_wheel(simple("plain2", "1.0"), v.wheels())}});
    REQUIRE_MESSAGE(ok2, (ok2 ? "" : ok2.error().render()));
    CHECK(fs::exists(outside / "backup" / "keep.txt"));
    CHECK_FALSE(fs::exists(inside));
    CHECK_FALSE(fs::exists(planted2));
  }

  TEST_CASE("security 3: uninstall does not follow a symlinked directory out of the environment") {
    Venv v("symlink");
    auto w = test::make_wheel(simple("demo", "1.0", {{"demo/vendored/precious.txt", "mine\n"}}), v.wheels());
    REQUIRE(apply(v.target, {WheelToInstall{w}}));
    const auto elsewhere = v.root / "elsewhere";
    fs::create_directories(elsewhere);
    REQUIRE(util::write_file_atomic(elsewhere / "precious.txt", "not yours\n"));
    const auto vendored = v.target.purelib / "demo" / "vendored";
    fs::remove_all(vendored);
    fs::create_directory_symlink(elsewhere, vendored);

    auto plan = plan_uninstall(find_dist_infos(v.target, "demo").value().at(0), v.target);
    REQUIRE(plan);
    for (const auto& f : plan->files) CHECK_MESSAGE(f.find("precious") == std::string::npos, f);
    CHECK(has_warning(plan->warnings, "outside the install scheme"));
    TransactionOptions opt;
    opt.keep_backup = false; // --no-backup: a file taken would be gone for good
    auto r = apply(v.target, {}, opt, find_dist_infos(v.target, "demo").value());
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    CHECK(util::read_file(elsewhere / "precious.txt").value() == "not yours\n");
  }

  TEST_CASE("security 4: --venv runs `python -m venv` from an empty directory, not the caller's venv.py") {
    const auto root = test::temp_dir("envfix-sec-venvpy");
    const auto marker = root / "venv.py-ran";
    REQUIRE(util::write_file_atomic(root / "venv.py", "open(" + nlohmann::json(marker.string()).dump() + ", 'w').write('x')\n"));
    const auto old = fs::current_path();
    fs::current_path(root);
    auto py = create_venv("made", "python3"); // relative, as a user types it
    fs::current_path(old);
    REQUIRE_MESSAGE(py, (py ? "" : py.error().render()));
    CHECK_FALSE(fs::exists(marker));
    CHECK(fs::exists(root / "made" / "pyvenv.cfg"));
    fs::remove_all(root);
  }

  TEST_CASE("security 5: an unpacked-cache manifest with '../' names is not trusted") {
    Venv a("manifest");
    const auto w = hashed(test::make_wheel(simple("demo", "1.0"), a.wheels()));
    TransactionOptions opt;
    opt.unpacked_cache = a.root / "cache";
    opt.link_mode = LinkMode::copy;
    REQUIRE(apply(a.target, {w}, opt));
    const auto mf = opt.unpacked_cache / *w.sha256 / "manifest.json";
    const auto original = util::read_file(mf).value();
    UnpackedCache cache(opt.unpacked_cache);
    REQUIRE(cache.find(*w.sha256));
    // A member that resolves to the very file (so size and mtime match) but installs outside site-packages.
    auto j = nlohmann::json::parse(original);
    for (auto& f : j["files"])
      if (f[0] == "demo/__init__.py") f[0] = "../tree/demo/__init__.py";
    REQUIRE(util::write_file_atomic(mf, j.dump()));
    CHECK_FALSE(cache.find(*w.sha256));
    Venv b("manifest-2");
    const auto before = test::manifest(b.dir);
    auto r = apply(b.target, {w}, opt);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    CHECK(r->cache_hits == 0);
    CHECK_FALSE(fs::exists(b.target.purelib.parent_path() / "tree"));
    CHECK(fs::exists(b.target.purelib / "demo" / "__init__.py"));
    // The dist-info name is checked the same way.
    j = nlohmann::json::parse(util::read_file(mf).value());
    j["dist_info"] = "../../evil.dist-info";
    REQUIRE(util::write_file_atomic(mf, j.dump()));
    CHECK_FALSE(cache.find(*w.sha256));
    (void)before;
  }

  TEST_CASE("security 9: lib64 -> lib is one directory: a replacing apply works where platlibdir is lib64") {
    Venv v("lib64");
    if (!fs::is_symlink(v.dir / "lib64")) fs::create_directory_symlink("lib", v.dir / "lib64");
    // What sysconfig says on Fedora/RHEL/openSUSE: purelib under lib/, platlib under lib64/.
    InstallTarget t = v.target;
    t.platlib = v.dir / "lib64" / t.purelib.parent_path().filename() / "site-packages";
    REQUIRE(fs::equivalent(t.platlib, t.purelib));
    auto s1 = simple("plat", "1.0"), s2 = simple("plat", "2.0");
    s1.root_is_purelib = s2.root_is_purelib = false;
    REQUIRE(apply(t, {WheelToInstall{test::make_wheel(s1, v.wheels())}}));
    REQUIRE(apply(t, {WheelToInstall{test::make_wheel(simple("pure", "1.0"), v.wheels())}}));
    CHECK(list_dist_infos(t).value().size() == 2);
    auto r = apply(t, {WheelToInstall{test::make_wheel(s2, v.wheels())}});
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    REQUIRE(r->removed.size() == 1);
    CHECK(r->removed[0].version == "1.0");
    auto d = find_dist_infos(t, "plat").value();
    REQUIRE(d.size() == 1);
    CHECK(d[0].filename() == "plat-2.0.dist-info");
    CHECK(util::read_file(v.target.purelib / "plat" / "__init__.py").value() == "V = '2.0'\n");
  }

  TEST_CASE("security 10: a wheel or a RECORD cannot replace or remove the environment lock") {
    Venv v("lock");
    REQUIRE(apply(v.target, {WheelToInstall{test::make_wheel(simple("demo", "1.0"), v.wheels())}}));
    const auto lock = v.dir / ".envfix" / "lock";
    REQUIRE(fs::exists(lock));
    const auto ino = inode_of(lock);
    auto spec = simple("locker", "1.0");
    spec.members.push_back({spec.data_dir() + "/data/.envfix/lock", "0\n"});
    auto r = apply(v.target, {WheelToInstall{test::make_wheel(spec, v.wheels())}});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find(".envfix/lock") != std::string::npos);
    CHECK(inode_of(lock) == ino);
    // A RECORD row that names the lock (relative to site-packages: lib/pythonX.Y/site-packages).
    add_record_rows(v.target, "demo", {"../../../.envfix/lock,,"});
    auto r2 = apply(v.target, {WheelToInstall{test::make_wheel(simple("demo", "2.0"), v.wheels())}});
    REQUIRE_MESSAGE(r2, (r2 ? "" : r2.error().render()));
    CHECK(has_warning(r2->warnings, "envfix's own state"));
    CHECK(inode_of(lock) == ino);
  }

  TEST_CASE("security 11: a RECORD naming a directory, the interpreter, pyvenv.cfg or another's file removes none of them") {
    Venv v("record");
    REQUIRE(apply(v.target, {WheelToInstall{test::make_wheel(simple("other", "1.0", {{"shared/x.txt", "x\n"}}), v.wheels())}}));
    REQUIRE(apply(v.target, {WheelToInstall{test::make_wheel(simple("demo", "1.0"), v.wheels())}}));
    add_record_rows(v.target, "demo",
                    {"other,,", "../../../bin/python,,", "../../../bin/python3,,", "../../../pyvenv.cfg,,", "shared/x.txt,,"});
    const auto before = test::manifest(v.dir);
    TransactionOptions opt;
    opt.keep_backup = false;
    auto r = apply(v.target, {}, opt, find_dist_infos(v.target, "demo").value());
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    CHECK(fs::exists(v.target.purelib / "other" / "__init__.py"));
    CHECK(fs::exists(v.target.purelib / "shared" / "x.txt"));
    CHECK(fs::exists(v.dir / "pyvenv.cfg"));
    CHECK(fs::is_symlink(v.dir / "bin" / "python"));
    CHECK(fs::is_symlink(v.dir / "bin" / "python3"));
    CHECK(has_warning(r->warnings, "a directory, not a file"));
    CHECK(has_warning(r->warnings, "interpreter or pyvenv.cfg"));
    auto ran = util::run_process({(v.dir / "bin" / "python").string(), "-c", "import other"}, {});
    REQUIRE(ran);
    CHECK(ran->ok());
    (void)before;
  }

  TEST_CASE("security 12: a cached file edited with its size and mtime kept is not installed") {
    Venv a("ctime");
    const auto w = hashed(test::make_wheel(simple("demo", "1.0"), a.wheels()));
    TransactionOptions opt;
    opt.unpacked_cache = a.root / "cache";
    opt.link_mode = LinkMode::copy;
    REQUIRE(apply(a.target, {w}, opt));
    UnpackedCache cache(opt.unpacked_cache);
    REQUIRE(cache.find(*w.sha256));
    const auto cached = opt.unpacked_cache / *w.sha256 / "tree" / "demo" / "__init__.py";
    // The edited entry is not used: a fresh environment gets the archive's bytes, unpacked again.
    auto unpacked_again = [&](const char* name) {
      CHECK_FALSE(cache.find(*w.sha256));
      Venv v(name);
      auto r = apply(v.target, {w}, opt);
      REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
      CHECK(r->cache_hits == 0);
      CHECK(util::read_file(v.target.purelib / "demo" / "__init__.py").value() == "V = '1.0'\n");
    };
    edit_keeping_size_and_mtime(cached, 0, 'X');
    unpacked_again("ctime-2");
    // Untouched entries stay fast to use (no re-hash) and hard-linked ones are re-hashed, not refused.
    CHECK(cache.find(*w.sha256));
    opt.link_mode = LinkMode::hardlink;
    Venv c("ctime-3");
    auto r3 = apply(c.target, {w}, opt);
    REQUIRE_MESSAGE(r3, (r3 ? "" : r3.error().render()));
    UnpackedCache::FindStats fs3;
    CHECK(cache.find(*w.sha256, 1, &fs3));
    // The links' change times were recorded after linking: the next use hashes nothing again...
    Venv d("ctime-4");
    auto r4 = apply(d.target, {w}, opt);
    REQUIRE_MESSAGE(r4, (r4 ? "" : r4.error().render()));
    CHECK(r4->cache_hits == 1);
    UnpackedCache::FindStats fs4;
    REQUIRE(cache.find(*w.sha256, 1, &fs4));
    CHECK(fs4.rehashed == 0);
    // ...and an edit through an environment's hard link (the cache's inode), size and mtime kept,
    // still makes the entry unused: the next install unpacks the archive again.
    const auto linked = d.target.purelib / "demo" / "__init__.py";
    struct stat st4;
    REQUIRE(::stat(linked.c_str(), &st4) == 0);
    REQUIRE(st4.st_nlink > 1);
    edit_keeping_size_and_mtime(linked, 0, 'Y');
    unpacked_again("ctime-5");
  }

  TEST_CASE("security 12: a large cached file is re-checked in pieces, healed once known good, and an edit in a piece is seen") {
    Venv a("pieces");
    std::string big(70u << 20, 'a'); // three 32 MiB pieces, incompressible (the zip-bomb ratio check)
    std::uint64_t x = 88172645463325252ull;
    for (auto& c : big) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(0x21 + x % 94); // printable: the wheel factory passes members as JSON text
    }
    const auto w = hashed(test::make_wheel(simple("demo", "1.0", {{"demo/big.bin", big}}), a.wheels()));
    TransactionOptions opt;
    opt.unpacked_cache = a.root / "cache";
    opt.link_mode = LinkMode::hardlink;
    auto r = apply(a.target, {w}, opt);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    const auto manifest = util::read_file(opt.unpacked_cache / *w.sha256 / "manifest.json").value();
    CHECK(manifest.find(util::sha256_hex(big.substr(0, 32u << 20))) != std::string::npos);
    UnpackedCache cache(opt.unpacked_cache);
    // Deleting the environment's hard links moves the change time of the cache's inodes: the next
    // lookup hashes them again (in pieces), records them as known good, and the one after hashes nothing.
    fs::remove_all(a.target.purelib / "demo");
    UnpackedCache::FindStats s1, s2;
    REQUIRE(cache.find(*w.sha256, 4, &s1));
    CHECK(s1.rehashed >= 1);
    auto again = cache.find_many({*w.sha256, std::string(64, '0')}, 4, &s2);
    REQUIRE(again.size() == 2);
    CHECK(again[0].has_value());
    CHECK_FALSE(again[1].has_value());
    CHECK(s2.rehashed == 0);
    // One byte of the last piece rewritten, size and mtime kept: the entry is not used.
    const auto cached = opt.unpacked_cache / *w.sha256 / "tree" / "demo" / "big.bin";
    edit_keeping_size_and_mtime(cached, 65 << 20, '#');
    CHECK_FALSE(cache.find(*w.sha256, 4));
  }

} // TEST_SUITE

} // namespace installer_security_test
