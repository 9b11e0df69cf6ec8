#include "probe/python_probe.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/text.hpp"
#include "util/cache_trust.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/python.hpp"
#include "util/subprocess.hpp"

namespace envfix::probe {

namespace fs = std::filesystem;

std::string_view python_probe_script() {
  // sysconfig scheme and paths, PEP 508 marker values, tag inputs (glibc, Py_DEBUG, Py_GIL_DISABLED),
  // plus: the PEP 668 marker, conda, site directories on sys.path, soabi.
  static constexpr std::string_view script = R"PY(
import json, os, platform, struct, sys, sysconfig
def fv(i):
    v = "%d.%d.%d" % (i.major, i.minor, i.micro)
    return v + (i.releaselevel[0] + str(i.serial) if i.releaselevel != "final" else "")
try: glibc = os.confstr("CS_GNU_LIBC_VERSION")
except (AttributeError, OSError, ValueError): glibc = None
try: scheme = sysconfig.get_default_scheme()
except AttributeError: scheme = "posix_prefix" if os.name == "posix" else "nt"
paths = sysconfig.get_paths(scheme)
in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix) or hasattr(sys, "real_prefix")
em = None
em_file = os.path.join(sysconfig.get_path("stdlib", scheme), "EXTERNALLY-MANAGED")
if os.path.isfile(em_file):
    msg = ""
    try:
        import configparser
        cp = configparser.ConfigParser(interpolation=None)
        cp.read(em_file, encoding="utf-8")
        msg = cp.get("externally-managed", "Error", fallback="")
    except Exception:
        pass
    em = {"path": em_file, "message": msg}
site = [p for p in sys.path if p and os.path.isdir(p)]
print(json.dumps({
  "markers": {"implementation_name": sys.implementation.name,
    "implementation_version": fv(sys.implementation.version), "os_name": os.name,
    "platform_machine": platform.machine(), "platform_release": platform.release(),
    "platform_system": platform.system(), "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]), "sys_platform": sys.platform},
  "version_info": list(sys.version_info[:5]), "sysconfig_platform": sysconfig.get_platform(),
  "py_version_nodot": sysconfig.get_config_var("py_version_nodot"),
  "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"), "soabi": sysconfig.get_config_var("SOABI"),
  "abiflags": getattr(sys, "abiflags", ""), "py_debug": sysconfig.get_config_var("Py_DEBUG"),
  "gil_disabled": sysconfig.get_config_var("Py_GIL_DISABLED"),
  "pointer_bits": struct.calcsize("P") * 8, "glibc": glibc, "executable": sys.executable,
  "prefix": sys.prefix, "base_prefix": getattr(sys, "base_prefix", sys.prefix), "in_venv": in_venv,
  "conda_prefix": os.environ.get("CONDA_PREFIX"), "is_conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
  "scheme": scheme, "paths": paths, "site_paths": site, "externally_managed": em}))
)PY";
  return script;
}

std::optional<std::pair<int, int>> parse_glibc(std::string_view text) {
  text = trim(text);
  if (!text.starts_with("glibc ")) return std::nullopt;
  auto v = text.substr(6);
  auto dot = v.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  int a = 0, b = 0;
  auto r1 = std::from_chars(v.data(), v.data() + dot, a);
  auto r2 = std::from_chars(v.data() + dot + 1, v.data() + v.size(), b);
  if (r1.ec != std::errc{} || r1.ptr != v.data() + dot || r2.ec != std::errc{}) return std::nullopt;
  return std::pair{a, b};
}

namespace {

std::string str_or(const nlohmann::json& j, const char* key, std::string def = {}) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return def;
  return it->get<std::string>();
}

std::string impl_tag(std::string_view implementation_name) {
  if (implementation_name == "cpython") return "cp";
  if (implementation_name == "pypy") return "pp";
  if (implementation_name == "ironpython") return "ip";
  if (implementation_name == "jython") return "jy";
  return std::string(implementation_name);
}

