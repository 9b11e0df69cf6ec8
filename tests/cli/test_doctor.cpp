// `envfix doctor` end to end: the real binary against real venvs (python3 -m venv) holding
// hand-made dist-info folders, a fake `torch` module that fails the repro's steps like the real
// one does, nvcc-built shared objects with chosen archs, and planned GPUs (--gpu/--driver).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"
#include "tests/support/envfix_bin.hpp"
#include "tests/support/golden.hpp"

namespace cli_doctor_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using envfix::testing::envfix_bin;

void write(const fs::path& p, const std::string& text, unsigned mode = 0644) {
  fs::create_directories(p.parent_path());
  REQUIRE(util::write_file_atomic(p, text, mode));
}

constexpr const char* kFakeTorch = R"PY(# A stand-in for torch: behaves like the real one for the doctor's smoke test.
import os
_mode = open(os.path.join(os.path.dirname(__file__), "MODE")).read().strip()
__version__ = "fake"
class _Cuda:
    @staticmethod
    def is_available():
        return _mode != "fail_a"
    @staticmethod
    def synchronize():
        pass
    @staticmethod
    def get_device_name(i=0):
        return "Fake GPU"
cuda = _Cuda()
class _T:
    def __matmul__(self, other):
        if os.environ.get("CUDA_LAUNCH_BLOCKING") != "1":
            raise RuntimeError("repro ran without CUDA_LAUNCH_BLOCKING=1")
        if _mode == "fail_b":
            raise RuntimeError("CUDA error: no kernel image is available for execution on the device\n"
                               "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
                               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1")
        if _mode == "hang_b":
            import time
            time.sleep(60)
        return self
    def sum(self):
        return self
    def item(self):
        return 1.0
    def to(self, device):
        # A host-to-device copy launches no kernel; "noimage_a" stands for a step A that did.
        if _mode == "noimage_a":
            raise RuntimeError("CUDA error: no kernel image is available for execution on the device")
        return self
def ones(*a, **k):
    return _T()
randn = ones
tensor = ones
)PY";

// A venv with hand-made dist-info folders.
class FakeEnv {
public:
  FakeEnv() {
    m_root = util::make_temp_dir({}, "envfix-doctor-test").value();
    m_venv = m_root / "venv";
    auto made =
        util::run_process({"python3", "-m", "venv", "--without-pip", m_venv.string()}, {.timeout = std::chrono::seconds(600)});
    REQUIRE_MESSAGE(made, (made ? "" : made.error().render()));
    auto& r = *made;
    REQUIRE_MESSAGE(r.ok(), r.err);
    for (auto& e : fs::directory_iterator(m_venv / "lib"))
      if (fs::exists(e.path() / "site-packages")) m_site = e.path() / "site-packages";
    REQUIRE(!m_site.empty());
    fs::create_directories(m_root / "bin");
    fs::create_directories(m_root / "sysfs");
  }
  FakeEnv(const FakeEnv&) = delete;
  FakeEnv& operator=(const FakeEnv&) = delete;
  ~FakeEnv() {
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }
  const fs::path& root() const { return m_root; }
  const fs::path& venv() const { return m_venv; }
  const fs::path& site() const { return m_site; }
  fs::path python() const { return m_venv / "bin/python"; }

  // A dist-info folder; `files` are created in site-packages and listed in RECORD.
  fs::path dist(const std::string& name, const std::string& version, const std::vector<std::string>& requires_dist = {},
                bool record = true, const std::string& installer = "pip", const std::vector<std::string>& files = {}) {
    std::string folder = name;
    for (auto& c : folder)
      if (c == '-') c = '_';
    auto di = m_site / (folder + "-" + version + ".dist-info");
    std::string meta = "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n";
    for (auto& r : requires_dist) meta += "Requires-Dist: " + r + "\n";
    write(di / "METADATA", meta);
    write(di / "INSTALLER", installer + "\n");
    if (record) {
      std::string rec;
      for (auto& f : files) rec += f + ",,\n";
      rec += di.filename().string() + "/METADATA,,\n" + di.filename().string() + "/RECORD,,\n";
      write(di / "RECORD", rec);
    }
    return di;
  }
  void fake_torch(const std::string& mode) {
    write(m_site / "torch/__init__.py", kFakeTorch);
    write(m_site / "torch/MODE", mode + "\n");
  }

