// diagnosis/finding.hpp and diagnosis/cuda_error.hpp: the codes are values whose spelling is the
// JSON contract, so the enum, its names and docs/json.md's table must hold together.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "i18n/i18n.hpp"
#include "diagnosis/cuda_error.hpp"
#include "diagnosis/diagnose.hpp"
#include "diagnosis/finding.hpp"
#include "util/fs.hpp"

using namespace envfix;
using diagnosis::FindingCode;

TEST_SUITE("unit/diagnosis/finding") {
  TEST_CASE("every finding code has one distinct name, and docs/json.md's table lists exactly these") {
    const auto codes = diagnosis::all_finding_codes();
    REQUIRE(codes.size() == static_cast<std::size_t>(FindingCode::conda_owned) + 1);
    std::set<std::string> names;
    for (std::size_t i = 0; i < codes.size(); ++i) {
      CHECK(codes[i] == static_cast<FindingCode>(i)); // one row per enumerator, in order
      names.insert(std::string(diagnosis::to_string(codes[i])));
    }
    CHECK(names.size() == codes.size());
    const auto doc = util::read_file(std::filesystem::path(ENVFIX_SOURCE_DIR) / "docs/json.md");
    REQUIRE(doc);
    // The table after "Finding codes": rows "| `code` | severity | meaning |".
    const auto from = doc->find("Finding codes (stable");
    REQUIRE(from != std::string::npos);
    const auto to = doc->find("\n\n", doc->find("|---|", from));
    const std::string table = doc->substr(from, to - from);
    std::set<std::string> documented;
    const std::regex row(R"(\n\| `([a-z0-9-]+)` \|)");
    for (auto it = std::sregex_iterator(table.begin(), table.end(), row); it != std::sregex_iterator(); ++it)
      documented.insert((*it)[1]);
    CHECK(documented == names);
  }

  TEST_CASE("a reinstall fixes package problems, not the host's; shell advice is advisory only") {
    CHECK(diagnosis::fixable(FindingCode::arch_not_covered));
    CHECK(diagnosis::fixable(FindingCode::extension_framework_mismatch));
    CHECK_FALSE(diagnosis::fixable(FindingCode::driver_too_old));
    CHECK_FALSE(diagnosis::fixable(FindingCode::no_gpu));
    CHECK_FALSE(diagnosis::fixable(FindingCode::zstd_needs_newer_driver));
    for (auto c : diagnosis::all_finding_codes()) {
      CAPTURE(diagnosis::to_string(c));
      if (diagnosis::advisory(c)) CHECK_FALSE(diagnosis::fixable(c));
      CHECK(diagnosis::about_extension(c) == diagnosis::to_string(c).starts_with("extension-"));
    }
    CHECK(diagnosis::Severity::error < diagnosis::Severity::warning); // the report's order
    CHECK(diagnosis::Severity::warning < diagnosis::Severity::info);
  }

  TEST_CASE("CUDA error lines: the missing-arch class whatever the framework's wording") {
    using diagnosis::CudaError;
    CHECK(diagnosis::classify_cuda_error("RuntimeError: CUDA error: no kernel image is available for execution on the device") ==
          CudaError::missing_arch);
    CHECK(diagnosis::classify_cuda_error("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_NO_BINARY_FOR_GPU") ==
          CudaError::missing_arch);
    CHECK(diagnosis::classify_cuda_error("CUDA error: invalid device function") == CudaError::missing_arch);
    CHECK(diagnosis::classify_cuda_error("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") ==
          CudaError::out_of_memory);
    CHECK(diagnosis::classify_cuda_error("RuntimeError: CUDA error: an illegal memory access was encountered") ==
          CudaError::other);
    CHECK(diagnosis::classify_cuda_error("ValueError: shapes (2,3) and (2,3) not aligned") == CudaError::none);
    CHECK(diagnosis::to_string(CudaError::missing_arch) == "missing-arch");
    CHECK(diagnosis::to_string(CudaError::none).empty());
  }
}

