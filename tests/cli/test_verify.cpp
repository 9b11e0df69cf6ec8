// envfix verify on the CPU (CI has no GPU): a fixture framework "vfw" defined by a matrices override,
// installed as a real package in a real venv; the repro layer's CPU step, a model layer with a passing
// and a failing model (the failing one names its operator), and an --app that fails with the real
// "no kernel image" text, classified as missing-arch with the fix command.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "util/fs.hpp"
#include "util/subprocess.hpp"
#include "tests/support/envfix_bin.hpp"

namespace cli_verify_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using envfix::testing::envfix_bin;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  REQUIRE(util::write_file_atomic(p, text, 0644));
}

constexpr const char* kVfw = R"YAML(schema: 1
frameworks:
  vfw:
    main_package: vfw
    default_mirror: "https://vfw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
    source: "envfix tests/cli/test_verify.cpp"
    variants:
      cu128: {cuda: "12.8"}
    smoke:
      step_a: "raise SystemExit('step A ran on the GPU path')"
      step_b: "raise SystemExit('step B ran on the GPU path')"
      cpu:
        step: "import os, vfw; assert os.environ['CUDA_VISIBLE_DEVICES'] == ''; print(vfw.add(1, 2))"
      model:
        "mlp": "import os, vfw; print('OP', 'vfw.add'); assert os.environ['ENVFIX_DEVICE'] == 'cpu'; print(vfw.add(3, 4))"
        "conv": "import vfw; print('OP', 'vfw.add'); vfw.add(1, 1); print('OP', 'vfw.conv2d'); vfw.conv2d()"
    releases:
      - versions: ["1.0.0"]
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], confidence: verified, source: "test claim"}
)YAML";

// "ofw": the steps share one interpreter (step 2 sees what step 1 left in sys.modules); a step that
// raises, one that kills the interpreter (SIGSEGV) and one that hangs past --timeout each fail alone,
// and the step after each runs, in a fresh interpreter (step 4 and 6 see no marker).
constexpr const char* kOfw = R"YAML(schema: 1
frameworks:
  ofw:
    main_package: ofw
    default_mirror: "https://ofw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
    source: "envfix tests/cli/test_verify.cpp"
    variants:
      cu128: {cuda: "12.8"}
    smoke:
      step_a: "raise SystemExit('step A ran on the GPU path')"
      step_b: "raise SystemExit('step B ran on the GPU path')"
      cpu:
        step: "import sys, types; sys.modules['ofw_marker'] = types.ModuleType('ofw_marker'); print('no newline', end='')"
      model:
        "1 shared": "import sys; print('OP', 'shared'); assert 'ofw_marker' in sys.modules, 'a fresh interpreter: the steps do not share one'"
        "2 raises": "import sys; print('OP', 'raise'); sys.stderr.write('noise\\n'); raise RuntimeError('ofw: a step raised (fixture)')"
        "3 after raise": "import sys, types; assert 'ofw_marker' not in sys.modules; sys.modules['ofw_marker'] = types.ModuleType('m')"
        "4 segfault": "import os, signal; print('OP', 'segv', flush=True); os.kill(os.getpid(), signal.SIGSEGV)"
        "5 after segfault": "import sys; assert 'ofw_marker' not in sys.modules; print('after the crash')"
        "6 hangs": "import time; print('OP', 'sleep', flush=True); time.sleep(3600)"
        "7 after hang": "import sys; sys.exit(0)"
        "8 exits": "import sys; sys.exit(3)"
    releases:
      - versions: ["1.0.0"]
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], confidence: verified, source: "test claim"}
)YAML";

} // namespace

