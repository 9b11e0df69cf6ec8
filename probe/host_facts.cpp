#include "probe/host_facts.hpp"

#include <algorithm>
#include <cctype>
#include <future>
#include <map>

#include <unistd.h>

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/installed.hpp"
#include "probe/interpreter.hpp"
#include "probe/python_probe.hpp"
#include "probe/text.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace envfix::probe {

namespace fs = std::filesystem;

namespace {

// The interpreter of an environment prefix (venv or conda).
fs::path prefix_interpreter(const fs::path& p) {
  std::error_code ec;
  for (const char* n : {"bin/python", "bin/python3"}) {
    if (fs::exists(p / n, ec)) return p / n;
  }
  return p / "bin/python";
}

// A venv or conda directory given where an interpreter is expected.
fs::path interpreter_in(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) ? prefix_interpreter(p) : p;
}

void survey_path(HostFacts& facts) {
  auto path = util::get_env(util::Env::path).value_or("");
  std::error_code cwd_ec;
  const fs::path cwd = fs::current_path(cwd_ec);
  // Each shim is run once (a pyenv shim starts bash and `pyenv exec`): pip's python3 sibling is
  // usually the shim the loop below already resolved.
  std::map<fs::path, std::optional<fs::path>> shims;
  auto through = [&](const fs::path& shim) -> const std::optional<fs::path>& {
    auto it = shims.find(shim);
    if (it == shims.end()) {
      auto real = resolve_shim(shim, cwd);
      it = shims.emplace(shim, real ? std::optional<fs::path>(*real) : std::nullopt).first;
    }
    return it->second;
  };
  std::set<fs::path> seen;
  for (auto dir : split(path, ':')) {
    if (dir.empty()) continue;
    for (const char* n : {"python3", "python"}) {
      // Same folder (python → python3) counts once; different venvs sharing a base are distinct.
      if (seen.contains(fs::path(dir))) break;
      fs::path p = fs::path(dir) / n;
      std::error_code ec;
      if (!fs::is_regular_file(p, ec) || ::access(p.c_str(), X_OK) != 0) continue;
      // A shim runs what the working directory selects: that interpreter is the one `python` starts.
      fs::path resolved;
      if (is_shim(p)) {
        const auto& real = through(p);
        if (!real) continue;
        resolved = fs::canonical(*real, ec);
      } else
        resolved = fs::canonical(p, ec);
      if (ec) continue;
      seen.insert(fs::path(dir));
      facts.path_interpreters.push_back({p, resolved});
    }
  }
  for (const char* n : {"pip", "pip3"}) {
    if (auto pip = util::find_in_path(n)) {
      facts.pip_on_path = *pip;
      if (auto head = util::read_file(*pip)) {
        auto h = std::string_view(*head).substr(0, 4096);
        // Only a Python named in the shebang says where pip installs; a wrapper (pyenv's shim is
        // `#!/usr/bin/env bash`) decides at run time, so it tells us nothing.
        if (auto interp = parse_shebang_interpreter(h)) {
          auto base = interp->filename().string();
          std::error_code ec;
          const fs::path sibling = pip->parent_path() / "python3";
          if (base.starts_with("python") || base.starts_with("pypy"))
            facts.pip_interpreter = *interp;
          else if (fs::exists(sibling, ec) && is_shim(sibling)) {
            // A shim folder (pyenv, asdf): its pip runs the interpreter its python3 runs here.
            if (const auto& real = through(sibling)) facts.pip_interpreter = *real;
          } else
            facts.notes.push_back(
                util::msg("{} is a wrapper ({}): its interpreter is chosen at run time", pip->string(), interp->string()));
        }
      }
      break;
    }
  }
}

} // namespace