namespace {

// doctor on facts alone: a target interpreter with `prefix`, and another `python3` first on PATH.
diagnosis::DoctorReport other_python_first(const std::filesystem::path& prefix, const std::filesystem::path& other) {
  diagnosis::DoctorInputs in;
  probe::PythonInfo py;
  py.executable = prefix / "bin/python";
  py.prefix = py.base_prefix = prefix;
  in.facts.python = py;
  in.facts.path_interpreters.push_back({other / "bin/python3", other / "bin/python3"});
  return diagnosis::diagnose({.no_repro = true, .no_kernels = true}, std::move(in));
}

util::Message said_hint_of(const diagnosis::DoctorReport& r, FindingCode code) {
  for (const auto& f : r.findings)
    if (f.code == code) return f.hint;
  return util::plain("(no such finding)");
}

std::string hint_of(const diagnosis::DoctorReport& r, FindingCode code) { return said_hint_of(r, code).text; }

} // namespace

TEST_SUITE("unit/diagnosis/finding") {
  TEST_CASE("python-other-interpreter: the activation hint names only what exists (conda, venv, pyenv, none)") {
    namespace fs = std::filesystem;
    const auto work = util::make_temp_dir({}, "envfix-hints").value();
    const fs::path other = work / "other";
    fs::create_directories(other / "bin");
    const fs::path conda = work / "conda-env", venv = work / "venv", pyenv = work / "pyenv" / "versions" / "3.10.13",
                   bare = work / "bare";
    fs::create_directories(conda / "conda-meta");
    fs::create_directories(venv / "bin");
    REQUIRE(util::write_file_atomic(venv / "bin/activate", "# activate\n", 0644));
    fs::create_directories(pyenv / "bin");
    fs::create_directories(work / "pyenv" / "shims");
    fs::create_directories(bare / "bin");
    const auto code = FindingCode::python_other_interpreter;
    CHECK(hint_of(other_python_first(conda, other), code).find("conda activate " + conda.string()) != std::string::npos);
    CHECK(hint_of(other_python_first(venv, other), code).find("source " + venv.string() + "/bin/activate") != std::string::npos);
    CHECK(hint_of(other_python_first(pyenv, other), code).find("pyenv local 3.10.13") != std::string::npos);
    const auto none = hint_of(other_python_first(bare, other), code);
    CHECK(none.find("run your program with " + (bare / "bin/python").string()) != std::string::npos);
    CHECK(none.find("activate") == std::string::npos); // bare has no bin/activate: none is offered
    // Each hint is a catalog message: zh_CN translates it by its id with the paths kept as they are.
    i18n::set_language(i18n::Lang::zh_CN);
    for (const auto& prefix : {conda, venv, pyenv, bare}) {
      const auto zh = i18n::tr(said_hint_of(other_python_first(prefix, other), code));
      CHECK_MESSAGE(zh.starts_with("请用 " + (prefix / "bin/python").string()), zh);
      CHECK_MESSAGE(zh.find(", or") == std::string::npos, zh); // no English tail caught by a shorter entry
    }
    i18n::set_language(i18n::Lang::en);
    fs::remove_all(work);
  }

  TEST_CASE("the one command builder: options carried, --venv for a managed target, quoting, the reinstall") {
    const diagnosis::FixArgs args{"/opt/my env/bin/python",
                                  {"--index-url", "https://mirror.example/simple", "--channel", "test"}};
    CHECK(diagnosis::command_line({"envfix", "apply", "torch"}, args, false) ==
          "envfix apply torch --python '/opt/my env/bin/python' --index-url https://mirror.example/simple --channel test");
    CHECK(diagnosis::command_line({"envfix", "apply", "torch"}, args, true, "--channel") ==
          "envfix apply torch --venv .venv --index-url https://mirror.example/simple");
    matrices::Framework jax;
    jax.name = "jax";
    jax.main_package = "jax";
    jax.companions = {"jaxlib"};
    // The installed family in the installed order, each once; other packages are not the framework's.
    CHECK(diagnosis::reinstall_command(jax, {"numpy", "jaxlib", "jax", "jaxlib"}, {}, false) ==
          "envfix apply jaxlib jax --framework jax");
    CHECK(diagnosis::reinstall_command(jax, {"numpy"}, {}, false) == "envfix apply jax --framework jax");
  }
}