Expected<PythonInfo> parse_python_probe_json(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(ErrorCode::invalid_input, util::msg("interpreter probe output is not a JSON object"));
  PythonInfo info;
  info.executable = str_or(j, "executable");
  if (info.executable.empty())
    return make_error(ErrorCode::invalid_input, util::msg("interpreter probe output lacks 'executable'"));
  auto markers = j.find("markers");
  if (markers == j.end() || !markers->is_object())
    return make_error(ErrorCode::invalid_input, util::msg("interpreter probe output lacks 'markers'"));
  for (auto& [k, v] : markers->items())
    if (v.is_string()) info.markers.values[k] = v.get<std::string>();
  std::string full =
      info.markers.values.count("python_full_version") ? info.markers.values["python_full_version"] : std::string();
  if (full.empty()) return make_error(ErrorCode::invalid_input, util::msg("interpreter probe lacks python_full_version"));
  auto ver = specs::Version::parse(full);
  if (!ver) return std::unexpected(std::move(ver.error()).context(util::msg("interpreter probe: bad python_full_version")));
  info.version = *ver;
  info.implementation =
      info.markers.values.count("implementation_name") ? info.markers.values["implementation_name"] : std::string("cpython");
  info.prefix = str_or(j, "prefix");
  info.base_prefix = str_or(j, "base_prefix", info.prefix.string());
  if (auto it = j.find("in_venv"); it != j.end() && it->is_boolean())
    info.is_venv = it->get<bool>();
  else
    info.is_venv = info.prefix != info.base_prefix;
  if (auto it = j.find("is_conda"); it != j.end() && it->is_boolean()) info.is_conda = it->get<bool>();
  if (auto it = j.find("paths"); it != j.end() && it->is_object()) {
    for (auto& [k, v] : it->items())
      if (v.is_string()) info.scheme[k] = v.get<std::string>();
    // "include" is the install scheme's header dir; keep the api.md name too.
    if (info.scheme.count("include") && !info.scheme.count("headers")) info.scheme["headers"] = info.scheme["include"];
  }
  if (auto it = j.find("site_paths"); it != j.end() && it->is_array())
    for (auto& p : *it)
      if (p.is_string()) info.site_paths.emplace_back(p.get<std::string>());
  info.soabi = str_or(j, "soabi");
  // Tag environment.
  auto& te = info.tag_env;
  te.implementation = impl_tag(info.implementation);
  const auto& rel = info.version.release();
  te.major = rel.size() > 0 ? static_cast<int>(rel[0]) : 3;
  te.minor = rel.size() > 1 ? static_cast<int>(rel[1]) : 0;
  te.abiflags = str_or(j, "abiflags");
  // A free-threaded build (PEP 703) says so in Py_GIL_DISABLED; sys.abiflags, which carries the 't' on
  // POSIX, does not exist on Windows.
  if (auto it = j.find("gil_disabled");
      it != j.end() && it->is_number_integer() && it->get<int>() == 1 && te.abiflags.find('t') == std::string::npos)
    te.abiflags += 't';
  te.arch = info.markers.values.count("platform_machine") ? info.markers.values["platform_machine"] : "x86_64";
  if (auto it = j.find("glibc"); it != j.end() && it->is_string()) te.glibc = parse_glibc(it->get<std::string>());
  // PEP 668: the marker counts only outside a venv.
  if (auto it = j.find("externally_managed"); it != j.end() && it->is_object()) {
    if (!info.is_venv) {
      info.externally_managed = true;
      info.externally_managed_message = str_or(*it, "message");
    }
  }
  return info;
}

std::string real_path(const fs::path& p) {
  char* r = ::realpath(p.c_str(), nullptr);
  if (!r) return {};
  std::string out(r);
  std::free(r);
  return out;
}

// The venv a bin/python belongs to: the directory above bin/ when it holds pyvenv.cfg.
std::optional<fs::path> venv_of(const fs::path& python) {
  std::error_code ec;
  auto dir = fs::absolute(python, ec).parent_path().parent_path();
  if (ec || !fs::is_regular_file(dir / "pyvenv.cfg", ec)) return std::nullopt;
  return dir;
}

// An entry is keyed by the interpreter's identity (issue 42: keyed by its path, a planted entry chose
// the install scheme and the program run): the path asked for (a venv's bin/python is a symlink to its
// base; the venv is known by where the link is), what it resolves to with that file's device, inode,
// size and mtime, and the content of the venv's pyvenv.cfg.
fs::path cache_file(const fs::path& cache_dir, const fs::path& python) {
  std::error_code ec;
  const fs::path abs = fs::absolute(python, ec);
  const std::string real = real_path(python);
  std::string key = fmt::format("v2|{}|{}", abs.string(), real);
  struct stat st = {};
  if (!real.empty() && ::stat(real.c_str(), &st) == 0)
    key += fmt::format("|{}:{}|{}|{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  if (auto venv = venv_of(python))
    if (auto cfg = util::read_file(*venv / "pyvenv.cfg")) key += "|cfg " + util::sha256_hex(*cfg);
  return cache_dir / "interpreters" / (util::sha256_hex(key).substr(0, 32) + ".json");
}

bool under(const fs::path& p, const fs::path& root) {
  std::error_code ec;
  const auto a = fs::weakly_canonical(p, ec);
  if (ec) return false;
  const auto b = fs::weakly_canonical(root, ec);
  if (ec || b.empty()) return false;
  auto [r, _] = std::mismatch(b.begin(), b.end(), a.begin(), a.end());
  return r == b.end();
}

} // namespace