Expected<std::vector<InstalledDist>> scan_installed(const PythonInfo& python) {
  std::vector<InstalledDist> all;
  for (const auto& dir : site_directories(python)) {
    auto part = scan_site_directory(dir);
    all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return all;
}

namespace {

// A path given or found: a shim (a script where an interpreter belongs) is resolved in the user's
// working directory, where its .python-version decides (probe/interpreter.hpp).
Expected<InterpreterChoice> settle(fs::path path, const std::string& how, const fs::path& cwd) {
  if (path.is_relative() && path.string().find('/') == std::string::npos)
    if (auto p = util::find_in_path(path.string())) path = *p; // a command name (--python python3.10)
  if (!is_shim(path)) return InterpreterChoice{path, how};
  auto real = ENVFIX_TRY(resolve_shim(path, cwd));
  return InterpreterChoice{real, fmt::format("{}, through the shim {} in {}", how, path.string(), cwd.string())};
}

// --python or $ENVFIX_PYTHON: a path, a command on PATH, or a version request (3.12, cpython@3.12).
Expected<InterpreterChoice> given(const fs::path& p, const std::string& how, const fs::path& cwd) {
  std::error_code ec;
  const std::string s = p.string();
  if (s.find('/') == std::string::npos && !fs::exists(p, ec) && !util::find_in_path(s))
    if (auto want = parse_version_request(s)) {
      auto found = ENVFIX_TRY(find_python_version(*want, cwd));
      return InterpreterChoice{found.path, fmt::format("{} {}: {}", how, s, found.how)};
    }
  return settle(interpreter_in(p), how, cwd);
}

} // namespace

Expected<InterpreterChoice> choose_interpreter(const std::optional<fs::path>& explicit_python) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (explicit_python && !explicit_python->empty()) return given(*explicit_python, "--python", cwd);
  if (auto p = util::get_env(util::Env::python); p && !p->empty()) return given(*p, "$ENVFIX_PYTHON", cwd);
  if (auto v = util::get_env(util::Env::virtual_env); v && !v->empty())
    return settle(prefix_interpreter(*v), "$VIRTUAL_ENV", cwd);
  if (auto c = util::get_env(util::Env::conda_prefix); c && !c->empty())
    return settle(prefix_interpreter(*c), "$CONDA_PREFIX", cwd);
  if (auto venv = project_venv(cwd))
    return InterpreterChoice{prefix_interpreter(*venv), ".venv in " + venv->parent_path().string()};
  if (auto p = util::find_in_path("python3")) return settle(*p, "python3 on PATH", cwd);
  return make_error(
      ErrorCode::not_found,
      util::msg("no Python interpreter: no --python, $VIRTUAL_ENV, $CONDA_PREFIX, .venv here or above, or python3 on PATH"),
      util::msg("pass --python PATH (or a version: --python 3.12), or activate the environment to repair"));
}

Expected<fs::path> default_interpreter(const std::optional<fs::path>& explicit_python) {
  return ENVFIX_TRY(choose_interpreter(explicit_python)).path;
}