TEST_SUITE("cli/cli/verify") {
  TEST_CASE("verify: layers on the CPU, a failing model names its operator, a failing --app is classified") {
    auto root = util::make_temp_dir({}, "envfix-verify-test").value();
    auto venv = root / "venv";
    // An error (not a throw) names what failed; the bound ends a hang only (a loaded machine).
    auto made =
        util::run_process({"python3", "-m", "venv", "--without-pip", venv.string()}, {.timeout = std::chrono::seconds(600)});
    REQUIRE_MESSAGE(made, (made ? "" : made.error().render()));
    auto& mk = *made;
    REQUIRE_MESSAGE(mk.ok(), mk.err);
    fs::path site;
    for (const auto& e : fs::directory_iterator(venv / "lib")) site = e.path() / "site-packages";
    write(
        site / "vfw/__init__.py",
        "def add(a, b):\n    return a + b\n\ndef conv2d():\n    raise RuntimeError('vfw: conv2d is not implemented (fixture)')\n");
    write(site / "vfw-1.0.0+cu128.dist-info/METADATA", "Metadata-Version: 2.1\nName: vfw\nVersion: 1.0.0+cu128\n");
    write(site / "vfw-1.0.0+cu128.dist-info/RECORD", "vfw/__init__.py,,\nvfw-1.0.0+cu128.dist-info/METADATA,,\n");
    write(root / "matrices/vfw.yaml", kVfw);
    // The user's app: a script the target interpreter runs, failing the way torch does on a build
    // without the GPU's arch.
    write(root / "app.py", "import sys\nprint('training...')\n"
                           "sys.stderr.write('Traceback (most recent call last):\\n  File \"app.py\", line 3\\n"
                           "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\\n')\n"
                           "sys.exit(1)\n");
    auto run = [&](std::vector<std::string> extra) {
      std::vector<std::string> argv{envfix_bin().string(),
                                    "verify",
                                    "--framework",
                                    "vfw",
                                    "--matrices",
                                    (root / "matrices").string(),
                                    "--python",
                                    (venv / "bin/python").string(),
                                    "--cache-dir",
                                    (root / "cache").string()};
      argv.insert(argv.end(), extra.begin(), extra.end());
      util::SubprocessOptions o;
      o.timeout = std::chrono::seconds(600);
      o.cwd = root;
      o.set_env = {{"ENVFIX_NO_NVML", "1"}, {"ENVFIX_SYSFS_ROOT", (root / "sysfs").string()}, {"NO_COLOR", "1"}};
      o.unset_env = {"VIRTUAL_ENV", "CONDA_PREFIX", "ENVFIX_GPU", "ENVFIX_DRIVER", "CUDA_VISIBLE_DEVICES"};
      return util::run_process(argv, o).value();
    };

    auto r = run({"--format", "json", "--app", "python app.py"});
    INFO(r.err);
    CHECK(r.exit_code == 1);
    auto j = json::parse(r.out);
    CHECK(j["device"] == "cpu");
    CHECK(j["device_note"].get<std::string>().find("no GPU") != std::string::npos);
    CHECK(j["verdict"] == "failed");
    REQUIRE(j["layers"]["repro"]["steps"].size() == 1);
    CHECK(j["layers"]["repro"]["steps"][0]["name"] == "CPU step");
    CHECK(j["layers"]["repro"]["status"] == "passed");
    auto& model = j["layers"]["model"]["steps"];
    REQUIRE(model.size() == 2);
    CHECK(model[0]["name"] == "conv");
    CHECK(model[0]["status"] == "failed");
    CHECK(model[0]["operator"] == "vfw.conv2d");
    CHECK(model[0]["error"] == "RuntimeError: vfw: conv2d is not implemented (fixture)");
    CHECK(model[1]["name"] == "mlp");
    CHECK(model[1]["status"] == "passed");
    CHECK(model[1]["seconds"].get<double>() > 0);
    auto& app = j["layers"]["app"];
    CHECK(app["exit_code"] == 1);
    CHECK(app["class"] == "missing-arch");
    CHECK(app["cuda_error"].get<std::string>().find("no kernel image is available") != std::string::npos);
    CHECK(app["fix"].get<std::string>().find("envfix apply vfw --framework vfw") != std::string::npos);
    CHECK(app["gpu_memory"].empty());
    CHECK(app["gpu_memory_note"].get<std::string>().find("NVML") != std::string::npos);

    // Only the layers asked for; a passing run exits 0.
    auto ok = run({"--layers", "repro"});
    CHECK(ok.exit_code == 0);
    CHECK(ok.err.find("PASS CPU step") != std::string::npos);
    CHECK(ok.err.find("2. model") == std::string::npos);
    // Bad input names itself.
    auto bad = run({"--layers", "repro,bench"});
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("--layers: unknown layer 'bench'") != std::string::npos);

    // The error's second and third layers (issue 33, item 3): without CUDA_LAUNCH_BLOCKING the error
    // surfaces at a later synchronising call; --sync runs the app so that it stops at the launch.
    write(root / "async.py",
          "import os, sys\n"
          "sync = os.environ.get('CUDA_LAUNCH_BLOCKING') == '1'\n"
          "frame, code = ('line 5, in <module>', 'y = model(x)') if sync else ('line 9, in <module>', 'print(loss.item())')\n"
          "sys.stderr.write('Traceback (most recent call last):\\n  File \"async.py\", ' + frame + '\\n    ' + code + '\\n'\n"
          "                 'torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\\n')\n"
          "sys.exit(1)\n");
    auto lazy = json::parse(run({"--format", "json", "--layers", "app", "--app", "python async.py"}).out)["layers"]["app"];
    CHECK(lazy["sync"] == false);
    CHECK(lazy["where"] == "File \"async.py\", line 9, in <module>: print(loss.item())");
    REQUIRE(lazy["async_note"].is_string());
    CHECK(lazy["async_note"].get<std::string>().find("asynchronously") != std::string::npos);
    CHECK(lazy["async_note"].get<std::string>().find("envfix verify --app 'python async.py' --sync") != std::string::npos);
    auto synced = run({"--format", "json", "--layers", "app", "--app", "python async.py", "--sync"});
    auto sj = json::parse(synced.out)["layers"]["app"];
    CHECK(sj["sync"] == true);
    CHECK(sj["where"] == "File \"async.py\", line 5, in <module>: y = model(x)");
    CHECK(sj["async_note"].is_null());
    CHECK(synced.err.find("raised (CUDA_LAUNCH_BLOCKING=1) at: File \"async.py\", line 5") != std::string::npos);
    fs::remove_all(root);
  }

  // Issue 33, item 1: the app dies with "no kernel image" on a planned sm_90 where vfw itself is fine
  // but an extension beside it (its own nvcc-built library, sm_80 only) is not. verify prints doctor's
  // fix, naming the extension; with the extension covering sm_90 nothing installed lacks the arch, and
  // verify says so instead of printing a reinstall that answers "Nothing to do".
  TEST_CASE("verify --app: missing-arch names the GPU extension that lacks the arch, or says no reinstall can help") {
    auto root = util::make_temp_dir({}, "envfix-verify-ext").value();
    auto venv = root / "venv";
    // An error (not a throw) names what failed; the bound ends a hang only (a loaded machine).
    auto made =
        util::run_process({"python3", "-m", "venv", "--without-pip", venv.string()}, {.timeout = std::chrono::seconds(600)});
    REQUIRE_MESSAGE(made, (made ? "" : made.error().render()));
    auto& mk = *made;
    REQUIRE_MESSAGE(mk.ok(), mk.err);
    fs::path site;
    for (const auto& e : fs::directory_iterator(venv / "lib")) site = e.path() / "site-packages";
    write(site / "vfw/__init__.py", "def add(a, b):\n    return a + b\n");
    write(site / "vfw-1.0.0+cu128.dist-info/METADATA", "Metadata-Version: 2.1\nName: vfw\nVersion: 1.0.0+cu128\n");
    write(site / "vfw-1.0.0+cu128.dist-info/RECORD", "vfw/__init__.py,,\nvfw-1.0.0+cu128.dist-info/METADATA,,\n");
    write(root / "matrices/vfw.yaml", kVfw);
    write(root / "app.py", "import sys\nsys.stderr.write('RuntimeError: CUDA error: no kernel image is available for "
                           "execution on the device\\n')\nsys.exit(1)\n");
    write(root / "k.cu", "extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n");
    auto extension = [&](const std::string& arch) {
      auto nvcc = util::run_process({"/usr/local/cuda/bin/nvcc", "-shared", "-Xcompiler", "-fPIC", "-gencode",
                                     "arch=compute_" + arch + ",code=sm_" + arch, (root / "k.cu").string(), "-o",
                                     (site / "vfwext/_C.so").string()},
                                    {.timeout = std::chrono::seconds(300)});
      REQUIRE(nvcc);
      REQUIRE_MESSAGE(nvcc->ok(), nvcc->err);
      write(site / "vfwext-0.1.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: vfwext\nVersion: 0.1\nRequires-Dist: vfw==1.0.0\n");
      write(site / "vfwext-0.1.dist-info/RECORD", "vfwext/_C.so,,\nvfwext-0.1.dist-info/METADATA,,\n");
    };
    fs::create_directories(site / "vfwext");
    auto run = [&]() {
      util::SubprocessOptions o;
      o.timeout = std::chrono::seconds(600);
      o.cwd = root;
      o.set_env = {{"ENVFIX_NO_NVML", "1"}, {"ENVFIX_SYSFS_ROOT", (root / "sysfs").string()}, {"NO_COLOR", "1"}};
      o.unset_env = {"VIRTUAL_ENV", "CONDA_PREFIX", "ENVFIX_GPU", "ENVFIX_DRIVER", "CUDA_VISIBLE_DEVICES"};
      auto r = util::run_process({envfix_bin().string(),
                                  "verify",
                                  "--framework",
                                  "vfw",
                                  "--matrices",
                                  (root / "matrices").string(),
                                  "--python",
                                  (venv / "bin/python").string(),
                                  "--cache-dir",
                                  (root / "cache").string(),
                                  "--gpu",
                                  "sm_90",
                                  "--driver",
                                  "580.65.06",
                                  "--layers",
                                  "app",
                                  "--app",
                                  "python app.py",
                                  "--format",
                                  "json"},
                                 o)
                   .value();
      INFO(r.err);
      CHECK(r.exit_code == 1);
      return json::parse(r.out)["layers"]["app"];
    };
    extension("80");
    auto app = run();
    CHECK(app["class"] == "missing-arch");
    REQUIRE(app["fix"].is_string());
    CHECK_MESSAGE(app["fix"].get<std::string>().starts_with("envfix apply vfw vfwext --framework vfw"), app["fix"]);
    CHECK(app["fix_note"].is_null());

    extension("90");
    app = run();
    CHECK(app["fix"].is_null());
    REQUIRE(app["fix_note"].is_string());
    CHECK(app["fix_note"].get<std::string>().find("hold code for sm_90, so reinstalling cannot fix this") != std::string::npos);
    fs::remove_all(root);
  }
  TEST_CASE("verify: the steps share one interpreter; a step that raises, crashes or hangs fails alone, the next still run") {
    auto root = util::make_temp_dir({}, "envfix-verify-one").value();
    auto venv = root / "venv";
    // An error (not a throw) names what failed; the bound ends a hang only (a loaded machine).
    auto made =
        util::run_process({"python3", "-m", "venv", "--without-pip", venv.string()}, {.timeout = std::chrono::seconds(600)});
    REQUIRE_MESSAGE(made, (made ? "" : made.error().render()));
    auto& mk = *made;
    REQUIRE_MESSAGE(mk.ok(), mk.err);
    fs::path site;
    for (const auto& e : fs::directory_iterator(venv / "lib")) site = e.path() / "site-packages";
    write(site / "ofw/__init__.py", "");
    write(site / "ofw-1.0.0+cu128.dist-info/METADATA", "Metadata-Version: 2.1\nName: ofw\nVersion: 1.0.0+cu128\n");
    write(site / "ofw-1.0.0+cu128.dist-info/RECORD", "ofw/__init__.py,,\nofw-1.0.0+cu128.dist-info/METADATA,,\n");
    write(root / "matrices/ofw.yaml", kOfw);
    std::vector<std::string> argv{envfix_bin().string(),
                                  "--format",
                                  "json",
                                  "verify",
                                  "--framework",
                                  "ofw",
                                  "--matrices",
                                  (root / "matrices").string(),
                                  "--python",
                                  (venv / "bin/python").string(),
                                  "--cache-dir",
                                  (root / "cache").string(),
                                  "--timeout",
                                  "15"};
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(600);
    o.cwd = root;
    o.set_env = {{"ENVFIX_NO_NVML", "1"}, {"ENVFIX_SYSFS_ROOT", (root / "sysfs").string()}, {"NO_COLOR", "1"}};
    o.unset_env = {"VIRTUAL_ENV", "CONDA_PREFIX", "ENVFIX_GPU", "ENVFIX_DRIVER", "CUDA_VISIBLE_DEVICES"};
    const auto t0 = std::chrono::steady_clock::now();
    auto r = util::run_process(argv, o).value();
    const auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(r.err);
    CHECK(r.exit_code == 1);
    auto j = json::parse(r.out);
    CHECK(j["layers"]["repro"]["steps"][0]["status"] == "passed");
    auto& m = j["layers"]["model"]["steps"];
    REQUIRE(m.size() == 8);
    auto status = [&](int i) { return m[i]["status"].get<std::string>() + " " + m[i]["error"].dump(); };
    CHECK(status(0) == "passed null"); // saw the CPU step's marker: one interpreter
    CHECK(status(1) == "failed \"RuntimeError: ofw: a step raised (fixture)\"");
    CHECK(m[1]["operator"] == "raise");
    CHECK(status(2) == "passed null"); // a fresh interpreter after the failure
    CHECK(status(3) == "failed \"killed by signal 11 (Segmentation fault)\"");
    CHECK(m[3]["operator"] == "segv");
    CHECK(status(4) == "passed null");
    CHECK(status(5) == "failed \"timed out after 15 s\"");
    CHECK(m[5]["operator"] == "sleep");
    CHECK(m[5]["seconds"].get<double>() >= 15);
    CHECK(status(6) == "passed null");
    CHECK(status(7) == "failed \"exit code 3\"");
    // CPU step + 1 + 2 | 3 + 4 | 5 + 6 | 7 + 8: a fresh interpreter after each failure only.
    CHECK(j["interpreters"] == 4);
    // The hang cost its timeout, not the hour it asked for: had verify waited, the 600 s bound above
    // would have killed it (15 s per step, so that the steps that pass do so on a loaded machine too).
    CHECK(!r.timed_out);
    MESSAGE("verify with one hanging step: " << wall << " s");
    fs::remove_all(root);
  }
} // TEST_SUITE cli

} // namespace cli_verify_test