  // Runs envfix with a controlled environment: no NVML, an empty /proc+/sys, PATH = venv/bin + root/bin.
  util::SubprocessResult run(std::vector<std::string> args, bool json_output = true,
                             const std::map<std::string, std::string>& extra_env = {},
                             const std::string& command = "doctor") const {
    std::vector<std::string> argv = {envfix_bin().string(), command, "--python", python().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    if (json_output) argv.insert(argv.end(), {"--format", "json"});
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(600);
    o.set_env = {{"ENVFIX_NO_NVML", "1"},
                 {"ENVFIX_SYSFS_ROOT", (m_root / "sysfs").string()},
                 {"ENVFIX_CACHE_DIR", (m_root / "cache").string()},
                 {"PATH", (m_venv / "bin").string() + ":" + (m_root / "bin").string()},
                 {"NO_COLOR", "1"}};
    for (const auto& [k, v] : extra_env) o.set_env[k] = v;
    o.unset_env = {"VIRTUAL_ENV",   "CONDA_PREFIX", "CUDA_VISIBLE_DEVICES",   "ENVFIX_GPU", "ENVFIX_DRIVER", "ENVFIX_MATRICES",
                   "ENVFIX_PYTHON", "container",    "KUBERNETES_SERVICE_HOST"};
    // The language of the report (i18n/): English unless a test sets one of these.
    for (const char* k : {"CUDA_HOME", "CUDA_PATH", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"})
      if (!extra_env.contains(k)) o.unset_env.emplace_back(k);
    return util::run_process(argv, o).value();
  }

private:
  fs::path m_root, m_venv, m_site;
};

json parse(const util::SubprocessResult& r) {
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  REQUIRE(!r.out.empty());
  return json::parse(r.out);
}

std::set<std::string> codes(const json& j) {
  std::set<std::string> out;
  for (auto& f : j["findings"]) out.insert(f["code"].get<std::string>());
  return out;
}

const json* finding(const json& j, const std::string& code) {
  for (auto& f : j["findings"])
    if (f["code"] == code) return &f;
  return nullptr;
}

bool have_nvcc() { return fs::exists("/usr/local/cuda/bin/nvcc"); }

} // namespace

TEST_SUITE("cli/cli/doctor") {

  TEST_CASE("doctor: torch +cpu with torchvision +cu124 on a planned sm_120 host") {
    FakeEnv env;
    env.dist("torch", "2.6.0+cpu", {"filelock"});
    env.dist("torchvision", "0.21.0+cu124", {"torch==2.6.0"});
    auto r = env.run({"--gpu", "sm_120", "--driver", "570.86.10", "--no-repro"});
    CHECK(r.exit_code == 1);
    auto j = parse(r);
    CHECK(j["verdict"] == "broken");
    auto c = codes(j);
    CHECK(c.count("cpu-build-on-gpu-host"));
    CHECK(c.count("mixed-variants"));
    CHECK(!c.count("duplicate-dist"));
    CHECK(!c.count("missing-record"));
    REQUIRE(j["gpus"].size() == 1);
    CHECK(j["gpus"][0]["arch"] == "sm_120");
    CHECK(j["driver"]["version"] == "570.86.10");
    CHECK(j["driver"]["cuda"] == "12.8"); // derived from the matrices' driver table
    CHECK(j["python"]["env"] == "venv");
    CHECK(j["python"]["path"] == env.python().string());
    CHECK(j["python"]["tag"].get<std::string>().starts_with("cp3"));
    REQUIRE(j["packages"].size() == 2);
    CHECK(j["packages"][0]["name"] == "torch");
    CHECK(j["packages"][0]["variant"] == "cpu");
    CHECK(j["packages"][1]["variant"] == "cu124");
    CHECK(j["packages"][1]["installer"] == "pip");
    CHECK(j["repro"]["step_a"] == "skipped");
    CHECK(j["fix"].get<std::string>().starts_with("envfix apply torch torchvision --python "));
    CHECK(j["fix"].get<std::string>().find("--gpu sm_120") != std::string::npos);
    // The same in text form: sections, findings, verdict and fix line.
    auto t = env.run({"--gpu", "sm_120", "--driver", "570.86.10", "--no-repro"}, false);
    CHECK(t.exit_code == 1);
    CHECK(t.out.empty()); // human output goes to stderr
    CHECK(t.err.find("1. Hardware and base environment") != std::string::npos);
    CHECK(t.err.find("cpu-build-on-gpu-host") != std::string::npos);
    CHECK(t.err.find("verdict: broken") != std::string::npos);
    CHECK(t.err.find("fix: envfix apply torch torchvision") != std::string::npos);
    CHECK(t.err.find("\x1b[") == std::string::npos); // NO_COLOR
  }

  TEST_CASE("doctor: duplicate dist-infos, a missing RECORD and a companion version mismatch") {
    FakeEnv env;
    env.dist("torch", "2.7.0+cu128");
    env.dist("torch", "2.6.0+cu128", {}, /*record=*/false);
    env.dist("torchvision", "0.21.0+cu128", {"torch==2.6.0"});
    auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"}));
    CHECK(j["verdict"] == "broken");
    auto c = codes(j);
    CHECK(c.count("duplicate-dist"));
    CHECK(c.count("missing-record"));
    CHECK(c.count("companion-mismatch"));
    CHECK(!c.count("mixed-variants"));
    CHECK(finding(j, "duplicate-dist")->at("severity") == "error");
    CHECK(finding(j, "missing-record")->at("message").get<std::string>().find("2.6.0+cu128") != std::string::npos);
  }

  TEST_CASE("doctor: the repro runs the framework's smoke test in a subprocess and classifies it") {
    FakeEnv env;
    env.dist("torch", "2.7.0+cu128", {}, true, "pip", {"torch/__init__.py"});
    env.dist("torchvision", "0.22.0+cu128", {"torch==2.7.0"});
    env.dist("torchaudio", "2.7.0+cu128", {"torch==2.7.0"});
    SUBCASE("step B: no kernel image → missing arch") {
      env.fake_torch("fail_b");
      auto r = env.run({"--gpu", "sm_120", "--driver", "570.86.10"});
      CHECK(r.exit_code == 1);
      auto j = parse(r);
      CHECK(j["repro"]["step_a"] == "passed");
      CHECK(j["repro"]["step_b"] == "failed");
      CHECK(j["repro"]["error"] == "RuntimeError: CUDA error: no kernel image is available for execution on the device");
      auto c = codes(j);
      CHECK(c.count("repro-failed"));
      // issue 33 item 3: the asynchronous error explained, with the operator and the command for the user's app.
      const auto hint = finding(j, "repro-failed")->at("hint").get<std::string>();
      CHECK(hint.find("ran with CUDA_LAUNCH_BLOCKING=1, so the failing operator is step B's matmul") != std::string::npos);
      CHECK(hint.find("asynchronously") != std::string::npos);
      CHECK(hint.find("envfix verify --app '<your command>' --sync") != std::string::npos);
      CHECK(c.count("arch-not-covered"));
      CHECK(j["verdict"] == "broken");
    }
    SUBCASE("step A fails with planned GPUs: this machine cannot reach them, not a finding against the set") {
      // issue 33 item 9: --gpu plans another machine's GPUs; this one failing to reach a GPU says
      // nothing about that machine (it was a false "driver or visibility" error before).
      env.fake_torch("fail_a");
      auto r = env.run({"--gpu", "sm_90", "--driver", "580.159.04"});
      auto j = parse(r);
      CHECK(j["repro"]["step_a"] == "failed");
      CHECK(j["repro"]["step_b"] == "skipped");
      CHECK(j["repro"]["error"].get<std::string>().find("AssertionError") != std::string::npos);
      CHECK(j["repro"]["note"].get<std::string>().find("not the planned ones (--gpu)") != std::string::npos);
      CHECK(!codes(j).count("repro-failed"));
      REQUIRE(finding(j, "repro-not-here"));
      CHECK(finding(j, "repro-not-here")->at("severity") == "info");
      CHECK(!codes(j).count("arch-not-covered"));
      CHECK(j["verdict"] == "healthy");
      CHECK(r.exit_code == 0);
    }
    SUBCASE("step A raising \"no kernel image\" is the missing-arch class too, not a driver problem") {
      env.fake_torch("noimage_a");
      auto j = parse(env.run({"--gpu", "sm_120", "--driver", "570.86.10"}));
      CHECK(j["repro"]["step_a"] == "failed");
      auto* f = finding(j, "repro-failed");
      REQUIRE(f);
      CHECK(f->at("hint").get<std::string>().find("no kernels for this GPU's architecture") != std::string::npos);
      CHECK(f->at("hint").get<std::string>().find("CUDA_VISIBLE_DEVICES") == std::string::npos);
      CHECK(codes(j).count("arch-not-covered"));
    }
    SUBCASE("a hanging kernel is cut off by the timeout, not waited for") {
      env.fake_torch("hang_b");
      // 10 s, not less: step A must pass on a loaded machine before step B hangs.
      auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--repro-timeout", "10"}));
      CHECK(j["repro"]["step_b"] == "failed");
      CHECK(j["repro"]["error"].get<std::string>().find("timed out") != std::string::npos);
    }
    SUBCASE("both steps pass, matching set, planned H200: healthy, exit 0") {
      env.fake_torch("ok");
      auto r = env.run({"--gpu", "sm_90", "--driver", "580.159.04"});
      auto j = parse(r);
      CHECK(j["repro"]["step_a"] == "passed");
      CHECK(j["repro"]["step_b"] == "passed");
      CHECK(j["findings"].size() == 0);
      CHECK(j["verdict"] == "healthy");
      CHECK(j["fix"].is_null());
      CHECK(r.exit_code == 0);
      // --no-repro skips step 3.
      auto n = parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"}));
      CHECK(n["repro"]["step_a"] == "skipped");
      CHECK(n["repro"]["note"].get<std::string>().find("--no-repro") != std::string::npos);
    }
    SUBCASE("a driver older than the build's CUDA: driver-too-old") {
      env.fake_torch("ok");
      // 535 runs 12.8 builds through minor-version compatibility; a CUDA 11 driver does not.
      CHECK(!codes(parse(env.run({"--gpu", "sm_90", "--driver", "535.54.03", "--no-repro"}))).count("driver-too-old"));
      auto j = parse(env.run({"--gpu", "sm_90", "--driver", "470.57.02", "--no-repro"}));
      auto* f = finding(j, "driver-too-old");
      REQUIRE(f);
      CHECK(f->at("hint").get<std::string>().find("570") != std::string::npos);
    }
  }

  // The pitfall's other half (issue 33, item 6): `python` on PATH is another interpreter than the target.
  TEST_CASE("doctor: python first on PATH is another interpreter than the target") {
    FakeEnv env;
    env.dist("torch", "2.7.0+cu128");
    const auto other = env.root() / "other-venv";
    auto mk = util::run_process({"python3", "-m", "venv", "--without-pip", other.string()});
    REQUIRE((mk && mk->ok()));
    const std::string path_other = (other / "bin").string() + ":" + (env.venv() / "bin").string();
    auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"}, true, {{"PATH", path_other}}));
    auto* f = finding(j, "python-other-interpreter");
    REQUIRE(f);
    CHECK(f->at("message").get<std::string>().find((other / "bin").string()) != std::string::npos);
    CHECK(f->at("hint").get<std::string>().find(env.python().string()) != std::string::npos);
    // The target's own bin first: nothing to say.
    CHECK(!codes(parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"}))).count("python-other-interpreter"));
  }

  TEST_CASE("doctor: pip on PATH belongs to another interpreter") {
    FakeEnv env;
    env.dist("torch", "2.7.0+cu128");
    write(env.root() / "bin/pip", "#!/opt/other-venv/bin/python3\nimport sys\n", 0755);
    auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"}));
    auto* f = finding(j, "pip-other-interpreter");
    REQUIRE(f);
    CHECK(f->at("message").get<std::string>().find("/opt/other-venv") != std::string::npos);
    // pip of the venv itself is fine.
    write(env.venv() / "bin/pip", "#!" + env.python().string() + "\n", 0755);
    auto j2 = parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"}));
    CHECK(!codes(j2).count("pip-other-interpreter"));
    // Advice about the shell: the verdict is the same with or without it.
    CHECK(j.at("verdict") == j2.at("verdict"));
  }

  TEST_CASE("doctor: an externally managed (PEP 668) system interpreter") {
    FakeEnv env;
    // A fake interpreter: the real probe output of the venv, rewritten as a system Python whose
    // stdlib holds EXTERNALLY-MANAGED.
    auto real = env.run({"--no-repro", "--gpu", "sm_90", "--driver", "580.159.04"});
    REQUIRE(!real.out.empty());
    // Capture the probe script's JSON through envfix's own cache file.
    std::string cached;
    for (auto& e : fs::recursive_directory_iterator(env.root() / "cache"))
      if (e.path().extension() == ".json" && e.path().parent_path().filename() == "interpreters")
        cached = util::read_file(e.path()).value();
    REQUIRE(!cached.empty());
    auto pj = json::parse(cached);
    pj["base_prefix"] = pj["prefix"];
    pj["in_venv"] = false;
    pj["externally_managed"] = {{"path", "/usr/lib/python3/EXTERNALLY-MANAGED"},
                                {"message", "To install Python packages system-wide, try apt install\npython3-xyz."}};
    write(env.root() / "probe.json", pj.dump());
    auto fake = env.root() / "sys/bin/python3";
    // envfix runs every interpreter as `python -I -B -c SCRIPT` (util/python.hpp): the script is $4.
    write(fake,
          "#!/bin/sh\ncase \"$4\" in *sysconfig*) cat '" + (env.root() / "probe.json").string() + "';; *) exec '" +
              env.python().string() + "' \"$@\";; esac\n",
          0755);
    std::vector<std::string> args = {"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"};
    util::SubprocessOptions o;
    o.set_env = {{"ENVFIX_NO_NVML", "1"}, {"ENVFIX_CACHE_DIR", (env.root() / "cache2").string()}, {"PATH", "/usr/bin:/bin"}};
    std::vector<std::string> argv = {envfix_bin().string(), "doctor", "--python", fake.string(), "--format", "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = util::run_process(argv, o).value();
    auto j = parse(r);
    CHECK(j["python"]["env"] == "system");
    CHECK(j["python"]["externally_managed"] == true);
    auto* f = finding(j, "externally-managed");
    REQUIRE(f);
    CHECK(f->at("message").get<std::string>().find("apt install") != std::string::npos);
    CHECK(j["fix"].get<std::string>().find("--venv .venv") != std::string::npos);
  }

  TEST_CASE("doctor: kernels read from nvcc-built shared objects listed in RECORD") {
    if (!have_nvcc()) {
      MESSAGE("nvcc not found at /usr/local/cuda/bin/nvcc: kernel coverage check skipped");
      return;
    }
    FakeEnv env;
    auto src = fs::path(ENVFIX_SOURCE_DIR) / "tests/fixtures/cuda";
    auto lib = env.site() / "torch/lib/libfake_cuda.so";
    fs::create_directories(lib.parent_path());
    // Two translation units: k1 with SASS for sm_90, k2 with SASS for sm_80 only.
    auto nvcc = std::string("/usr/local/cuda/bin/nvcc");
    auto o1 = env.root() / "k1.o", o2 = env.root() / "k2.o";
    util::SubprocessOptions so;
    so.timeout = std::chrono::seconds(300);
    auto c1 = util::run_process({nvcc, "-c", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90",
                                 (src / "k1.cu").string(), "-o", o1.string()},
                                so)
                  .value();
    REQUIRE_MESSAGE(c1.ok(), c1.err);
    auto c2 = util::run_process({nvcc, "-c", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80",
                                 (src / "k2.cu").string(), "-o", o2.string()},
                                so)
                  .value();
    REQUIRE_MESSAGE(c2.ok(), c2.err);
    auto l = util::run_process(
                 {nvcc, "-shared", "-gencode", "arch=compute_80,code=sm_80", o1.string(), o2.string(), "-o", lib.string()}, so)
                 .value();
    REQUIRE_MESSAGE(l.ok(), l.err);
    env.dist("torch", "2.7.0+cu128", {}, true, "pip", {"torch/lib/libfake_cuda.so"});
    SUBCASE("sm_90: one of the two modules has code → arch-partly-covered") {
      auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"}));
      auto* f = finding(j, "arch-partly-covered");
      REQUIRE(f);
      CHECK(f->at("severity") == "warning"); // partial: a warning that names the file, not a refusal
      CHECK(j["verdict"] == "degraded");
      CHECK(f->at("message").get<std::string>().find("libfake_cuda.so") != std::string::npos);
      auto& k = j["packages"][0]["kernels"];
      CHECK(k["coverage"]["sm_90"]["verdict"] == "partial");
      CHECK(k["coverage"]["sm_90"]["older_only"].get<int>() >= 1); // k2 is sm_80 only
      REQUIRE(k.is_object());
      CHECK(k["files"] == 1);
      CHECK(k["sass"] == json::array({"sm_80", "sm_90"}));
      CHECK(k["coverage"]["sm_90"]["runnable"].get<int>() < k["coverage"]["sm_90"]["total"].get<int>());
      CHECK(k["coverage"]["sm_90"]["via_sass"].get<int>() >= 1);
      CHECK(k["coverage"]["sm_90"]["via_sass"].get<int>() + k["coverage"]["sm_90"]["via_ptx"].get<int>() ==
            k["coverage"]["sm_90"]["runnable"].get<int>());
    }
    // issue 60, item 5: a file's kernels come from the evidence store only when its record is signed
    // with this user's secret (util::local_secret); fails when a tampered record, or one made under
    // another key, decides in place of the file's bytes.
    SUBCASE("the evidence key: created 0600; a record decides only under it; a tampered one is read again") {
      const auto state = env.root() / "state";
      const std::map<std::string, std::string> with_state{{"XDG_STATE_HOME", state.string()}};
      // The library's RECORD row with its hash and size: the evidence store's key.
      util::Sha256 h;
      h.update(util::read_file(lib).value());
      const auto di = env.site() / "torch-2.7.0+cu128.dist-info";
      write(di / "RECORD", fmt::format("torch/lib/libfake_cuda.so,sha256={},{}\n{}/METADATA,,\n{}/RECORD,,\n",
                                       util::base64url_nopad(h.raw_digest()), fs::file_size(lib), di.filename().string(),
                                       di.filename().string()));
      auto kernels = [&](const std::map<std::string, std::string>& e) {
        auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro"}, true, e));
        return j["packages"][0]["kernels"];
      };
      CHECK(kernels(with_state)["from_evidence"] == 0); // read, and recorded
      const auto key = state / "envfix/evidence-key";
      REQUIRE(fs::is_regular_file(key));
      CHECK(fs::file_size(key) == 32);
      CHECK((fs::status(key).permissions() & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none);
      CHECK(kernels(with_state)["from_evidence"] == 1); // the signed record decides
      // Another key (a cache restored from another machine, or ENVFIX_EVIDENCE_KEY): read again.
      auto other = with_state;
      other["ENVFIX_EVIDENCE_KEY"] = "a CI secret";
      CHECK(kernels(other)["from_evidence"] == 0);
      CHECK(kernels(other)["from_evidence"] == 1);
      // A key file others may read is no secret: not used, and the run without one leaves the records
      // as they are (the CI key's still decides under it).
      fs::permissions(key, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
      CHECK(kernels(with_state)["from_evidence"] == 0);
      CHECK(kernels(other)["from_evidence"] == 1);
      fs::permissions(key, fs::perms::group_read | fs::perms::others_read, fs::perm_options::remove);
      CHECK(kernels(with_state)["from_evidence"] == 0); // the CI key's record: read again, signed with this key
      CHECK(kernels(with_state)["from_evidence"] == 1);
      // The record rewritten to claim sm_90 for every module: not signed for that, so the bytes decide.
      for (const auto& f : fs::directory_iterator(env.root() / "cache/evidence-v2/files")) {
        auto text = util::read_file(f.path()).value();
        for (auto at = text.find("sm_80"); at != std::string::npos; at = text.find("sm_80", at)) text.replace(at, 5, "sm_90");
        REQUIRE(util::write_file_atomic(f.path(), text));
      }
      auto k = kernels(with_state);
      CHECK(k["from_evidence"] == 0);
      CHECK(k["coverage"]["sm_90"]["verdict"] == "partial"); // what the file holds
    }
    SUBCASE("sm_120: no module has code → arch-not-covered from the binaries") {
      auto j = parse(env.run({"--gpu", "sm_120", "--driver", "580.159.04", "--no-repro"}));
      auto* f = finding(j, "arch-not-covered");
      REQUIRE(f);
      bool from_binary = false;
      for (auto& x : j["findings"])
        if (x["code"] == "arch-not-covered" && x["message"].get<std::string>().find("libfake_cuda.so") != std::string::npos)
          from_binary = true;
      CHECK(from_binary);
      CHECK(j["packages"][0]["kernels"]["coverage"]["sm_120"]["runnable"] == 0);
      CHECK(j["packages"][0]["kernels"]["coverage"]["sm_120"]["verdict"] == "none");
      CHECK(j["verdict"] == "broken");
    }
  }

  // A run that contradicts the rule (issue 34: bitsandbytes#1939 saw an sm_80 cubin run on an Orin,
  // which NVIDIA documents as unsupported on Tegra): the repro's real run on the fixture Orin is
  // recorded in the evidence store by build, RECORD and device, said beside the rule's verdict (which
  // stays `none`), read back by a later doctor, replaced by a later run, kept apart from another build
  // of the same version, and never recorded for planned GPUs.
  TEST_CASE("doctor: a real run that contradicts the Tegra rule is recorded and shown beside the verdict") {
    if (!have_nvcc()) {
      MESSAGE("nvcc not found at /usr/local/cuda/bin/nvcc: the contrary-observation check skipped");
      return;
    }
    FakeEnv env;
    const auto lib = env.site() / "torch/lib/libfake_cuda.so";
    fs::create_directories(lib.parent_path());
    util::SubprocessOptions so;
    so.timeout = std::chrono::seconds(300);
    auto c =
        util::run_process({"/usr/local/cuda/bin/nvcc", "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80",
                           (fs::path(ENVFIX_SOURCE_DIR) / "tests/fixtures/cuda/k2.cu").string(), "-o", lib.string()},
                          so)
            .value();
    REQUIRE_MESSAGE(c.ok(), c.err);
    env.dist("torch", "2.7.0+cu128", {}, true, "pip", {"torch/lib/libfake_cuda.so", "torch/__init__.py"});
    const std::map<std::string, std::string> orin{
        {"ENVFIX_SYSFS_ROOT", (fs::path(ENVFIX_FIXTURES_DIR) / "hosts/orin-jp62").string()}};
    auto observations = [&] {
      std::size_t n = 0;
      std::error_code ec;
      for (fs::directory_iterator it(env.root() / "cache/evidence-v2/observations", ec), end; !ec && it != end; it.increment(ec))
        ++n;
      return n;
    };
    auto contrary = [](const json& j) { return finding(j, "observed-contrary"); };
    auto sm87 = [](const json& j) { return j["packages"][0]["kernels"]["coverage"]["sm_87"]["verdict"]; };
    SUBCASE("step B ran on the Orin: recorded, said beside `none`, read back, replaced by a later run") {
      env.fake_torch("ok");
      auto j = parse(env.run({}, true, orin));
      INFO(j.dump());
      CHECK(j["repro"]["step_b"] == "passed");
      CHECK(sm87(j) == "none"); // the rule: SASS of another compute capability does not load on Tegra
      CHECK(finding(j, "arch-not-covered"));
      auto* f = contrary(j);
      REQUIRE(f);
      CHECK(f->at("severity") == "info");
      const auto m = f->at("message").get<std::string>();
      CHECK(m.find("torch 2.7.0+cu128") != std::string::npos);
      CHECK(m.find("tegra:8.7") != std::string::npos);
      CHECK(m.find("envfix doctor's step B") != std::string::npos);
      CHECK(m.find("the verdict keeps to the documented rule") != std::string::npos);
      // Told by the device it was recorded on, never as a run on this host's GPU n (issue 60, 8).
      CHECK(m.find("a run recorded on ") != std::string::npos);
      CHECK(m.find("on GPU 0") == std::string::npos);
      CHECK(j["verdict"] == "broken"); // the observation does not change it
      CHECK(observations() == 1);
      auto again = parse(env.run({"--no-repro"}, true, orin)); // no run now: from the store
      CHECK(contrary(again));
      CHECK(contrary(again)->at("message") == f->at("message"));
      env.fake_torch("fail_b"); // a later run finds no kernel image: it agrees with the rule
      CHECK(!contrary(parse(env.run({}, true, orin))));
      CHECK(!contrary(parse(env.run({"--no-repro"}, true, orin))));
      CHECK(observations() == 1);
    }
    SUBCASE("verify's repro on the Orin is a real run too: doctor says what it saw") {
      env.fake_torch("ok");
      auto v = env.run({"--layers", "repro"}, false, orin, "verify");
      INFO(v.err);
      CHECK(v.exit_code == 0);
      CHECK(observations() == 1);
      auto j = parse(env.run({"--no-repro"}, true, orin));
      auto* f = contrary(j);
      REQUIRE(f);
      CHECK(f->at("message").get<std::string>().find("envfix verify's step B") != std::string::npos);
    }
    SUBCASE("another build of the same version (another RECORD) is not the one observed") {
      env.fake_torch("ok");
      CHECK(contrary(parse(env.run({}, true, orin))));
      env.dist("torch", "2.7.0+cu128", {}, true, "pip", {"torch/lib/libfake_cuda.so", "torch/__init__.py", "torch/MODE"});
      CHECK(!contrary(parse(env.run({"--no-repro"}, true, orin))));
    }
    SUBCASE("planned GPUs are another machine's: a run here says nothing of them") {
      env.fake_torch("ok");
      auto j = parse(env.run({"--gpu", "tegra:8.7", "--driver", "580.159.04"}));
      CHECK(sm87(j) == "none");
      CHECK(!contrary(j));
      CHECK(observations() == 0);
    }
  }

  // Step 1's base environment (docs/environment.md): the framework's CUDA runtime, the local nvcc
  // (a fake one on PATH, and the real CUDA 13 nvcc through $CUDA_HOME), WSL and container roots.
  TEST_CASE("doctor step 1: CUDA runtime, local toolkit, WSL and container, from a fake host root") {
    FakeEnv env;
    env.dist("nvidia-cuda-runtime", "13.0.96");
    SUBCASE("a plain host: no toolkit, no WSL, no container") {
      auto j = parse(env.run({"--no-repro"}));
      CHECK(j["base"]["cuda_runtime"]["version"] == "13.0");
      CHECK(j["base"]["cuda_runtime"]["from"] == "nvidia-cuda-runtime 13.0.96");
      CHECK(j["base"]["toolkit"].is_null());
      CHECK(j["base"]["wsl"].empty());
      CHECK(j["base"]["container"].is_null());
      for (const char* c : {"toolkit-runtime-mismatch", "wsl", "container"}) CHECK_FALSE(codes(j).contains(c));
      auto text = env.run({"--no-repro"}, false);
      CHECK(text.err.find("CUDA     runtime 13.0 (nvidia-cuda-runtime 13.0.96) · toolkit none") != std::string::npos);
    }
    SUBCASE("nvcc 12.4 first on PATH against a CUDA 13 runtime: a warning that names both") {
      write(env.root() / "bin/nvcc",
            "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
            "echo 'Cuda compilation tools, release 12.4, V12.4.131'\n",
            0755);
      auto j = parse(env.run({"--no-repro"}));
      CHECK(j["base"]["toolkit"]["version"] == "12.4");
      CHECK(j["base"]["toolkit"]["from"] == "PATH");
      const json* f = finding(j, "toolkit-runtime-mismatch");
      REQUIRE(f);
      CHECK((*f)["severity"] == "warning");
      CHECK((*f)["message"].get<std::string>().find("nvcc 12.4") != std::string::npos);
      CHECK((*f)["message"].get<std::string>().find("nvidia-cuda-runtime 13.0.96") != std::string::npos);
    }
    if (have_nvcc()) {
      SUBCASE("the real CUDA 13 nvcc through $CUDA_HOME matches the runtime") {
        auto j = parse(env.run({"--no-repro"}, true, {{"CUDA_HOME", "/usr/local/cuda"}}));
        CHECK(j["base"]["toolkit"]["from"] == "$CUDA_HOME");
        CHECK(j["base"]["toolkit"]["version"].get<std::string>().starts_with("13."));
        CHECK_FALSE(codes(j).contains("toolkit-runtime-mismatch"));
      }
    }
    SUBCASE("WSL2: /dev/dxg, /usr/lib/wsl/lib and a Microsoft kernel") {
      write(env.root() / "sysfs/dev/dxg", "");
      fs::create_directories(env.root() / "sysfs/usr/lib/wsl/lib");
      write(env.root() / "sysfs/proc/version", "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@build) #1 SMP\n");
      auto j = parse(env.run({"--no-repro"}));
      CHECK(j["base"]["wsl"].size() == 3);
      const json* f = finding(j, "wsl");
      REQUIRE(f);
      CHECK((*f)["severity"] == "info");
      CHECK((*f)["hint"].get<std::string>().find("never install a Linux NVIDIA driver inside WSL") != std::string::npos);
      CHECK(env.run({"--no-repro"}, false).err.find("platform WSL2") != std::string::npos);
    }
    SUBCASE("a container: /.dockerenv and a Kubernetes cgroup") {
      write(env.root() / "sysfs/.dockerenv", "");
      write(env.root() / "sysfs/proc/1/cgroup", "0::/kubepods/besteffort/pod1234/abcd\n");
      auto j = parse(env.run({"--no-repro"}));
      CHECK(j["base"]["container"]["kind"] == "docker");
      CHECK(j["base"]["container"]["evidence"] == json::array({"/.dockerenv", "/proc/1/cgroup: kubepods"}));
      REQUIRE(finding(j, "container"));
      CHECK_FALSE(codes(j).contains("wsl"));
    }
  }

  // The guide's last fix: back from a nightly to stable once stable covers the GPU.
  TEST_CASE("doctor: a nightly install on a GPU that stable now covers natively says how to go back") {
    FakeEnv env;
    env.dist("torch", "2.12.0.dev20261130+cu130", {"nvidia-cuda-runtime==13.0.96"});
    auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.65.06", "--no-repro", "--no-kernels"}));
    const json* f = finding(j, "stable-covers-gpu");
    REQUIRE(f);
    CHECK((*f)["severity"] == "info");
    CHECK((*f)["message"].get<std::string>().find("2.12.0.dev20261130+cu130 is a nightly build") != std::string::npos);
    CHECK((*f)["message"].get<std::string>().find("native kernels for sm_90") != std::string::npos);
    // The command carries the options that shaped the diagnosis (the interpreter, the planned GPU
    // and driver), so that it runs as printed for the same target.
    const auto hint = (*f)["hint"].get<std::string>();
    CHECK(hint.starts_with("envfix apply --framework torch --channel stable --python "));
    CHECK(hint.find(" --gpu sm_90 --driver 580.65.06") != std::string::npos);
    CHECK(hint.find("--channel", hint.find("--channel") + 1) == std::string::npos); // said once
    // The release it names is a stable one that the matrices list for sm_90.
    auto m = util::run_process({envfix_bin().string(), "matrix", "--framework", "torch", "--gpu", "sm_90", "--format", "json"})
                 .value();
    auto named = (*f)["message"].get<std::string>();
    auto at = named.find("stable release ") + 15;
    CHECK(m.out.find("\"" + named.substr(at, named.find(' ', at) - at) + "\"") != std::string::npos);

    SUBCASE("no stable build for a GPU newer than every release: no note") {
      auto j2 = parse(env.run({"--gpu", "sm_130", "--driver", "580.65.06", "--no-repro", "--no-kernels"}));
      CHECK_FALSE(codes(j2).contains("stable-covers-gpu"));
    }
  }

  TEST_CASE("doctor: a stable install gets no back-to-stable note") {
    FakeEnv env;
    env.dist("torch", "2.11.0+cu130", {"nvidia-cuda-runtime==13.0.96"});
    auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.65.06", "--no-repro", "--no-kernels"}));
    CHECK_FALSE(codes(j).contains("stable-covers-gpu"));
  }

  TEST_CASE("doctor: no GPU, no driver, no framework; exit codes") {
    FakeEnv env;
    auto r = env.run({});
    auto j = parse(r);
    CHECK(j["gpus"].size() == 0);
    CHECK(j["driver"].is_null());
    auto* g = finding(j, "no-gpu");
    REQUIRE(g);
    CHECK(g->at("severity") == "info"); // nothing CUDA installed: not a problem by itself
    CHECK(codes(j).count("framework-not-installed"));
    CHECK(j["repro"]["note"].get<std::string>().find("not installed") != std::string::npos);
    CHECK(r.exit_code == 1);
    // A driver (fake /sys) but no visible GPU: an error with a visibility hint.
    write(env.root() / "sysfs/sys/module/nvidia/version", "580.159.04\n");
    auto j2 = parse(env.run({}));
    CHECK(j2["driver"]["version"] == "580.159.04");
    CHECK(j2["driver"]["source"] == "sysfs");
    CHECK(finding(j2, "no-gpu")->at("severity") == "error");
    CHECK(finding(j2, "no-gpu")->at("hint").get<std::string>().find("CUDA_VISIBLE_DEVICES") != std::string::npos);
    // Could not diagnose: exit 2.
    auto bad = util::run_process({envfix_bin().string(), "doctor", "--python", (env.root() / "nope/python").string()}).value();
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("nope/python") != std::string::npos);
    // A bad --gpu is user input: exit 1 with a hint.
    auto badgpu = env.run({"--gpu", "sm_banana"});
    CHECK(badgpu.exit_code == 1);
    CHECK(badgpu.err.find("sm_banana") != std::string::npos);
  }

  // Issue 18: JAX, TensorFlow and PaddlePaddle. Without --framework doctor reports the framework(s)
  // installed; the kernels are read from the variant's kernel packages (jax-cudaNN-plugin, -pjrt).

  // jax 0.6.2's Requires-Dist lines for the cuda13 extra (shape of jax's METADATA).
  const std::vector<std::string> kJaxRequires = {"jaxlib<=0.6.2,>=0.6.2",
                                                 "jax-cuda13-plugin[with-cuda]<=0.6.2,>=0.6.2; extra == \"cuda13\"",
                                                 "jax-cuda13-pjrt==0.6.2; extra == \"cuda13\""};

  TEST_CASE("doctor: a venv holding only a CPU-only jax, no --framework, on a planned sm_120 host") {
    FakeEnv env;
    env.dist("jax", "0.6.2", kJaxRequires);
    env.dist("jaxlib", "0.6.2");
    auto r = env.run({"--gpu", "sm_120", "--driver", "580.65.06", "--no-repro"});
    auto j = parse(r);
    CHECK(j["framework_from"] == "installed");
    REQUIRE(j["frameworks"].size() == 1);
    CHECK(j["frameworks"][0]["name"] == "jax");
    CHECK(j["frameworks"][0]["variant"] == "cpu");
    auto* f = finding(j, "cpu-build-on-gpu-host");
    REQUIRE(f);
    CHECK(f->at("framework") == "jax");
    CHECK(f->at("message").get<std::string>().find("jax-cuda13-plugin") != std::string::npos);
    CHECK_FALSE(codes(j).contains("framework-not-installed"));
    CHECK(j["verdict"] == "broken");
    CHECK(r.exit_code == 1);
    const auto fix = j["fix"].get<std::string>();
    CHECK(fix.starts_with("envfix apply 'jax[cuda13]' jaxlib --framework jax "));
    // Nothing in the report points at torch.
    CHECK(j.dump().find("torch") == std::string::npos);
    // --framework torch is still honoured as asked.
    auto jt = parse(env.run({"--gpu", "sm_120", "--driver", "580.65.06", "--no-repro", "--framework", "torch"}));
    CHECK(jt["framework_from"] == "option");
    CHECK(codes(jt).contains("framework-not-installed"));
  }

  TEST_CASE("doctor: jax-cuda13 plugin and pjrt binaries (nvcc-built fatbins) read per file, with and without sm_120") {
    if (!have_nvcc()) {
      MESSAGE("nvcc not found at /usr/local/cuda/bin/nvcc: jax plugin kernel check skipped");
      return;
    }
    FakeEnv env;
    // One real shared object with sm_90 SASS, installed as the pjrt's and the plugin's binary.
    auto built = env.root() / "libk1.so";
    util::SubprocessOptions so;
    so.timeout = std::chrono::seconds(300);
    auto c =
        util::run_process({"/usr/local/cuda/bin/nvcc", "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90",
                           (fs::path(ENVFIX_SOURCE_DIR) / "tests/fixtures/cuda/k1.cu").string(), "-o", built.string()},
                          so)
            .value();
    REQUIRE_MESSAGE(c.ok(), c.err);
    const std::string pjrt_so = "jax_plugins/xla_cuda13/xla_cuda_plugin.so", plugin_so = "jax_cuda13_plugin/_linalg.so";
    for (const auto& rel : {pjrt_so, plugin_so}) {
      fs::create_directories((env.site() / rel).parent_path());
      fs::copy_file(built, env.site() / rel);
    }
    env.dist("jax", "0.6.2", kJaxRequires);
    env.dist("jaxlib", "0.6.2");
    env.dist("jax-cuda13-plugin", "0.6.2", {"jax-cuda13-pjrt==0.6.2", "nvidia-cuda-runtime>=13.0.48; extra == \"with-cuda\""},
             true, "pip", {plugin_so});
    env.dist("jax-cuda13-pjrt", "0.6.2", {}, true, "pip", {pjrt_so});
    env.dist("nvidia-cuda-runtime", "13.0.96");
    const std::vector<std::string> host = {"--gpu", "sm_120", "--driver", "580.65.06", "--no-repro"};
    SUBCASE("sm_90 only: broken with arch-not-covered naming each package and file") {
      auto j = parse(env.run(host));
      CHECK(j["frameworks"][0]["variant"] == "cuda13");
      std::set<std::string> named;
      for (auto& x : j["findings"])
        if (x["code"] == "arch-not-covered") {
          auto m = x["message"].get<std::string>();
          if (m.starts_with("jax-cuda13-pjrt 0.6.2") && m.find("xla_cuda_plugin.so") != std::string::npos) named.insert("pjrt");
          if (m.starts_with("jax-cuda13-plugin 0.6.2") && m.find("_linalg.so") != std::string::npos) named.insert("plugin");
        }
      CHECK(named == std::set<std::string>{"pjrt", "plugin"});
      CHECK(j["verdict"] == "broken");
      CHECK(j["fix"].get<std::string>().starts_with("envfix apply 'jax[cuda13]' jaxlib --framework jax "));
      for (auto& p : j["packages"]) {
        const auto name = p["name"].get<std::string>();
        CHECK(p["kernel_package"] == (name == "jax-cuda13-plugin" || name == "jax-cuda13-pjrt"));
        if (!p["kernel_package"].get<bool>()) continue;
        REQUIRE(p["kernels"]["per_file"].size() == 1);
        auto& pf = p["kernels"]["per_file"][0];
        CHECK(pf["path"] == (name == "jax-cuda13-pjrt" ? pjrt_so : plugin_so));
        CHECK(pf["sass"] == json::array({"sm_90"}));
        CHECK(pf["containers"].get<int>() >= 1);
        CHECK(pf["coverage"]["sm_120"]["verdict"] == "none");
      }
      CHECK(!codes(j).contains("cuda-runtime-missing")); // nvidia-cuda-runtime of with-cuda is there
    }
    SUBCASE("relabelled to sm_120 (tests/support/relabel_fatbin.py): healthy, the kernels listed per file") {
      for (const auto& rel : {pjrt_so, plugin_so}) {
        auto r = util::run_process({"python3", std::string(ENVFIX_SOURCE_DIR) + "/tests/support/relabel_fatbin.py", "90", "120",
                                    (env.site() / rel).string()})
                     .value();
        REQUIRE_MESSAGE(r.ok(), r.err);
      }
      auto j = parse(env.run(host));
      INFO(j["findings"].dump());
      CHECK(j["verdict"] == "healthy");
      for (auto& p : j["packages"])
        if (p["kernel_package"].get<bool>()) CHECK(p["kernels"]["coverage"]["sm_120"]["verdict"] == "full");
      auto text = env.run(host, false);
      CHECK(text.err.find(pjrt_so + ": ") != std::string::npos);
      CHECK(text.err.find("sm_120 full") != std::string::npos);
      CHECK(text.err.find("2. Framework jax") != std::string::npos);
    }
  }

  TEST_CASE("doctor: tensorflow installed without its and-cuda nvidia-* wheels on a GPU host") {
    FakeEnv env;
    env.dist("tensorflow", "2.20.0",
             {"numpy>=1.26.0", "nvidia-cublas-cu12==12.5.3.2; extra == \"and-cuda\"",
              "nvidia-cudnn-cu12==9.3.0.75; extra == \"and-cuda\""});
    env.dist("numpy", "2.2.1");
    const std::vector<std::string> host = {"--gpu", "sm_90", "--driver", "580.65.06", "--no-repro", "--no-kernels"};
    auto j = parse(env.run(host));
    CHECK(j["frameworks"][0]["name"] == "tensorflow");
    auto* f = finding(j, "cuda-runtime-missing");
    REQUIRE(f);
    CHECK(f->at("message").get<std::string>().find("nvidia-cublas-cu12, nvidia-cudnn-cu12") != std::string::npos);
    CHECK(j["verdict"] == "broken");
    CHECK(j["fix"].get<std::string>().starts_with("envfix apply 'tensorflow[and-cuda]' --framework tensorflow "));
    // With the extra's wheels installed: the cuda12 variant, from the extra, and healthy.
    env.dist("nvidia-cublas-cu12", "12.5.3.2");
    env.dist("nvidia-cudnn-cu12", "9.3.0.75");
    auto j2 = parse(env.run(host));
    CHECK_FALSE(codes(j2).contains("cuda-runtime-missing"));
    CHECK(j2["frameworks"][0]["variant"] == "cuda12");
    CHECK(j2["packages"][0]["variant_from"] == "extra");
    CHECK(j2["verdict"] == "healthy");
  }

  TEST_CASE("doctor: torch and jax in one venv are both reported; nothing installed assumes torch and says so") {
    FakeEnv env;
    SUBCASE("torch + jax") {
      env.dist("torch", "2.7.0+cpu");
      env.dist("jax", "0.6.2", kJaxRequires);
      env.dist("jaxlib", "0.6.2");
      auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.65.06", "--no-repro", "--no-kernels"}));
      CHECK(j["framework_from"] == "installed");
      std::set<std::string> names, framework_of_packages;
      for (auto& x : j["frameworks"]) names.insert(x["name"].get<std::string>());
      CHECK(names == std::set<std::string>{"jax", "torch"});
      for (auto& p : j["packages"]) framework_of_packages.insert(p["framework"].get<std::string>());
      CHECK(framework_of_packages == names);
      std::set<std::string> broken;
      for (auto& x : j["findings"])
        if (x["code"] == "cpu-build-on-gpu-host") broken.insert(x["framework"].get<std::string>());
      CHECK(broken == names);
      for (auto& x : j["frameworks"]) {
        auto fix = x["fix"].get<std::string>();
        CHECK(fix.starts_with(x["name"] == "jax" ? "envfix apply 'jax[cuda13]' jaxlib --framework jax"
                                                 : "envfix apply torch --python"));
        CHECK(j["fix"].get<std::string>().find(fix) != std::string::npos);
      }
    }
    SUBCASE("nothing") {
      env.dist("numpy", "2.2.1");
      auto j = parse(env.run({"--gpu", "sm_90", "--driver", "580.65.06", "--no-repro"}));
      CHECK(j["framework_from"] == "assumed");
      auto* f = finding(j, "framework-assumed");
      REQUIRE(f);
      CHECK(f->at("message") == "no framework installed; assuming torch (use --framework)");
      CHECK(codes(j).contains("framework-not-installed"));
      CHECK(j["fix"].get<std::string>().starts_with("envfix apply torch"));
    }
  }

  // The H200's real jax 0.11.2 set (tests/fixtures/gpu-h200/jax-0.11.2/metadata.txt: jax, jaxlib,
  // jax-cuda13-plugin, jax-cuda13-pjrt with their real Requires-Dist), laid out as dist-info folders.
  struct RealJax {
    std::map<std::string, std::vector<std::string>> requires_dist; // by project name
  };
  RealJax read_real_jax() {
    RealJax out;
    auto text = util::read_file(fs::path(ENVFIX_SOURCE_DIR) / "tests/fixtures/gpu-h200/jax-0.11.2/metadata.txt").value();
    std::string current;
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto nl = text.find('\n', pos);
      auto line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      pos = nl == std::string::npos ? text.size() : nl + 1;
      if (line.starts_with("== ")) {
        current = line.substr(3, line.find('-', 3) - 3); // jax_cuda13_plugin
        for (auto& c : current)
          if (c == '_') c = '-';
        out.requires_dist[current];
      } else if (line.starts_with("-- "))
        current.clear();
      else if (!current.empty() && line.starts_with("Requires-Dist: "))
        out.requires_dist[current].push_back(line.substr(15));
    }
    return out;
  }

  TEST_CASE("doctor: the real jax 0.11.2 set's metadata, as on the H200 (with-cuda without nvcc and nvvm)") {
    auto real = read_real_jax();
    REQUIRE(real.requires_dist.size() == 4);
    FakeEnv env;
    std::vector<std::string> nvidia;
    for (const auto& [name, reqs] : real.requires_dist) {
      env.dist(name, "0.11.2", reqs);
      if (name == "jax-cuda13-plugin")
        for (const auto& r : reqs)
          if (r.starts_with("nvidia-")) nvidia.push_back(r.substr(0, r.find_first_of("<>=;")));
    }
    CHECK(nvidia.size() == 13);
    // The H200's venv has every with-cuda wheel but nvidia-cuda-nvcc and nvidia-nvvm.
    for (const auto& n : nvidia)
      if (n != "nvidia-cuda-nvcc" && n != "nvidia-nvvm") env.dist(n, "13.0.0");
    const std::vector<std::string> host = {"--gpu", "sm_90", "--driver", "580.159.04", "--no-repro", "--no-kernels"};
    auto j = parse(env.run(host));
    INFO(j["findings"].dump());
    CHECK(j["frameworks"][0]["name"] == "jax");
    CHECK(j["frameworks"][0]["variant"] == "cuda13");
    auto* f = finding(j, "cuda-runtime-missing");
    REQUIRE(f);
    CHECK(f->at("severity") == "info");
    CHECK(f->at("message").get<std::string>().find("nvidia-cuda-nvcc, nvidia-nvvm") != std::string::npos);
    CHECK(j["verdict"] == "healthy");
    for (auto& p : j["packages"]) {
      auto name = p["name"].get<std::string>();
      CHECK(p["kernel_package"] == (name == "jax-cuda13-plugin" || name == "jax-cuda13-pjrt"));
    }
    // Without the pjrt (the plugin's own requirement) and cuBLAS: broken, both named, jax[cuda13] proposed.
    fs::remove_all(env.site() / "jax_cuda13_pjrt-0.11.2.dist-info");
    fs::remove_all(env.site() / "nvidia_cublas-13.0.0.dist-info");
    auto j2 = parse(env.run(host));
    auto* e = finding(j2, "cuda-runtime-missing");
    REQUIRE(e);
    CHECK(e->at("severity") == "error");
    CHECK(e->at("message").get<std::string>().find("nvidia-cublas") != std::string::npos);
    auto* g = finding(j2, "gpu-package-missing");
    REQUIRE(g);
    CHECK(g->at("message").get<std::string>().find("jax-cuda13-pjrt") != std::string::npos);
    CHECK(j2["verdict"] == "broken");
    CHECK(j2["fix"].get<std::string>().starts_with("envfix apply 'jax[cuda13]' jaxlib --framework jax "));
  }

  // plan's default request (api/plan.cpp): with no --framework the framework installed is planned.
  // Offline with an empty cache every index misses, and the error names the main package looked up.
  TEST_CASE("plan without --framework in a venv holding only jax looks up jax, not torch") {
    FakeEnv env;
    env.dist("jax", "0.6.2", kJaxRequires);
    env.dist("jaxlib", "0.6.2");
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(600);
    o.set_env = {{"ENVFIX_NO_NVML", "1"}, {"ENVFIX_CACHE_DIR", (env.root() / "cache").string()}, {"NO_COLOR", "1"}};
    o.unset_env = {"VIRTUAL_ENV",     "CONDA_PREFIX",  "ENVFIX_GPU",       "ENVFIX_DRIVER",
                   "ENVFIX_MATRICES", "ENVFIX_PYTHON", "ENVFIX_INDEX_URL", "ENVFIX_MIRROR"};
    auto run = [&](std::vector<std::string> extra) {
      std::vector<std::string> argv = {
          envfix_bin().string(), "plan",     "--python", env.python().string(), "--gpu", "sm_120", "--driver",
          "580.65.06",           "--offline"};
      argv.insert(argv.end(), extra.begin(), extra.end());
      return util::run_process(argv, o).value();
    };
    auto r = run({});
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("the cache holds no page of jax") != std::string::npos); // --offline: no page, not a 404
    CHECK(r.err.find("torch") == std::string::npos);
    auto t = run({"--framework", "torch"});
    INFO(t.err);
    CHECK(t.err.find("jax") == std::string::npos);
    CHECK(t.err.find("torch") != std::string::npos);
  }

  // Golden transcript (tests/support/golden.hpp) of doctor's text and JSON on the H200's captured
  // torch 2.11.0 set (tests/fixtures/gpu-h200/dist-info: torch, torchvision, torchaudio, triton, cuDNN)
  // with its /proc/driver/nvidia/version, the GPU planned as H200. Fails on any change of what doctor
  // says about that host: a step's layout, a package's variant or its source, a finding, the verdict.
  // `env` sets the language variables (i18n/), `extra` adds arguments (--lang).
  std::string h200_transcript(const std::map<std::string, std::string>& env_vars = {},
                              const std::vector<std::string>& extra = {}) {
    FakeEnv env;
    const fs::path h200 = fs::path(ENVFIX_FIXTURES_DIR) / "gpu-h200";
    for (const auto& d : fs::directory_iterator(h200 / "dist-info"))
      fs::copy(d.path(), env.site() / d.path().filename(), fs::copy_options::recursive);
    write(env.root() / "sysfs/proc/driver/nvidia/version", util::read_file(h200 / "proc-driver-nvidia-version.txt").value());
    std::string transcript;
    for (bool as_json : {false, true}) {
      std::vector<std::string> args = {"--gpu", "H200", "--no-repro"};
      args.insert(args.end(), extra.begin(), extra.end());
      auto r = env.run(args, as_json, env_vars);
      transcript += fmt::format("$ envfix doctor --gpu H200 --no-repro{}\n{}{}[exit {}]\n\n", as_json ? " --format json" : "",
                                r.err, r.out, r.exit_code);
    }
    return testing::filter_transcript(transcript, {{env.root().string(), "<root>"}});
  }

  TEST_CASE("doctor golden: the H200's torch 2.11.0 set, text and JSON") {
    const auto diff = testing::golden_mismatch(fs::path(ENVFIX_FIXTURES_DIR) / "golden/doctor-h200.txt", h200_transcript());
    CHECK_MESSAGE(diff.empty(), diff);
  }

  // The same report in Chinese (issue 33 item 10, i18n/zh_CN.po): LANG=zh_CN.UTF-8 gives every heading,
  // label, finding and the verdict in zh_CN (the golden beside the English one), the JSON half stays the
  // English document; --lang en, LC_ALL=C and a LANGUAGE list ending in zh_CN pick as gettext does.
  TEST_CASE("doctor golden: the H200 report in zh_CN, and what picks the language") {
    const auto english = h200_transcript();
    const auto zh = h200_transcript({{"LANG", "zh_CN.UTF-8"}});
    const auto diff = testing::golden_mismatch(fs::path(ENVFIX_FIXTURES_DIR) / "golden/doctor-h200.zh_CN.txt", zh);
    CHECK_MESSAGE(diff.empty(), diff);
    CHECK(zh.find("1. 硬件与基础环境") != std::string::npos);
    CHECK(zh.find("1. Hardware and base environment") == std::string::npos);
    // JSON is machine-readable: byte for byte the English document.
    const auto json_half = [](const std::string& t) {
      return t.substr(t.find("$ envfix doctor --gpu H200 --no-repro --format json"));
    };
    CHECK(json_half(zh) == json_half(english));
    // --lang en wins over the environment; LC_ALL over LANG; LANGUAGE is ignored when the locale is C.
    CHECK(h200_transcript({{"LANG", "zh_CN.UTF-8"}}, {"--lang", "en"}) == english);
    CHECK(h200_transcript({{"LANG", "zh_CN.UTF-8"}, {"LC_ALL", "C"}, {"LANGUAGE", "zh_CN"}}) == english);
    CHECK(h200_transcript({{"LANG", "en_US.UTF-8"}, {"LANGUAGE", "de:zh_CN"}}) == zh);
    CHECK(h200_transcript({{"LANG", "en_US.UTF-8"}}, {"--lang", "zh_CN"}) == zh);
  }

  // A broken environment in zh_CN (issue 56, item 9): every finding, hint and repro note doctor makes
  // here carries a message id, so the report has no English sentence left, and a reworded finding
  // shows as a diff of the golden, not as English falling through. The set: torch 2.7.0+cu128 whose
  // matmul finds no kernel image on a planned sm_120, a stale torch 2.6.0 without RECORD, torchvision
  // 0.21.0+cu124 pinned to torch 2.6.0, and a driver too old for CUDA 12.8.
  TEST_CASE("doctor golden: a broken set in zh_CN, with no English sentence left") {
    FakeEnv env;
    env.dist("torch", "2.7.0+cu128", {}, true, "pip", {"torch/__init__.py"});
    env.dist("torch", "2.6.0+cu128", {}, /*record=*/false);
    env.dist("torchvision", "0.21.0+cu124", {"torch==2.6.0"});
    env.fake_torch("fail_b");
    const std::vector<std::string> args = {"--gpu", "sm_120", "--driver", "520.61.05", "--offline"};
    auto r = env.run(args, false, {{"LANG", "zh_CN.UTF-8"}});
    const auto transcript = testing::filter_transcript(
        fmt::format("$ envfix doctor --gpu sm_120 --driver 520.61.05 --offline\n{}[exit {}]\n", r.err, r.exit_code),
        {{env.root().string(), "<root>"}});
    const auto diff = testing::golden_mismatch(fs::path(ENVFIX_FIXTURES_DIR) / "golden/doctor-broken.zh_CN.txt", transcript);
    CHECK_MESSAGE(diff.empty(), diff);
    for (const auto& code : {"repro-failed", "arch-not-covered", "driver-too-old", "mixed-variants", "companion-mismatch",
                             "duplicate-dist", "missing-record"})
      CHECK_MESSAGE(transcript.find(code) != std::string::npos, code);
    for (const auto& l : testing::english_sentences(transcript)) CHECK_MESSAGE(false, "English left: " << l);
    // The JSON half keeps the English of the same findings.
    const auto j = parse(env.run(args, true, {{"LANG", "zh_CN.UTF-8"}}));
    CHECK(finding(j, "repro-failed")->at("hint").get<std::string>().find("CUDA_LAUNCH_BLOCKING=1, so the failing operator") !=
          std::string::npos);
  }

  // An unknown --lang is a usage error naming the input, with the languages there are; exit 1 like the
  // other invalid input, and the JSON error document with --format json.
  TEST_CASE("doctor --lang xx: a usage error that lists the languages") {
    FakeEnv env;
    auto r = env.run({"--lang", "xx", "--no-repro"}, false);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("error: --lang: unknown language 'xx'") != std::string::npos);
    CHECK(r.err.find("hint: available languages: en, zh_CN") != std::string::npos);
    CHECK(r.err.find("1. Hardware") == std::string::npos); // nothing ran
    auto j = env.run({"--lang", "xx", "--no-repro"}, true, {{"LANG", "zh_CN.UTF-8"}});
    CHECK(j.exit_code == 1);
    CHECK(j.err.find("'xx'") != std::string::npos);
    CHECK(j.err.find("可用的语言：en, zh_CN") != std::string::npos); // the error itself in the environment's language
    auto doc = parse(j);
    CHECK(doc["error"]["code"] == "invalid-input");
    CHECK(doc["error"]["message"] == "--lang: unknown language 'xx'");
    CHECK(doc["error"]["hint"] == "available languages: en, zh_CN");
  }

} // TEST_SUITE cli

} // namespace cli_doctor_test
