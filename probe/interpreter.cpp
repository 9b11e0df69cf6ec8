#include "probe/interpreter.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>

#include <fmt/format.h>

#include "util/env.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace envfix::probe {

namespace fs = std::filesystem;

namespace {

// "3.12.1" → {3, 12, 1}; nullopt unless 1–3 dot-separated numbers.
std::optional<std::vector<int>> release_of(std::string_view text) {
  std::vector<int> out;
  for (const auto& part : util::split(text, '.')) {
    int n = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), n);
    if (ec != std::errc() || end != part.data() + part.size()) return std::nullopt;
    out.push_back(n);
  }
  if (out.empty() || out.size() > 3 || text.ends_with('.')) return std::nullopt;
  return out;
}

// The version an interpreter reports (-I -S: nothing of site-packages or the directory runs).
std::optional<std::vector<int>> reported_version(const fs::path& python, const fs::path& cwd) {
  util::SubprocessOptions o;
  o.cwd = cwd;
  o.timeout = std::chrono::seconds(60);
  auto r = util::run_process({python.string(), "-I", "-S", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"}, o);
  if (!r || !r->ok()) return std::nullopt;
  return release_of(util::trim(r->out));
}

fs::path home_dir() { return util::get_env(util::Env::home).value_or(""); }

fs::path pyenv_root() {
  if (auto r = util::get_env(util::Env::pyenv_root); r && !r->empty()) return *r;
  return home_dir().empty() ? fs::path() : home_dir() / ".pyenv";
}

fs::path uv_python_dir() {
  if (auto d = util::get_env(util::Env::uv_python_install_dir); d && !d->empty()) return *d;
  if (auto x = util::get_env(util::Env::xdg_data_home); x && !x->empty()) return fs::path(*x) / "uv" / "python";
  return home_dir().empty() ? fs::path() : home_dir() / ".local/share/uv/python";
}

// The interpreters under `root`'s version folders whose name gives a matching CPython release,
// newest first: <root>/<dir>/bin/python3.X.
std::vector<std::pair<std::vector<int>, fs::path>> installed_under(const fs::path& root, const VersionRequest& want) {
  std::vector<std::pair<std::vector<int>, fs::path>> out;
  std::error_code ec;
  if (root.empty() || !fs::is_directory(root, ec)) return out;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    auto v = cpython_dir_version(e.path().filename().string());
    if (!v || !want.matches(*v)) continue;
    const fs::path exe = e.path() / "bin" / fmt::format("python{}.{}", (*v)[0], (*v)[1]); // cpython_dir_version: 3 numbers
    if (fs::exists(exe, ec)) out.emplace_back(*v, exe);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

} // namespace

bool VersionRequest::matches(const std::vector<int>& version) const {
  if (version.size() < release.size()) return false;
  return std::equal(release.begin(), release.end(), version.begin());
}

std::string VersionRequest::to_string() const {
  std::vector<std::string> parts;
  for (int n : release) parts.push_back(std::to_string(n));
  return util::join(parts, ".");
}

std::optional<VersionRequest> parse_version_request(std::string_view text) {
  for (std::string_view prefix : {"cpython@", "cpython", "python"})
    if (text.starts_with(prefix)) {
      text.remove_prefix(prefix.size());
      break;
    }
  auto r = release_of(text);
  if (!r || (*r)[0] != 3) return std::nullopt;
  return VersionRequest{*r};
}

std::optional<std::vector<int>> cpython_dir_version(std::string_view name) {
  if (name.starts_with("cpython-")) {
    name.remove_prefix(8);
    name = name.substr(0, name.find('-'));
  }
  auto r = release_of(name);
  if (!r || r->size() != 3 || (*r)[0] != 3) return std::nullopt;
  return r;
}

bool is_shim(const fs::path& path) {
  if (path.parent_path().filename() != "shims") return false;
  std::ifstream in(path, std::ios::binary);
  char head[2] = {};
  return in.read(head, 2) && head[0] == '#' && head[1] == '!';
}

Expected<fs::path> resolve_shim(const fs::path& shim, const fs::path& cwd) {
  util::SubprocessOptions o;
  o.cwd = cwd;
  o.timeout = std::chrono::seconds(60);
  auto r = ENVFIX_TRY(util::run_process({shim.string(), "-I", "-S", "-c", "import sys; sys.stdout.write(sys.executable)"}, o));
  if (!r.ok() || r.out.empty())
    return make_error(
        ErrorCode::not_found,
        util::msg("{} is a shim that runs no interpreter in {}: {}", shim.string(), cwd.string(),
                  std::string(util::trim(r.err.empty() ? r.out : r.err))),
        util::msg("install the version the directory asks for (pyenv install, see .python-version), or pass --python PATH"));
  return fs::path(r.out);
}

Expected<FoundInterpreter> find_python_version(const VersionRequest& want, const fs::path& cwd) {
  const std::string minor = want.release.size() > 1 ? fmt::format("python3.{}", want.release[1]) : "python3";
  if (auto p = util::find_in_path(minor)) {
    auto exe = is_shim(*p) ? resolve_shim(*p, cwd) : Expected<fs::path>(*p);
    if (exe)
      if (auto v = reported_version(*exe, cwd); v && want.matches(*v))
        return FoundInterpreter{*exe, fmt::format("{} on PATH", minor)};
  }
  if (auto pyenv = installed_under(pyenv_root() / "versions", want); !pyenv.empty())
    return FoundInterpreter{pyenv.front().second,
                            fmt::format("pyenv's {}", pyenv.front().second.parent_path().parent_path().filename().string())};
  if (auto uv = installed_under(uv_python_dir(), want); !uv.empty())
    return FoundInterpreter{uv.front().second,
                            fmt::format("uv's {}", uv.front().second.parent_path().parent_path().filename().string())};
  return make_error(
      ErrorCode::not_found,
      fmt::format("no Python {} found: not {} on PATH, not in pyenv's {} nor in uv's {}", want.to_string(), minor,
                  (pyenv_root() / "versions").string(), uv_python_dir().string()),
      fmt::format("install it (`uv python install {0}` or `pyenv install {0}`), or pass --python PATH", want.to_string()));
}

std::optional<fs::path> project_venv(const fs::path& cwd) {
  std::error_code ec;
  for (fs::path dir = fs::absolute(cwd, ec);; dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / ".venv" / "pyvenv.cfg", ec)) return dir / ".venv";
    if (dir == dir.parent_path()) return std::nullopt;
  }
}

} // namespace envfix::probe