Expected<CondaMetaRecord> parse_conda_record(std::string_view text, const fs::path& path, const fs::path& prefix) {
  auto bad = [&](std::string_view why) {
    return make_error(
        ErrorCode::invalid_input, util::msg("{}: {}; skipped", path.string(), why),
        util::msg("a damaged conda-meta record: `conda install --force-reinstall` the package, or remove the file"));
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return bad("not a JSON object");
  CondaMetaRecord out;
  CondaRecord& r = out.record;
  r.record = path;
  for (auto [key, field] : {std::pair{"name", &r.name}, {"version", &r.version}, {"build", &r.build}, {"channel", &r.channel}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_string()) return bad(fmt::format("'{}' is not a string", key));
    *field = it->get<std::string>();
  }
  // Lists of strings: absent is empty, anything else is damage.
  auto strings = [&](const char* key, std::vector<std::string>& into) -> bool {
    auto it = j.find(key);
    if (it == j.end()) return true;
    if (!it->is_array()) return false;
    for (const auto& x : *it) {
      if (!x.is_string()) return false;
      into.push_back(x.get<std::string>());
    }
    return true;
  };
  std::vector<std::string> files, deps;
  if (!strings("files", files)) return bad("'files' is not a list of strings");
  if (!strings("depends", deps)) return bad("'depends' is not a list of strings");
  for (const auto& d : deps) out.depends.insert(d.substr(0, d.find(' ')));
  for (const auto& f : files) {
    const fs::path rel(f);
    if (rel.is_absolute() || std::find(rel.begin(), rel.end(), "..") != rel.end()) {
      out.skipped.push_back(f);
      continue;
    }
    const auto slash = f.find(".dist-info/");
    if (slash != std::string::npos)
      out.dist_infos.push_back(f.substr(0, slash + 10));
    else if (f.starts_with("lib/") && f.find('/', 4) == std::string::npos &&
             (f.ends_with(".so") || f.find(".so.") != std::string::npos) && !f.starts_with("lib/python"))
      r.prefix_objects.push_back(prefix / f);
  }
  return out;
}

void read_conda_meta(const fs::path& prefix, std::vector<InstalledDist>& dists, std::vector<util::Message>* notes) {
  std::error_code ec;
  const fs::path meta = prefix / "conda-meta";
  std::map<std::string, CondaRecord> owner; // dist-info folder (relative to prefix) -> record
  // conda-forge splits a framework's C++ library into a record of its own, named lib<name>
  // (pytorch depends on libtorch, whose files are $PREFIX/lib/libtorch_cuda.so…): its shared objects
  // are the framework's kernels. Only that record, not every dependency (cuBLAS, cuDNN are
  // packages of their own).
  std::map<std::string, std::vector<fs::path>> lib_objects; // record name -> its $PREFIX/lib objects
  std::map<std::string, std::set<std::string>> depends;     // dist-info folder -> the owner's dependency names
  if (fs::is_directory(meta, ec))
    for (const auto& e : fs::directory_iterator(meta, ec)) {
      if (e.path().extension() != ".json") continue;
      auto text = util::read_file(e.path());
      if (!text) continue;
      auto rec = parse_conda_record(*text, e.path(), prefix);
      if (!rec) { // one damaged record costs its own ownership facts, not the probe
        if (notes) notes->push_back(rec.error().said_message());
        continue;
      }
      if (!rec->skipped.empty() && notes)
        notes->push_back(
            rec->skipped.size() == 1
                ? util::msg("{}: 1 'files' entry outside the prefix ignored ({}); the record still owns the rest",
                            e.path().string(), fmt::format("{:?}", rec->skipped.front()))
                : util::msg("{}: {} 'files' entries outside the prefix ignored ({}, …); the record still owns the rest",
                            e.path().string(), rec->skipped.size(), fmt::format("{:?}", rec->skipped.front())));
      const CondaRecord& r = rec->record;
      if (rec->dist_infos.empty() && !r.prefix_objects.empty()) lib_objects[r.name] = r.prefix_objects;
      for (const auto& d : rec->dist_infos) {
        owner.emplace(d, r);
        depends.emplace(d, rec->depends);
      }
    }
  for (auto& d : dists) {
    auto rel = fs::relative(d.dist_info, prefix, ec).generic_string();
    if (auto it = owner.find(rel); !ec && it != owner.end()) {
      d.conda = it->second;
      for (const auto& lib : {"lib" + d.normalized_name(), "lib" + it->second.name})
        if (auto l = lib_objects.find(lib); l != lib_objects.end() && depends[rel].contains(lib))
          for (const auto& o : l->second)
            if (std::find(d.conda->prefix_objects.begin(), d.conda->prefix_objects.end(), o) == d.conda->prefix_objects.end())
              d.conda->prefix_objects.push_back(o);
    } else if (d.installer == "conda")
      d.conda = CondaRecord{d.name, d.version.to_string(), "", "", {}};
  }
}

std::optional<std::string> conda_build_variant(std::string_view build) {
  // Build strings of the pytorch and conda-forge channels: "py3.11_cuda12.4_cudnn9.1.0_0",
  // "cuda129_mkl_py312_h…", "cpu_mkl_py312_h…", "py3.12_cpu_0".
  for (std::size_t at = build.find("cuda"); at != std::string_view::npos; at = build.find("cuda", at + 1)) {
    std::string digits;
    std::size_t i = at + 4;
    for (; i < build.size() && (std::isdigit(static_cast<unsigned char>(build[i])) || build[i] == '.'); ++i)
      if (build[i] != '.') digits += build[i];
    if (digits.size() >= 3) return "cu" + digits.substr(0, 3);
  }
  if (build.starts_with("cpu") || build.find("_cpu") != std::string_view::npos) return std::string("cpu");
  return std::nullopt;
}

Expected<HostFacts> probe_host(const ProbeOptions& options) {
  HostFacts facts;
  // The GPU side (NVML initialisation can take a good part of a second on a data-centre GPU) runs
  // while the interpreter is probed; the two share nothing.
  struct GpuSide {
    std::vector<GpuInfo> gpus;
    std::optional<DriverInfo> driver;
    std::optional<TegraInfo> tegra;
    std::vector<util::Message> notes;
  };
  std::future<GpuSide> gpu_side;
  if (options.gpus)
    gpu_side = std::async(std::launch::async, [] {
      GpuSide g;
      auto gpus = probe_gpus(&g.notes);
      if (gpus)
        g.gpus = std::move(*gpus);
      else
        g.notes.push_back(gpus.error().said_message());
      auto drv = probe_driver(&g.notes);
      if (drv)
        g.driver = std::move(*drv);
      else
        g.notes.push_back(drv.error().said_message());
      g.tegra = probe_tegra();
      return g;
    });
  Expected<void> interpreter;
  if (options.interpreter)
    interpreter = [&]() -> Expected<void> {
      auto choice = ENVFIX_TRY(choose_interpreter(options.python));
      facts.python_from = choice.how;
      auto info = ENVFIX_TRY(probe_python(choice.path, options.cache_dir, options.python_timeout));
      if (options.installed) {
        facts.installed = ENVFIX_TRY(scan_installed(info));
        read_conda_meta(info.prefix, facts.installed, &facts.notes);
      }
      facts.python = std::move(info);
      return {};
    }();
  // Joined before any return: the thread must not outlive the call.
  if (gpu_side.valid()) {
    auto g = gpu_side.get();
    facts.gpus = std::move(g.gpus);
    facts.driver = std::move(g.driver);
    facts.tegra = std::move(g.tegra);
    facts.notes.insert(facts.notes.begin(), g.notes.begin(), g.notes.end());
  }
  ENVFIX_TRY_VOID(interpreter);
  if (options.survey_path) survey_path(facts);
  return facts;
}

} // namespace envfix::probe
