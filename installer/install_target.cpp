#include "installer/install_target.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <system_error>

#include <nlohmann/json.hpp>

#include "probe/host_facts.hpp"
#include "util/fs.hpp"
#include "util/python.hpp"

namespace envfix::installer {

namespace fs = std::filesystem;

namespace {

// Prints the default sysconfig scheme and the PEP 668 marker (EXTERNALLY-MANAGED and its
// message) as JSON.
constexpr const char* k_scheme_script = R"PY(
import json, os, sys, sysconfig
try:
    scheme = sysconfig.get_default_scheme()
except AttributeError:
    scheme = "posix_prefix"
paths = sysconfig.get_paths(scheme)
venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix) or hasattr(sys, "real_prefix")
em_file = os.path.join(sysconfig.get_path("stdlib", scheme), "EXTERNALLY-MANAGED")
em, msg = False, ""
if not venv and os.path.isfile(em_file):
    em = True
    try:
        import configparser
        cp = configparser.ConfigParser(interpolation=None)
        cp.read(em_file, encoding="utf-8")
        msg = cp.get("externally-managed", "Error", fallback="")
    except Exception:
        msg = ""
print(json.dumps({"prefix": sys.prefix, "paths": paths, "venv": venv,
                  "version": "%d.%d" % sys.version_info[:2],
                  "externally_managed": em, "message": msg}))
)PY";

} // namespace

Expected<InstallTarget> InstallTarget::from_interpreter(const fs::path& python) {
  util::SubprocessOptions opt;
  opt.timeout = std::chrono::seconds(60);
  opt.unset_env = {"PYTHONPATH", "PYTHONHOME"};
  auto r = util::run_python(python, {"-c", k_scheme_script}, opt);
  if (!r) return std::unexpected(std::move(r.error()).context(util::msg("running {}", python.string())));
  if (!r->ok())
    return make_error(
        ErrorCode::subprocess,
        fmt::format("{} failed to report its install scheme (exit {}): {}", python.string(), r->exit_code, r->err.substr(0, 500)),
        "check that --python names a working Python interpreter");
  try {
    auto j = nlohmann::json::parse(r->out);
    InstallTarget t;
    t.prefix = j.at("prefix").get<std::string>();
    const auto& p = j.at("paths");
    t.purelib = p.at("purelib").get<std::string>();
    t.platlib = p.at("platlib").get<std::string>();
    t.scripts = p.at("scripts").get<std::string>();
    t.data = p.at("data").get<std::string>();
    t.is_venv = j.at("venv").get<bool>();
    auto version = j.at("version").get<std::string>();
    t.headers = t.is_venv ? t.prefix / "include" / "site" / ("python" + version) : fs::path(p.at("include").get<std::string>());
    // Shebangs name the interpreter as given (venv/bin/python), never its resolved target.
    t.python = python.is_absolute() ? python : fs::absolute(python);
    t.externally_managed = j.at("externally_managed").get<bool>();
    t.externally_managed_message = j.at("message").get<std::string>();
    t.unify_aliases();
    return t;
  } catch (const std::exception& e) {
    return fail(ErrorCode::subprocess, "{}: unreadable scheme report: {}", python.string(), e.what());
  }
}

InstallTarget InstallTarget::from_python_info(const probe::PythonInfo& info) {
  InstallTarget t;
  t.prefix = info.prefix;
  auto get = [&](const char* key) {
    auto it = info.scheme.find(key);
    return it == info.scheme.end() ? fs::path{} : it->second;
  };
  t.purelib = get("purelib");
  t.platlib = get("platlib");
  t.scripts = get("scripts");
  t.data = get("data");
  t.is_venv = info.is_venv;
  const auto& rel = info.version.release();
  std::string xy = rel.size() >= 2 ? fmt::format("{}.{}", rel[0], rel[1]) : "3";
  t.headers = t.is_venv ? info.prefix / "include" / "site" / ("python" + xy) : get("headers");
  t.python = info.executable;
  t.externally_managed = info.externally_managed;
  t.externally_managed_message = info.externally_managed_message;
  t.unify_aliases();
  return t;
}

InstallTarget InstallTarget::for_venv_layout(const fs::path& prefix, int major, int minor) {
  InstallTarget t;
  auto xy = fmt::format("python{}.{}", major, minor);
  t.prefix = prefix;
  t.purelib = t.platlib = prefix / "lib" / xy / "site-packages";
  t.scripts = prefix / "bin";
  t.data = prefix;
  t.headers = prefix / "include" / "site" / xy;
  t.python = prefix / "bin" / "python";
  t.is_venv = true;
  return t;
}