std::optional<std::string> inconsistent_probe(const PythonInfo& info, const fs::path& python) {
  const std::string real = real_path(python);
  if (real.empty() || real_path(info.executable) != real)
    return fmt::format("its executable {} is not {}", info.executable.string(), python.string());
  if (auto venv = venv_of(python); venv && !under(info.prefix, *venv))
    return fmt::format("its prefix {} is not the venv {}", info.prefix.string(), venv->string());
  if (info.prefix.empty()) return std::string("it names no prefix");
  for (const char* k : {"purelib", "platlib", "scripts", "data"})
    if (auto it = info.scheme.find(k); it != info.scheme.end() && !under(it->second, info.prefix))
      return fmt::format("its {} {} is outside its prefix {}", k, it->second.string(), info.prefix.string());
  return std::nullopt;
}

namespace {} // namespace

Expected<PythonInfo> parse_python_probe(std::string_view json_text) {
  try {
    auto j = nlohmann::json::parse(json_text);
    return parse_python_probe_json(j);
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::invalid_input, "interpreter probe output is not JSON: {}", e.what());
  }
}

std::vector<fs::path> site_directories(const PythonInfo& python) {
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& p) {
    if (p.empty()) return;
    std::error_code ec;
    if (!fs::is_directory(p, ec)) return;
    auto canon = fs::weakly_canonical(p, ec);
    if (ec) canon = p;
    if (seen.insert(canon).second) out.push_back(p);
  };
  for (const char* k : {"purelib", "platlib"})
    if (auto it = python.scheme.find(k); it != python.scheme.end()) add(it->second);
  for (const auto& p : python.site_paths) {
    // Only site directories: the stdlib and zip files hold no distributions worth reporting.
    auto s = p.filename().string();
    if (s == "site-packages" || s == "dist-packages") add(p);
  }
  return out;
}

std::optional<fs::path> parse_shebang_interpreter(std::string_view head) {
  if (!head.starts_with("#!")) return std::nullopt;
  auto lines = split_lines(head);
  auto first = trim(lines[0].substr(2));
  // pip's launcher for paths with spaces or too long: #!/bin/sh + '''exec' "/path/python" "$0" "$@"
  if ((first == "/bin/sh" || first == "/usr/bin/sh") && lines.size() > 1) {
    auto l = trim(lines[1]);
    if (l.starts_with("'''exec' ")) {
      l.remove_prefix(9);
      if (l.starts_with('"')) {
        auto end = l.find('"', 1);
        if (end != std::string_view::npos) return fs::path(l.substr(1, end - 1));
      }
      auto toks = split_ws(l);
      if (!toks.empty()) return fs::path(toks[0]);
    }
    return std::nullopt;
  }
  auto toks = split_ws(first);
  if (toks.empty()) return std::nullopt;
  // "#!/usr/bin/env python3": the interpreter is whatever python3 is on PATH.
  if (toks[0] == "/usr/bin/env" && toks.size() > 1) {
    if (auto p = util::find_in_path(std::string(toks[1]))) return *p;
    return fs::path(toks[1]);
  }
  return fs::path(toks[0]);
}

Expected<PythonInfo> probe_python(const fs::path& python, const fs::path& cache_dir, std::chrono::milliseconds timeout) {
  std::error_code ec;
  if (!fs::exists(python, ec))
    return make_error(ErrorCode::not_found, util::msg("interpreter not found: {}", python.string()),
                      util::msg("pass --python PATH (an interpreter or a venv directory)"));
  fs::path cached;
  if (!cache_dir.empty()) {
    cached = cache_file(cache_dir, python);
    // Only this user's own entry (util/cache_trust.hpp), and only one that describes this interpreter:
    // a damaged or inconsistent entry is probed afresh and rewritten below.
    if (auto text = util::read_trusted(cached))
      if (auto info = parse_python_probe(*text); info && !inconsistent_probe(*info, python)) return info;
  }
  util::SubprocessOptions opt;
  opt.timeout = timeout;
  // The probe must describe the interpreter, not a PYTHONPATH leaking from our own environment.
  opt.unset_env = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"};
  auto r = util::run_python(python, {"-c", std::string(python_probe_script())}, opt);
  if (!r) return std::unexpected(std::move(r.error()).context(util::msg("could not run {}", python.string())));
  if (!r->ok()) {
    auto why = r->timed_out ? std::string("timed out") : fmt::format("exit code {}", r->exit_code);
    return make_error(ErrorCode::subprocess,
                      util::msg("interpreter probe of {} failed ({}): {}", python.string(), why, trim(r->err).substr(0, 400)),
                      util::msg("check that it is a working Python 3 interpreter"));
  }
  auto info = parse_python_probe(r->out);
  if (!info) return std::unexpected(std::move(info.error()).context(util::msg("probing {}", python.string())));
  if (!cached.empty() && !inconsistent_probe(*info, python)) { // else a later run would only reject it
    if (util::create_directories(cached.parent_path())) (void)util::write_file_atomic(cached, r->out);
  }
  return info;
}

} // namespace envfix::probe
