// The one coverage model (wheel/coverage.hpp): per-container classes, file and package verdicts,
// the kernel profile's JSON round trip, and the evidence store; then the same on real objects built
// with nvcc: uniform, arch-specialised (one module per arch), embedded-only and relabelled.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/wheel/nvcc_fixtures.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_evidence.hpp"

namespace wheel_coverage_test {

using namespace envfix;
using namespace envfix::test;
using wheel::ContainerGroup;
using wheel::KernelProfile;
using wheel::Verdict;
namespace fs = std::filesystem;

namespace {

specs::ComputeCapability cc(const char* s) { return specs::ComputeCapability::parse(s).value(); }

ContainerGroup group(std::initializer_list<const char*> archs, std::uint64_t n, bool registered = true) {
  ContainerGroup g;
  for (const char* a : archs) g.archs.push_back(specs::GpuArch::parse(a).value());
  std::sort(g.archs.begin(), g.archs.end());
  g.registered = registered;
  g.count = n;
  return g;
}

KernelProfile profile(std::vector<ContainerGroup> groups) {
  KernelProfile p;
  p.groups = std::move(groups);
  std::sort(p.groups.begin(), p.groups.end());
  return p;
}

} // namespace

TEST_SUITE("unit/wheel/coverage") {
  TEST_CASE("coverage: each container is classified for the device") {
    // A vendor-like library: uniform modules, modules for newer archs only, for an older arch only,
    // PTX that JITs, and an arch-specific neighbour.
    auto p = profile({group({"sm_80", "sm_90", "sm_100"}, 10), group({"sm_100", "sm_120"}, 4), group({"sm_75"}, 2),
                      group({"compute_80"}, 3), group({"sm_89", "sm_100a"}, 1)});
    auto c = wheel::coverage(p, cc("9.0"));
    CHECK(c.registered.sass == 10);
    CHECK(c.registered.ptx == 3);
    CHECK(c.registered.newer_only == 4);
    CHECK(c.registered.older_only == 2);
    CHECK(c.registered.other == 1);
    CHECK(c.total() == 20);
    CHECK(c.verdict == Verdict::partial);
    CHECK(c.via() == "mixed");
    // On 7.0 nothing runs: sm_75 is newer than 7.0, compute_80 too.
    auto c70 = wheel::coverage(p, cc("7.0"));
    CHECK(c70.verdict == Verdict::none);
    CHECK(c70.registered.newer_only == 20);
    // On 12.0 the sm_100/sm_120 modules and the PTX run, the sm_80/90/100 modules do not.
    auto c120 = wheel::coverage(p, cc("12.0"));
    CHECK(c120.registered.sass == 4);
    CHECK(c120.registered.ptx == 3);
    CHECK(c120.verdict == Verdict::partial);
  }

  TEST_CASE("coverage: verdicts count embedded containers too") {
    // cuFFT's shape: one registered container for sm_75 only, the kernels in fatbins embedded in .ldata.
    auto cufft =
        profile({group({"sm_75"}, 1), group({"sm_75"}, 5, false), group({"sm_90"}, 5, false), group({"sm_120"}, 5, false)});
    auto c = wheel::coverage(cufft, cc("9.0"));
    CHECK(c.registered.runnable() == 0);
    CHECK(c.embedded.runnable() == 5);
    CHECK(c.verdict == Verdict::partial);
    CHECK(wheel::coverage(cufft, cc("7.5")).verdict == Verdict::partial);
    CHECK(wheel::coverage(cufft, cc("8.0")).verdict == Verdict::none); // sm_75 SASS does not run on 8.0
    auto uniform = profile({group({"sm_75", "sm_80", "sm_90"}, 444)});
    CHECK(wheel::coverage(uniform, cc("9.0")).verdict == Verdict::full);
    CHECK(wheel::coverage(uniform, cc("8.6")).verdict == Verdict::full);
    CHECK(wheel::coverage(uniform, cc("12.0")).verdict == Verdict::none);
    CHECK(wheel::coverage(uniform, cc("12.0")).registered.older_only == 444);
    CHECK(wheel::coverage(KernelProfile{}, cc("9.0")).verdict == Verdict::none);
  }

  TEST_CASE("coverage: a package is none only when no file runs") {
    // libcufftw alone (one sm_75 kernel) is none on 9.0; its package (with libcufft) is partial.
    std::vector<wheel::ProfiledFile> cufft = {
        {"nvidia/cufft/lib/libcufft.so.12", profile({group({"sm_75"}, 1), group({"sm_90"}, 5, false)})},
        {"nvidia/cufft/lib/libcufftw.so.12", profile({group({"sm_75"}, 1)})},
        {"nvidia/cufft/__init__.py", KernelProfile{}}};
    auto pc = wheel::package_coverage(cufft, cc("9.0"));
    CHECK(pc.files == 2);
    CHECK(pc.verdict == Verdict::partial);
    CHECK(pc.none_files == std::vector<std::string>{"nvidia/cufft/lib/libcufftw.so.12"});
    CHECK(pc.partial_files == std::vector<std::string>{"nvidia/cufft/lib/libcufft.so.12: 5/6"});
    CHECK(wheel::package_coverage(cufft, cc("7.5")).verdict == Verdict::partial);
    CHECK(wheel::package_coverage(cufft, cc("8.6")).verdict == Verdict::none);
    // torch 2.11 cu130's shape on a T4: libtorch_cuda_linalg.so starts at sm_80.
    std::vector<wheel::ProfiledFile> torch = {{"torch/lib/libtorch_cuda.so", profile({group({"sm_75", "sm_80", "sm_90"}, 444)})},
                                              {"torch/lib/libtorch_cuda_linalg.so", profile({group({"sm_80", "sm_90"}, 99)})}};
    auto t75 = wheel::package_coverage(torch, cc("7.5"));
    CHECK(t75.verdict == Verdict::partial);
    CHECK(t75.runnable() == 444);
    CHECK(t75.total() == 543);
    CHECK(t75.none_files == std::vector<std::string>{"torch/lib/libtorch_cuda_linalg.so"});
    CHECK(wheel::package_coverage(torch, cc("9.0")).verdict == Verdict::full);
    CHECK(wheel::package_coverage({}, cc("9.0")).has_gpu_code() == false);
    // PTX only: runnable, flagged as JIT-only.
    auto ptx = wheel::package_coverage({{"a.so", profile({group({"compute_80"}, 3)})}}, cc("9.0"));
    CHECK(ptx.verdict == Verdict::full);
    CHECK(ptx.jit_only);
  }

  TEST_CASE("coverage: one reading for frameworks, extensions and the libraries a framework requires") {
    using wheel::CodeRole;
    using wheel::Reading;
    // cuSPARSELt's shape: one module per arch, most of them for other archs than the device's.
    std::vector<wheel::ProfiledFile> lt = {{"nvidia/cusparselt/lib/libcusparseLt.so.0",
                                            profile({group({"sm_80"}, 400), group({"sm_90"}, 116), group({"sm_100"}, 478)})}};
    auto pc = wheel::package_coverage(lt, cc("9.0"));
    REQUIRE(pc.verdict == Verdict::partial);
    CHECK(wheel::read_coverage(pc, CodeRole::library) == Reading::specialised);
    CHECK(wheel::read_coverage(pc, CodeRole::framework) == Reading::gap);
    CHECK(wheel::read_coverage(pc, CodeRole::extension) == Reading::gap);
    auto none = wheel::package_coverage(lt, cc("12.0"));
    for (auto role : {CodeRole::library, CodeRole::framework, CodeRole::extension})
      CHECK(wheel::read_coverage(none, role) == Reading::not_covered);
    auto ptx = wheel::package_coverage({{"a.so", profile({group({"compute_80"}, 3)})}}, cc("9.0"));
    CHECK(wheel::read_coverage(ptx, CodeRole::extension) == Reading::jit_only);
    CHECK(wheel::read_coverage(ptx, CodeRole::library) == Reading::covered);
    CHECK(wheel::read_coverage(wheel::package_coverage({}, cc("9.0")), CodeRole::framework) == Reading::covered);
  }

  TEST_CASE("coverage: the one ZSTD rule, a driver for CUDA >= 12.4 or an unknown one loads it") {
    auto zstd = profile({group({"sm_90"}, 3)});
    zstd.zstd = true;
    const std::vector<wheel::ProfiledFile> files = {{"lib/a.so", profile({group({"sm_90"}, 2)})}, {"lib/b.so", zstd}};
    const auto cuda = [](int major, int minor) { return std::optional(specs::CudaVersion{major, minor}); };
    CHECK(wheel::zstd_unloadable(files, cuda(12, 2)));
    CHECK_FALSE(wheel::zstd_unloadable(files, cuda(12, 4)));
    CHECK_FALSE(wheel::zstd_unloadable(files, cuda(13, 0)));
    CHECK_FALSE(wheel::zstd_unloadable(files, std::nullopt)); // no driver known: nothing to say
    CHECK_FALSE(wheel::zstd_unloadable({files.front()}, cuda(11, 8)));
  }

  TEST_CASE("kernel profile: JSON round trip, hostile JSON refused") {
    auto p = profile({group({"sm_80", "compute_90", "sm_100a"}, 7), group({"sm_75"}, 2, false)});
    p.zstd = true;
    auto back = KernelProfile::from_json(nlohmann::json::parse(p.to_json().dump()));
    REQUIRE(back);
    CHECK(*back == p);
    CHECK(p.sass() == std::vector<std::string>{"sm_75", "sm_80", "sm_100a"});
    CHECK(p.ptx() == std::vector<std::string>{"compute_90"});
    CHECK_FALSE(KernelProfile::from_json(nlohmann::json::parse(R"({"groups": [{"archs": ["sm_9x"], "count": 1}]})")));
    CHECK_FALSE(KernelProfile::from_json(nlohmann::json::parse(R"({"groups": [{"archs": ["sm_90"], "count": -1}]})")));
    CHECK_FALSE(KernelProfile::from_json(nlohmann::json::parse(R"([1, 2])")));
  }

  TEST_CASE("evidence store: by file hash and by build, named by hashes only") {
    auto dir = util::make_temp_dir(fs::temp_directory_path(), "envfix-evidence-").value();
    wheel::EvidenceStore store(dir, "this user's secret");
    auto p = profile({group({"sm_89"}, 548)});
    CHECK_FALSE(store.file("sha256=abc"));
    REQUIRE(store.put_file("sha256=abc", p));
    REQUIRE(store.file("sha256=abc"));
    CHECK(*store.file("sha256=abc") == p);
    CHECK_FALSE(store.file("sha256=abd"));
    // A key with path characters in it stays inside the store; a build is found by its file's sha256.
    wheel::BuildKey key{"torch", "2.11.0+cu130", "../../cu130", "manylinux_2_28_x86_64"};
    const std::string sha(64, 'a'), other(64, 'b');
    REQUIRE(store.put_build({key, "downloaded", {{"torch/lib/libtorch_cuda.so", p}}, sha}));
    auto e = store.build(sha);
    REQUIRE(e);
    CHECK(e->files.size() == 1);
    CHECK(e->files[0].profile == p);
    CHECK_FALSE(store.build(other));
    CHECK_FALSE(store.build("../../etc/passwd"));
    REQUIRE(store.put_build({key, "installed", {{"torch/lib/libtorch_cuda.so", p}}})); // no file: by key, listed only
    CHECK(store.builds().size() == 2);
    for (const auto& f : fs::recursive_directory_iterator(dir)) CHECK(f.path().string().starts_with(dir.string()));
    // A record copied under another file's name is not that file's.
    fs::copy_file(dir / "builds" / (sha + ".json"), dir / "builds" / (other + ".json"));
    CHECK_FALSE(store.build(other));
    CHECK(store.builds().size() == 2);
    // A damaged entry is ignored, not trusted.
    for (const auto& f : fs::directory_iterator(dir / "builds")) REQUIRE(util::write_file_atomic(f.path(), "{\"key\": 1}"));
    CHECK_FALSE(store.build(sha));
    fs::remove_all(dir);
  }

  // issue 60, item 5: a file record decides a file's kernels without the file being read, so only
  // one signed with this user's secret does. Fails when a planted record (a CI cache restored from
  // elsewhere, a same-user tool writing into the cache) or one signed with another secret decides.
  TEST_CASE("evidence store: a file record decides only when signed with this user's secret") {
    auto dir = util::make_temp_dir(fs::temp_directory_path(), "envfix-evidence-mac-").value();
    const wheel::EvidenceStore mine(dir, "this user's secret"), theirs(dir, "another machine's secret"), none(dir, "");
    auto sm80 = profile({group({"sm_80"}, 40)}), sm90 = profile({group({"sm_90"}, 40)});
    REQUIRE(mine.put_file("sha256=real", sm80));
    REQUIRE(mine.file("sha256=real"));
    CHECK(*mine.file("sha256=real") == sm80);
    CHECK_FALSE(theirs.file("sha256=real")); // signed elsewhere: a hint, read again
    CHECK_FALSE(none.file("sha256=real"));   // no secret: nothing decides
    // Planted: the sm_80 file's record rewritten to claim sm_90, with the MAC of the old content kept.
    const auto path = dir / "files" / (util::sha256_hex("sha256=real") + ".json");
    auto j = nlohmann::json::parse(util::read_file(path).value());
    REQUIRE(j.contains("mac"));
    j["profile"] = sm90.to_json();
    REQUIRE(util::write_file_atomic(path, j.dump()));
    CHECK_FALSE(mine.file("sha256=real"));
    j.erase("mac"); // or with none at all, as an older envfix or a hand wrote it
    REQUIRE(util::write_file_atomic(path, j.dump()));
    CHECK(mine.has_file("sha256=real"));
    CHECK_FALSE(mine.file("sha256=real"));
    // The same record moved under another file's hash is not that file's either.
    REQUIRE(mine.put_file("sha256=real", sm80));
    fs::copy_file(path, dir / "files" / (util::sha256_hex("sha256=other") + ".json"));
    CHECK_FALSE(mine.file("sha256=other"));
    // The reader then reads the bytes and replaces the record with its own, signed.
    const fs::path so = "/bin/true"; // an ELF with no GPU code
    REQUIRE(mine.put_file("sha256=lib", sm90));
    j = nlohmann::json::parse(util::read_file(dir / "files" / (util::sha256_hex("sha256=lib") + ".json")).value());
    j["mac"] = std::string(64, '0');
    REQUIRE(util::write_file_atomic(dir / "files" / (util::sha256_hex("sha256=lib") + ".json"), j.dump()));
    auto read = wheel::read_profiles({{so.string(), "sha256=lib"}}, &mine, 1);
    REQUIRE(read.size() == 1);
    CHECK_FALSE(read[0].from_store);
    REQUIRE(read[0].profile);
    CHECK(read[0].profile->empty()); // what the bytes hold, not what the record claimed
    REQUIRE(mine.file("sha256=lib"));
    CHECK(mine.file("sha256=lib")->empty());
    fs::remove_all(dir);
  }

  // issue 34: what a real run saw, by build, RECORD and device; a later run replaces it, a copy under
  // another name or a damaged entry is not read, and contradicts() compares it with the rule's verdict.
  TEST_CASE("evidence store: run observations by build, RECORD and device") {
    auto dir = util::make_temp_dir(fs::temp_directory_path(), "envfix-evidence-obs-").value();
    wheel::EvidenceStore store(dir, "this user's secret");
    wheel::BuildKey key{"torch", "2.8.0", "jetpack6.2", "linux_aarch64"};
    const std::string rec(64, 'c'), other(64, 'd');
    auto orin = specs::ComputeCapability::parse("tegra:8.7").value();
    auto a10 = specs::ComputeCapability::parse("8.6").value();
    wheel::RunObservation ran{
        key, rec, orin, "NVIDIA Jetson AGX Orin", true, "step B", "", "2026-12-05T13:00:00Z", "envfix verify"};
    CHECK(store.observations(key, rec).empty());
    REQUIRE(store.put_observation(ran));
    auto on_a10 = ran;
    on_a10.cc = a10;
    REQUIRE(store.put_observation(on_a10));
    auto got = store.observations(key, rec);
    REQUIRE(got.size() == 2);
    CHECK(got[1].cc == orin); // sorted by device: tegra after discrete of the same number
    CHECK(got[1].device == "NVIDIA Jetson AGX Orin");
    CHECK(got[1].by == "envfix verify");
    CHECK(store.observations(key, other).empty()); // another build's files
    auto failed = ran;
    failed.ran = false;
    failed.error = "RuntimeError: CUDA error: no kernel image is available for execution on the device";
    REQUIRE(store.put_observation(failed)); // the same subject: replaces
    got = store.observations(key, rec);
    REQUIRE(got.size() == 2);
    CHECK(!got[1].ran);
    CHECK(got[1].error.find("no kernel image") != std::string::npos);
    CHECK_FALSE(store.put_observation({key, "../../x", orin}));
    CHECK(wheel::contradicts(ran, wheel::Verdict::none));
    CHECK_FALSE(wheel::contradicts(ran, wheel::Verdict::partial));
    CHECK_FALSE(wheel::contradicts(failed, wheel::Verdict::none));
    CHECK(wheel::contradicts(failed, wheel::Verdict::full));
    // A record copied under another name, or damaged, is not read.
    const auto first = fs::directory_iterator(dir / "observations")->path();
    fs::copy_file(first, dir / "observations" / "x.json");
    CHECK(store.observations(key, rec).size() == 2);
    for (const auto& f : fs::directory_iterator(dir / "observations")) REQUIRE(util::write_file_atomic(f.path(), "{\"ran\": 1}"));
    CHECK(store.observations(key, rec).empty());
    fs::remove_all(dir);
  }

  // issue 33 item 4: the store before the file-hash keys (evidence-v1) is migrated, not read as it was.
  TEST_CASE("evidence store: an evidence-v1 store is migrated: file records kept after a check, name-keyed builds dropped") {
    auto cache = util::make_temp_dir(fs::temp_directory_path(), "envfix-evidence-v1-").value();
    const auto v1 = cache / wheel::evidence_v1_dir_name;
    // What the old envfix wrote: files/<sha256 of the RECORD hash>.json, builds/<sha256 of the key>.json.
    wheel::EvidenceStore old_layout(v1, "");
    auto p = profile({group({"sm_90"}, 12)});
    REQUIRE(old_layout.put_file("sha256=good", p));
    REQUIRE(old_layout.put_file("sha256=moved", p));
    fs::rename(v1 / "files" / (util::sha256_hex("sha256=moved") + ".json"), v1 / "files" / (std::string(64, 'c') + ".json"));
    REQUIRE(util::write_file_atomic(v1 / "files" / (util::sha256_hex("sha256=bad") + ".json"),
                                    "{\"hash\": \"sha256=bad\", \"profile\": 7}"));
    REQUIRE(util::create_directories(v1 / "builds"));
    REQUIRE(util::write_file_atomic(
        v1 / "builds" / (util::sha256_hex("torch\n2.11.0+cu130\ncu130\nmanylinux_2_28_x86_64") + ".json"), "{\"key\": {}}"));
    // v2 already knows one of them with another profile: the import never overwrites it.
    wheel::EvidenceStore v2(cache / wheel::evidence_dir_name, "this user's secret");
    auto newer = profile({group({"sm_120"}, 3)});
    REQUIRE(v2.put_file("sha256=other", newer));
    REQUIRE(wheel::EvidenceStore(v1, "").put_file("sha256=other", p));

    auto m = wheel::migrate_evidence_v1(cache);
    REQUIRE(m);
    REQUIRE(m->has_value());
    CHECK((*m)->files_kept == 2);    // good, other
    CHECK((*m)->files_dropped == 2); // moved (not under its own name), bad (no profile)
    CHECK((*m)->builds_dropped == 1);
    CHECK((*m)->to_string().find("1 build record keyed by name and version dropped") != std::string::npos);
    // Imported as hints only (issue 60, item 5): unsigned, so the file is read before anything is decided.
    CHECK(v2.has_file("sha256=good"));
    CHECK_FALSE(v2.file("sha256=good"));
    CHECK(*v2.file("sha256=other") == newer);
    CHECK_FALSE(v2.has_file("sha256=moved"));
    CHECK_FALSE(v2.file("sha256=bad"));
    CHECK(v2.builds().empty());
    CHECK_FALSE(fs::exists(v1));
    // Once: no v1 store, nothing to say.
    auto again = wheel::migrate_evidence_v1(cache);
    REQUIRE(again);
    CHECK_FALSE(again->has_value());
    fs::remove_all(cache);
  }
} // TEST_SUITE unit

// ---- Real objects built with nvcc ----
namespace {

// Two translation units compiled for different archs, linked into one .so: the shape of a vendor
// library's arch-specialised modules.
fs::path specialised_so() {
  auto k1 = build("spec_k1.o", {nvcc.string(), "-c", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90", "-o",
                                "spec_k1.o", (cuda_src / "k1.cu").string()});
  auto k2 = build("spec_k2.o", {nvcc.string(), "-c", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80", "-o",
                                "spec_k2.o", (cuda_src / "k2.cu").string()});
  return build("specialised.so", {nvcc.string(), "-shared", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                                  "arch=compute_90,code=sm_90", "-o", "specialised.so", k1.string(), k2.string()});
}

// A fatbin embedded as data in `.ldata` of a host-only shared object (cuFFT's shape): the runtime
// never registers it; the library loads it itself.
fs::path embedded_so() {
  auto fatbin = build("embed.fatbin", {nvcc.string(), "-fatbin", "-gencode", "arch=compute_90,code=sm_90", "-gencode",
                                       "arch=compute_120,code=sm_120", "-o", "embed.fatbin", (cuda_src / "k1.cu").string()});
  fs::path s = fixture_dir / "embed.s";
  {
    std::ofstream out(s);
    out << ".section .ldata,\"aw\"\n.balign 8\n.globl envfix_embedded\nenvfix_embedded:\n.incbin \"" << fatbin.string() << "\"\n";
  }
  return build("embedded.so", {"gcc", "-shared", "-o", "embedded.so", s.string()});
}

// A copy of `src` with every sm_90 entry relabelled as sm_89 (tests/support/relabel_fatbin.py).
fs::path relabelled(const fs::path& src, const std::string& out) {
  fs::path dst = fixture_dir / out;
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
  auto r = util::run_process(
      {"python3", std::string(ENVFIX_SOURCE_DIR) + "/tests/support/relabel_fatbin.py", "90", "89", dst.string()});
  REQUIRE(r);
  INFO(r->out, r->err);
  REQUIRE(r->ok());
  return dst;
}

} // namespace

TEST_SUITE("integration/wheel/coverage") {
  TEST_CASE("nvcc coverage: uniform") {
    auto ks = read(so("cov_uniform.so", {"-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90"}, {},
                      {"k1.cu", "k2.cu"}));
    CHECK(wheel::coverage(ks, cc("9.0")).verdict == Verdict::full);
    CHECK(wheel::coverage(ks, cc("8.6")).verdict == Verdict::full);
    CHECK(wheel::coverage(ks, cc("7.5")).verdict == Verdict::none);
    CHECK(wheel::coverage(ks, cc("7.5")).registered.newer_only == wheel::coverage(ks, cc("7.5")).total());
    CHECK(wheel::coverage(ks, cc("12.0")).verdict == Verdict::none);
    CHECK(wheel::coverage(ks, cc("12.0")).registered.older_only == wheel::coverage(ks, cc("12.0")).total());
  }

  TEST_CASE("nvcc coverage: arch-specialised modules are partial, not none") {
    auto ks = read(specialised_so());
    auto c90 = wheel::coverage(ks, cc("9.0"));
    INFO("sass ", ks.sass().size(), " containers ", ks.containers.size());
    CHECK(c90.verdict == Verdict::partial);
    CHECK(c90.registered.sass >= 1);
    CHECK(c90.registered.older_only >= 1); // k2's sm_80-only module
    auto c80 = wheel::coverage(ks, cc("8.0"));
    CHECK(c80.verdict == Verdict::partial);
    CHECK(c80.registered.newer_only >= 1); // k1's sm_90-only module
    CHECK(wheel::coverage(ks, cc("7.5")).verdict == Verdict::none);
  }

  TEST_CASE("nvcc coverage: embedded-only fatbins count") {
    auto ks = read(embedded_so());
    REQUIRE_FALSE(ks.containers.empty());
    for (const auto& c : ks.containers) CHECK_FALSE(c.registered());
    auto c90 = wheel::coverage(ks, cc("9.0"));
    CHECK(c90.registered.total() == 0);
    CHECK(c90.embedded.runnable() == c90.embedded.total());
    CHECK(c90.verdict == Verdict::full);
    CHECK(wheel::coverage(ks, cc("12.0")).verdict == Verdict::full);
    CHECK(wheel::coverage(ks, cc("8.0")).verdict == Verdict::none);
    CHECK(wheel::coverage(ks, cc("10.0")).verdict == Verdict::none);
  }

  TEST_CASE("nvcc coverage: relabelled sm_90 → sm_89 loses the H200") {
    auto src = so("cov_relabel_src.so", {"-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_120,code=sm_120"});
    CHECK(wheel::coverage(read(src), cc("9.0")).verdict == Verdict::full);
    auto ks = read(relabelled(src, "cov_relabelled.so"));
    CHECK(ks.sass() == std::vector<std::string>{"sm_89", "sm_120"});
    auto c = wheel::coverage(ks, cc("9.0"));
    CHECK(c.verdict == Verdict::none);
    CHECK(c.registered.other == c.total()); // sm_89 is older, sm_120 newer: neither side alone
    CHECK(wheel::coverage(ks, cc("8.9")).verdict == Verdict::full);
    CHECK(wheel::coverage(ks, cc("12.0")).verdict == Verdict::full);
  }
} // TEST_SUITE integration

} // namespace wheel_coverage_test