namespace {

bool under(std::string_view p, std::string_view root) {
  return !root.empty() && p.starts_with(root) && (p.size() == root.size() || p[root.size()] == '/');
}

// A component named .envfix-txn-… anywhere in the path.
bool has_txn_component(std::string_view p) { return p.find("/.envfix-txn-") != std::string_view::npos; }

} // namespace

bool InstallTarget::is_envfix_state(std::string_view path, std::string_view resolved) const {
  if (has_txn_component(path) || has_txn_component(resolved)) return true;
  if (prefix.empty()) return false;
  const std::string state = state_dir().lexically_normal().string();
  const std::string state_resolved = resolved_state.empty() ? util::resolve_parent(state) : resolved_state;
  for (const auto& s : {state, state_resolved})
    if (under(path, s) || under(resolved, s)) return true;
  return false;
}

bool InstallTarget::is_interpreter(std::string_view path) const {
  if (!prefix.empty()) {
    const auto cfg = (prefix / "pyvenv.cfg").lexically_normal().string();
    if (path == cfg || util::resolve_parent(path) == util::resolve_parent(cfg)) return true;
  }
  if (python.empty()) return false;
  struct stat a, b;
  // stat() follows links: bin/python, bin/python3 and the real binary are one file.
  return ::stat(std::string(path).c_str(), &a) == 0 && ::stat(python.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

void InstallTarget::unify_aliases() {
  if (!prefix.empty()) resolved_state = util::resolve_parent(state_dir().lexically_normal().string());
  std::vector<std::pair<std::pair<dev_t, ino_t>, fs::path>> seen;
  for (fs::path* p : {&purelib, &platlib, &scripts, &data, &headers}) {
    struct stat st;
    if (p->empty() || ::stat(p->c_str(), &st) != 0) continue;
    std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == id; });
    if (it != seen.end())
      *p = it->second;
    else
      seen.emplace_back(id, *p);
  }
}

fs::path InstallTarget::headers_for(std::string_view dist_name) const { return headers / std::string(dist_name); }

std::vector<fs::path> InstallTarget::roots() const {
  std::vector<fs::path> out;
  for (const auto& p : {purelib, platlib, scripts, data, headers}) {
    if (p.empty()) continue;
    auto n = p.lexically_normal();
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::vector<fs::path> InstallTarget::prune_stops() const {
  std::vector<fs::path> out;
  auto hdr = headers.lexically_normal();
  bool venv_headers = is_venv && !prefix.empty() && hdr == (prefix / "include" / "site" / hdr.filename()).lexically_normal();
  for (const auto& r : roots())
    if (!(venv_headers && r == hdr)) out.push_back(r);
  if (venv_headers) out.push_back((prefix / "include").lexically_normal());
  return out;
}

Expected<void> check_externally_managed(const InstallTarget& target, bool break_system_packages) {
  if (target.is_venv || !target.externally_managed || break_system_packages) return {};
  // The interpreter's own EXTERNALLY-MANAGED text is the distribution's words: shown as it is.
  const auto msg = target.externally_managed_message.empty()
                       ? util::msg("This Python installation is managed by the operating system.")
                       : util::plain(target.externally_managed_message);
  return std::unexpected(Error::made(ErrorCode::invalid_input,
                                     util::msg("{} is externally managed (PEP 668)", target.python.string()), {msg},
                                     util::msg("install into a virtual environment (--venv PATH creates one), or pass "
                                               "--break-system-packages if you really mean to modify it")));
}

Expected<fs::path> create_venv(const fs::path& dir, const fs::path& base_python, bool with_pip) {
  auto python = dir / "bin" / "python";
  std::error_code ec;
  if (fs::exists(dir / "pyvenv.cfg", ec) && fs::exists(python, ec)) return python;
  std::vector<std::string> argv = {"-m", "venv"};
  if (!with_pip) argv.push_back("--without-pip");
  argv.push_back(fs::absolute(dir, ec).string()); // run_python runs it from an empty directory
  util::SubprocessOptions opt;
  opt.timeout = std::chrono::seconds(300);
  auto r = util::run_python(base_python, argv, opt);
  if (!r) return std::unexpected(std::move(r.error()));
  if (!r->ok())
    return make_error(ErrorCode::subprocess,
                      util::msg("'{} -m venv {}' failed (exit {}): {}", base_python.string(), dir.string(), r->exit_code,
                                r->err.substr(0, 800)),
                      util::msg("on Debian/Ubuntu the venv module is in the python3-venv package"));
  if (!fs::exists(python, ec))
    return fail(ErrorCode::subprocess, "'{} -m venv' did not create {}", base_python.string(), python.string());
  return python;
}

} // namespace envfix::installer
