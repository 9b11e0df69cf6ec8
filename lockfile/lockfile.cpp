#include "lockfile/lockfile.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>

#include "specs/name.hpp"
#include "specs/version.hpp"
#include "specs/wheel_filename.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

namespace envfix::lockfile {

namespace {

bool looks_special(std::string_view s) {
  if (s.empty()) return true;
  static const std::set<std::string, std::less<>> words = {"true", "false", "null", "yes",  "no",  "on", "off",  "~",
                                                           "True", "False", "Null", "NULL", "Yes", "No", "TRUE", "FALSE"};
  if (words.count(s)) return true;
  // Anything a YAML 1.1/1.2 reader could take for a number ("3.10", "570.26", "1e5").
  bool numeric = true;
  for (char c : s)
    numeric = numeric && (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == 'e' ||
                          c == 'E' || c == '_');
  if (numeric) return true;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) continue;
    if (std::string_view("._+-/:@%=~").find(c) != std::string_view::npos) continue;
    return true;
  }
  // A leading indicator or ": " / " #" sequences need quotes; the allowed set above excludes spaces.
  // A trailing ':' would make the value read as a mapping key (found by fuzzing).
  return std::string_view("-:@%~").find(s.front()) != std::string_view::npos || s.back() == ':';
}

// One string value: yaml-cpp's emitter decides quoting and escaping; double quotes are forced on what a
// YAML 1.1 reader would take for another type ("570.26", "3.10", "yes"), which the emitter writes plain.
void scalar(YAML::Emitter& e, std::string_view s) {
  if (looks_special(s)) e << YAML::DoubleQuoted;
  e << std::string(s);
}

void flow_list(YAML::Emitter& e, const std::vector<std::string>& items) {
  e << YAML::Flow << YAML::BeginSeq;
  for (const auto& i : items) scalar(e, i);
  e << YAML::EndSeq;
}

void key(YAML::Emitter& e, const char* k) { e << YAML::Key << k << YAML::Value; }

// `k: v`, a string value.
void entry(YAML::Emitter& e, const char* k, std::string_view v) {
  key(e, k);
  scalar(e, v);
}

void sort_lock(LockFile& lock) {
  std::sort(lock.targets.begin(), lock.targets.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  for (auto& t : lock.targets) {
    std::sort(t.packages.begin(), t.packages.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    std::sort(t.installed_only.begin(), t.installed_only.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    std::sort(t.host.gpus.begin(), t.host.gpus.end());
  }
}

// A lockfile's filename becomes a path in the download cache: it must be one plain path component
// that parses as a wheel name of this package (docs/lockfile.md). Returns what is wrong, or "".
std::string filename_problem(const std::string& filename, const std::string& name) {
  std::string shown = util::escape_control(filename);
  if (filename == "." || filename == ".." || filename.find('/') != std::string::npos || filename.find('\\') != std::string::npos)
    return fmt::format("filename '{}' must be a file name, not a path", shown);
  for (char ch : filename)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      return fmt::format("filename '{}' contains a control character", shown);
  auto wf = specs::WheelFilename::parse(filename);
  if (!wf) return fmt::format("filename '{}' is not a wheel file name", shown);
  if (!name.empty() && wf->normalized_name() != specs::normalize_name(name))
    return fmt::format("filename '{}' is a wheel of {}, not of {}", shown, wf->normalized_name(), name);
  return {};
}

// Collects every problem in a lockfile before failing, so the user fixes them in one pass.
class Checker {
public:
  explicit Checker(std::string_view source) : m_source(source) {}

  void problem(const YAML::Node& n, std::string msg) {
    const auto m = n.Mark();
    if (m.is_null())
      m_problems.push_back(fmt::format("{}: {}", m_source, msg));
    else
      m_problems.push_back(fmt::format("{}:{}:{}: {}", m_source, m.line + 1, m.column + 1, msg));
  }

  void allow_keys(const YAML::Node& map, std::initializer_list<std::string_view> keys, std::string_view where) {
    if (!map.IsMap()) return;
    for (const auto& kv : map) {
      auto k = kv.first.as<std::string>("");
      if (std::find(keys.begin(), keys.end(), k) == keys.end())
        problem(kv.first, fmt::format("unknown key '{}' in {}", k, where));
    }
  }

  std::string str(const YAML::Node& map, std::string_view key, std::string_view where, bool required = true) {
    YAML::Node n = map[std::string(key)];
    if (!n) {
      if (required) problem(map, fmt::format("{}: missing '{}'", where, key));
      return {};
    }
    if (!n.IsScalar()) {
      problem(n, fmt::format("{}: '{}' must be a string", where, key));
      return {};
    }
    return n.Scalar();
  }

  std::vector<std::string> str_list(const YAML::Node& map, std::string_view key, std::string_view where, bool required = true) {
    YAML::Node n = map[std::string(key)];
    std::vector<std::string> out;
    if (!n) {
      if (required) problem(map, fmt::format("{}: missing '{}'", where, key));
      return out;
    }
    if (!n.IsSequence()) {
      problem(n, fmt::format("{}: '{}' must be a list", where, key));
      return out;
    }
    for (const auto& item : n) {
      if (item.IsScalar())
        out.push_back(item.Scalar());
      else
        problem(item, fmt::format("{}: '{}' items must be strings", where, key));
    }
    return out;
  }

  [[nodiscard]] bool ok() const { return m_problems.empty(); }
  [[nodiscard]] Error error() const {
    return Error::made(
        ErrorCode::invalid_input,
        m_problems.size() == 1 ? util::msg("{} is not a valid envfix lockfile (1 problem)", m_source)
                               : util::msg("{} is not a valid envfix lockfile ({} problems)", m_source, m_problems.size()),
        util::plains(m_problems), util::msg("fix the lines named above, or regenerate the file with `envfix lock`"));
  }

private:
  std::string m_source;
  std::vector<std::string> m_problems;
};

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

} // namespace

std::string make_target_id(const LockedHost& host) {
  std::vector<std::string> gpus = host.gpus;
  std::sort(gpus.begin(), gpus.end());
  std::string g = gpus.empty() ? "cpu" : fmt::format("{}", fmt::join(gpus, "+"));
  std::string py = host.python;
  py.erase(std::remove(py.begin(), py.end(), '.'), py.end());
  return fmt::format("{}-cp{}-{}", g, py, host.platform.empty() ? "any" : host.platform);
}

void keep_learned(LockTarget& fresh, const LockTarget& old) {
  for (auto& p : fresh.packages)
    for (const auto& op : old.packages) {
      if (op.name != p.name || op.sha256 != p.sha256) continue;
      if (!p.size) p.size = op.size;
      if (op.kernels && op.kernels->verified && !(p.kernels && p.kernels->verified)) p.kernels = op.kernels;
    }
}

void LockFile::upsert(LockTarget target) {
  for (auto& t : targets)
    if (t.id == target.id) {
      t = std::move(target);
      return;
    }
  targets.push_back(std::move(target));
}

const LockTarget* LockFile::find(std::string_view id) const {
  for (const auto& t : targets)
    if (t.id == id) return &t;
  return nullptr;
}

namespace {

void emit_packages(YAML::Emitter& e, const LockTarget& t) {
  key(e, "packages");
  e << YAML::BeginSeq;
  for (const auto& p : t.packages) {
    e << YAML::BeginMap;
    entry(e, "name", p.name);
    entry(e, "version", p.version);
    entry(e, "filename", p.filename);
    entry(e, "url", strip_credentials(p.url));
    entry(e, "sha256", p.sha256);
    if (p.size) {
      key(e, "size");
      e << *p.size;
    }
    if (p.kernels) {
      key(e, "kernels");
      e << YAML::Flow << YAML::BeginMap;
      key(e, "sass");
      flow_list(e, p.kernels->sass);
      key(e, "ptx");
      flow_list(e, p.kernels->ptx);
      key(e, "verified");
      e << YAML::TrueFalseBool << p.kernels->verified << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
  if (t.installed_only.empty()) return;
  key(e, "installed-only");
  e << YAML::BeginSeq;
  for (const auto& p : t.installed_only) {
    e << YAML::BeginMap;
    entry(e, "name", p.name);
    entry(e, "version", p.version);
    entry(e, "provenance", p.provenance);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

// A key whose value is left out when empty.
void optional(YAML::Emitter& e, const char* k, std::string_view v) {
  if (!v.empty()) entry(e, k, v);
}

void emit_target(YAML::Emitter& e, const LockTarget& t) {
  e << YAML::BeginMap;
  entry(e, "id", t.id);
  key(e, "host");
  e << YAML::BeginMap;
  key(e, "gpus");
  flow_list(e, t.host.gpus);
  optional(e, "driver-min", t.host.driver_min);
  entry(e, "python", t.host.python);
  entry(e, "platform", t.host.platform);
  e << YAML::EndMap;
  optional(e, "channel", t.channel);
  entry(e, "index", strip_credentials(t.index));
  optional(e, "variant", t.variant);
  emit_packages(e, t);
  if (const auto& v = t.verified_on) {
    key(e, "verified-on");
    e << YAML::BeginMap;
    key(e, "gpus");
    flow_list(e, v->gpus);
    optional(e, "driver", v->driver);
    optional(e, "cuda-runtime", v->cuda_runtime);
    optional(e, "toolkit", v->toolkit);
    entry(e, "interpreter", v->interpreter);
    optional(e, "environment", v->environment);
    key(e, "smoke");
    flow_list(e, v->smoke);
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
}

} // namespace

std::string LockFile::to_yaml() const {
  LockFile l = *this;
  sort_lock(l);
  YAML::Emitter e;
  e << YAML::BeginMap;
  key(e, "lock-version");
  e << l.lock_version;
  entry(e, "created-by", l.created_by);
  optional(e, "framework", l.framework);
  key(e, "request");
  flow_list(e, l.request);
  key(e, "targets");
  e << YAML::BeginSeq;
  for (const auto& t : l.targets) emit_target(e, t);
  e << YAML::EndSeq << YAML::EndMap;
  return "# envfix lockfile: commit it; reproduce with `envfix apply --locked`. Generated, do not edit.\n" +
         std::string(e.c_str()) + "\n";
}

namespace {

// parent[key] when it is there and a mapping (a list); when it is there as something else, a problem
// naming `where`, and an undefined node as when it is absent.
YAML::Node optional_node(Checker& c, const YAML::Node& parent, const char* key, YAML::NodeType::value type,
                         const std::string& where) {
  YAML::Node n = parent[key];
  if (!n || n.Type() == type) return n;
  c.problem(n, fmt::format("{}: '{}' must be a {}", where, key, type == YAML::NodeType::Map ? "mapping" : "list"));
  return YAML::Node(YAML::NodeType::Undefined);
}

// `host:` of a target.
void parse_host(Checker& c, const YAML::Node& tn, const std::string& where, LockTarget& t) {
  YAML::Node hn = tn["host"];
  if (!hn || !hn.IsMap()) {
    c.problem(hn ? hn : tn, where + ": 'host' must be a mapping");
    return;
  }
  c.allow_keys(hn, {"gpus", "driver-min", "python", "platform"}, where + " host");
  t.host.gpus = c.str_list(hn, "gpus", where + " host");
  t.host.driver_min = c.str(hn, "driver-min", where + " host", false);
  t.host.python = c.str(hn, "python", where + " host");
  t.host.platform = c.str(hn, "platform", where + " host");
}

// `verified-on:` of a target (optional).
void parse_verified_on(Checker& c, const YAML::Node& tn, const std::string& where, LockTarget& t) {
  YAML::Node vn = optional_node(c, tn, "verified-on", YAML::NodeType::Map, where);
  if (!vn) return;
  const std::string vw = where + " verified-on";
  c.allow_keys(vn, {"gpus", "driver", "cuda-runtime", "toolkit", "interpreter", "environment", "smoke"}, vw);
  VerifiedOn vo;
  vo.gpus = c.str_list(vn, "gpus", vw);
  vo.driver = c.str(vn, "driver", vw, false);
  vo.cuda_runtime = c.str(vn, "cuda-runtime", vw, false);
  vo.toolkit = c.str(vn, "toolkit", vw, false);
  vo.interpreter = c.str(vn, "interpreter", vw);
  vo.environment = c.str(vn, "environment", vw, false);
  vo.smoke = c.str_list(vn, "smoke", vw);
  t.verified_on = std::move(vo);
}

// `kernels:` of a package (optional).
void parse_kernels(Checker& c, const YAML::Node& pn, const std::string& pw, LockedPackage& p) {
  YAML::Node kn = optional_node(c, pn, "kernels", YAML::NodeType::Map, pw);
  if (!kn) return;
  c.allow_keys(kn, {"sass", "ptx", "verified"}, pw + " kernels");
  LockedKernels k;
  k.sass = c.str_list(kn, "sass", pw + " kernels");
  k.ptx = c.str_list(kn, "ptx", pw + " kernels");
  YAML::Node vn = kn["verified"];
  if (vn && (!vn.IsScalar() || !YAML::convert<bool>::decode(vn, k.verified)))
    c.problem(vn, pw + ": 'verified' must be true or false");
  p.kernels = std::move(k);
}

// One entry of `packages:` (a mapping); `names` catches duplicates within the target.
LockedPackage parse_package(Checker& c, const YAML::Node& pn, const std::string& where, std::set<std::string>& names) {
  LockedPackage p;
  c.allow_keys(pn, {"name", "version", "filename", "url", "sha256", "size", "kernels"}, where + " package");
  p.name = c.str(pn, "name", where + " package");
  std::string pw = fmt::format("package '{}' in {}", p.name, where);
  if (!p.name.empty() && !names.insert(specs::normalize_name(p.name)).second) c.problem(pn["name"], "duplicate " + pw);
  p.version = c.str(pn, "version", pw);
  p.filename = c.str(pn, "filename", pw);
  if (!p.filename.empty())
    if (auto why = filename_problem(p.filename, p.name); !why.empty()) c.problem(pn["filename"], pw + ": " + why);
  p.url = c.str(pn, "url", pw);
  p.sha256 = c.str(pn, "sha256", pw);
  if (!p.sha256.empty() && !is_hex64(p.sha256))
    c.problem(pn["sha256"], fmt::format("{}: sha256 must be 64 lower-case hex digits", pw));
  // `size` is optional (unknown when the index gave none and nothing was downloaded); the
  // `size: 0` older envfix wrote for "unknown" reads as unknown too.
  if (YAML::Node sn = pn["size"]) {
    std::uint64_t n = 0;
    if (!sn.IsScalar() || !YAML::convert<std::uint64_t>::decode(sn, n))
      c.problem(sn, fmt::format("{}: 'size' must be a byte count", pw));
    else if (n > 0)
      p.size = n;
  }
  parse_kernels(c, pn, pw, p);
  return p;
}

// `installed-only:` of a target (optional); names share `names` with the packages.
void parse_installed_only(Checker& c, const YAML::Node& tn, const std::string& where, std::set<std::string>& names,
                          LockTarget& t) {
  YAML::Node io = optional_node(c, tn, "installed-only", YAML::NodeType::Sequence, where);
  if (!io) return;
  for (const YAML::Node& en : io) {
    if (!en.IsMap()) {
      c.problem(en, where + ": each installed-only entry must be a mapping");
      continue;
    }
    c.allow_keys(en, {"name", "version", "provenance"}, where + " installed-only entry");
    InstalledOnly e;
    e.name = c.str(en, "name", where + " installed-only entry");
    std::string ew = fmt::format("installed-only '{}' in {}", e.name, where);
    if (!e.name.empty() && !names.insert(specs::normalize_name(e.name)).second) c.problem(en["name"], "duplicate " + ew);
    e.version = c.str(en, "version", ew);
    e.provenance = c.str(en, "provenance", ew, false);
    t.installed_only.push_back(std::move(e));
  }
}

// One entry of `targets:` (a mapping); `ids` catches duplicate target ids.
LockTarget parse_target(Checker& c, const YAML::Node& tn, std::set<std::string>& ids) {
  LockTarget t;
  c.allow_keys(tn, {"id", "host", "channel", "index", "variant", "packages", "installed-only", "verified-on"}, "a target");
  t.id = c.str(tn, "id", "a target");
  std::string where = fmt::format("target '{}'", t.id);
  if (!t.id.empty() && !ids.insert(t.id).second) c.problem(tn["id"], fmt::format("duplicate target id '{}'", t.id));
  parse_host(c, tn, where, t);
  parse_verified_on(c, tn, where, t);
  t.channel = c.str(tn, "channel", where, false);
  t.index = c.str(tn, "index", where);
  t.variant = c.str(tn, "variant", where, false);
  YAML::Node pkgs = tn["packages"];
  if (!pkgs || !pkgs.IsSequence()) {
    c.problem(pkgs ? pkgs : tn, where + ": 'packages' must be a list");
    return t;
  }
  std::set<std::string> names;
  for (const YAML::Node& pn : pkgs) {
    if (!pn.IsMap()) {
      c.problem(pn, where + ": each package must be a mapping");
      continue;
    }
    t.packages.push_back(parse_package(c, pn, where, names));
  }
  parse_installed_only(c, tn, where, names, t);
  return t;
}

} // namespace

Expected<LockFile> LockFile::parse(std::string_view text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::invalid_input,
                      util::msg("{}:{}:{}: invalid YAML: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg),
                      util::msg("regenerate the file with `envfix lock`"));
  }
  Checker c(source);
  LockFile lock;
  if (!root.IsMap()) {
    c.problem(root, "the document must be a mapping with lock-version, created-by, request and targets");
    return std::unexpected(c.error());
  }
  try {
    // The version comes first: a file from a newer envfix is refused before anything else is judged.
    YAML::Node v = root["lock-version"];
    if (!v || !v.IsScalar()) {
      c.problem(root, "missing 'lock-version'");
      return std::unexpected(c.error());
    }
    int version = 0;
    if (!YAML::convert<int>::decode(v, version) || version < 1) {
      c.problem(v, fmt::format("'lock-version' must be a positive integer, not '{}'", v.Scalar()));
      return std::unexpected(c.error());
    }
    if (version > current_version)
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}: lock-version {} was written by a newer envfix (this one reads up to {})", source, version,
                                  current_version),
                        util::msg("upgrade envfix, or regenerate the lockfile with this version's `envfix lock`"));
    lock.lock_version = version;
    c.allow_keys(root, {"lock-version", "created-by", "framework", "request", "targets"}, "the lockfile");
    lock.created_by = c.str(root, "created-by", "the lockfile");
    lock.framework = c.str(root, "framework", "the lockfile", false);
    lock.request = c.str_list(root, "request", "the lockfile");
    YAML::Node targets = root["targets"];
    if (!targets || !targets.IsSequence()) {
      c.problem(targets ? targets : root, "'targets' must be a list");
    } else {
      std::set<std::string> ids;
      for (const YAML::Node& tn : targets) {
        if (!tn.IsMap()) {
          c.problem(tn, "each target must be a mapping");
          continue;
        }
        lock.targets.push_back(parse_target(c, tn, ids));
      }
    }
  } catch (const YAML::Exception& e) {
    c.problem(root, fmt::format("unexpected structure: {}", e.msg));
  }
  if (!c.ok()) return std::unexpected(c.error());
  sort_lock(lock);
  return lock;
}

Expected<LockFile> LockFile::read(const std::filesystem::path& path) {
  auto text = util::read_file(path);
  if (!text)
    return std::unexpected(
        std::move(text).error().with_hint(util::msg("create one with `envfix lock`, or name it with --lockfile")));
  return parse(*text, path.string());
}

Expected<void> LockFile::write(const std::filesystem::path& path) const { return util::write_file_atomic(path, to_yaml()); }

util::Message installed_only_warning(const InstalledOnly& p, std::string_view lockfile_path) {
  return util::msg("{}: {} {} is kept as installed, but no index of the set serves it ({}): locked under installed-only "
                   "(`apply --locked` needs it installed at this version; the exports name it without a file)",
                   lockfile_path, p.name, p.version, p.provenance);
}

std::vector<std::string> unmet_installed_only(const LockTarget& target,
                                              const std::vector<std::pair<std::string, std::string>>& installed) {
  std::vector<std::string> out;
  for (const auto& p : target.installed_only) {
    const auto want = specs::Version::parse(p.version);
    std::vector<std::string> have;
    bool ok = false;
    for (const auto& [name, version] : installed) {
      if (specs::normalize_name(name) != specs::normalize_name(p.name)) continue;
      auto v = specs::Version::parse(version);
      ok = ok || (want && v ? *v == *want : version == p.version);
      have.push_back(version);
    }
    if (ok) continue;
    out.push_back(
        fmt::format("{} {} ({}): {}", p.name, p.version, p.provenance,
                    have.empty() ? std::string("not installed") : fmt::format("{} is installed", fmt::join(have, ", "))));
  }
  return out;
}

Expected<void> check_installed_only(const LockTarget& target, const std::vector<std::pair<std::string, std::string>>& installed,
                                    std::string_view lockfile_path) {
  auto unmet = unmet_installed_only(target, installed);
  if (unmet.empty()) return {};
  return std::unexpected(Error::made(
      ErrorCode::invalid_input,
      unmet.size() == 1 ? util::msg("{} target {} keeps 1 package no index serves, and this environment lacks {}", lockfile_path,
                                    target.id, unmet.front())
                        : util::msg("{} target {} keeps {} packages no index serves, and this environment lacks {}",
                                    lockfile_path, target.id, unmet.size(), unmet.front()),
      util::plains(unmet),
      util::msg("install those versions first (from where they came), or re-lock with an index that serves them; nothing "
                "was changed")));
}

namespace {

// What the exports copy out of a lockfile, checked first (lockfile/lockfile.hpp, the exports).
Expected<void> check_exportable(const LockFile& lock, const LockTarget& t) {
  std::string problem;
  auto bad = [&](const std::string& field, std::string_view value, const char* why) {
    if (problem.empty())
      problem = fmt::format("target '{}': {} '{}' {}", util::escape_control(t.id, false), field,
                            util::escape_control(value, false), why);
  };
  auto text = [&](const std::string& field, std::string_view value) {
    for (char ch : value)
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return bad(field, value, "contains a control character");
  };
  text("id", t.id);
  text("created-by", lock.created_by);
  text("index", t.index);
  text("channel", t.channel);
  text("variant", t.variant);
  text("host python", t.host.python);
  text("host platform", t.host.platform);
  for (const auto& g : t.host.gpus) text("host gpus", g);
  auto name_version = [&](const std::string& what, const std::string& name, const std::string& version) {
    text(what + " name", name);
    text(what + " version", version);
    if (!specs::is_valid_project_name(name)) bad(what + " name", name, "is not a valid project name");
    if (!specs::Version::parse(version)) bad(what + " version", version, "is not a valid version");
  };
  for (const auto& p : t.packages) {
    const std::string what = fmt::format("package '{}'", util::escape_control(p.name, false));
    name_version(what, p.name, p.version);
    text(what + " filename", p.filename);
    text(what + " url", p.url);
    text(what + " sha256", p.sha256);
    if (p.kernels)
      for (const auto* list : {&p.kernels->sass, &p.kernels->ptx})
        for (const auto& a : *list) text(what + " kernels", a);
  }
  for (const auto& p : t.installed_only) {
    const std::string what = fmt::format("installed-only '{}'", util::escape_control(p.name, false));
    name_version(what, p.name, p.version);
    text(what + " provenance", p.provenance);
  }
  if (problem.empty()) return {};
  return make_error(ErrorCode::invalid_input, "refusing to export " + problem,
                    "the lockfile was edited by hand or is hostile: regenerate it with `envfix lock`");
}

} // namespace

Expected<std::string> to_pylock_toml(const LockFile& lock, const LockTarget& target) {
  ENVFIX_TRY_VOID(check_exportable(lock, target));
  toml::table root;
  root.insert("lock-version", "1.0");
  // PEP 751: the tool's name ("uv", "pdm"), not its version: the first word of envfix's own
  // "envfix 0.1.0".
  const auto tool_name = lock.created_by.substr(0, lock.created_by.find(' '));
  root.insert("created-by", tool_name.empty() ? std::string("envfix") : tool_name);
  toml::array envs;
  // The platform tag names the machine; the marker keeps other machines from using this file.
  std::string machine = "x86_64";
  if (auto u = target.host.platform.rfind("_aarch64"); u != std::string::npos) machine = "aarch64";
  envs.push_back(fmt::format("sys_platform == 'linux' and platform_machine == '{}'", machine));
  root.insert("environments", std::move(envs));
  if (!target.host.python.empty()) {
    std::string py = target.host.python;
    if (py.ends_with('t')) py.pop_back(); // "3.13t": free-threading is in the wheel tags, not in a version
    root.insert("requires-python", fmt::format("=={}.*", py));
  }
  toml::array packages;
  std::vector<LockedPackage> sorted = target.packages;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& p : sorted) {
    toml::table pt;
    pt.insert("name", p.name);
    pt.insert("version", p.version);
    pt.insert("index", strip_credentials(target.index));
    toml::table wheel;
    wheel.insert("name", p.filename);
    wheel.insert("url", strip_credentials(p.url));
    if (p.size) wheel.insert("size", static_cast<std::int64_t>(*p.size)); // PEP 751: optional
    toml::table hashes;
    hashes.insert("sha256", p.sha256);
    wheel.insert("hashes", std::move(hashes));
    toml::array wheels;
    wheels.push_back(std::move(wheel));
    pt.insert("wheels", std::move(wheels));
    if (p.kernels) {
      toml::table tool, envfix, k;
      toml::array sass, ptx;
      for (const auto& a : p.kernels->sass) sass.push_back(a);
      for (const auto& a : p.kernels->ptx) ptx.push_back(a);
      k.insert("sass", std::move(sass));
      k.insert("ptx", std::move(ptx));
      k.insert("verified", p.kernels->verified);
      envfix.insert("kernels", std::move(k));
      tool.insert("envfix", std::move(envfix));
      pt.insert("tool", std::move(tool));
    }
    packages.push_back(std::move(pt));
  }
  root.insert("packages", std::move(packages));
  toml::table tool, envfix;
  envfix.insert("target", target.id);
  // PEP 751 has no source kind for "already installed": named here, so an installer of this file
  // sees what it does not provide.
  if (!target.installed_only.empty()) {
    toml::array io;
    for (const auto& p : target.installed_only) io.push_back(fmt::format("{}=={} ({})", p.name, p.version, p.provenance));
    envfix.insert("installed-only", std::move(io));
  }
  if (!target.variant.empty()) envfix.insert("variant", target.variant);
  if (!target.channel.empty()) envfix.insert("channel", target.channel);
  toml::array gpus;
  for (const auto& g : target.host.gpus) gpus.push_back(g);
  envfix.insert("gpus", std::move(gpus));
  tool.insert("envfix", std::move(envfix));
  root.insert("tool", std::move(tool));
  std::ostringstream out;
  out << toml::toml_formatter(root, toml::toml_formatter::default_flags & ~toml::format_flags::indentation);
  return out.str() + "\n";
}

Expected<std::string> to_requirements_txt(const LockFile& lock, const LockTarget& target) {
  ENVFIX_TRY_VOID(check_exportable(lock, target));
  std::string o = fmt::format("# Generated by {} from the envfix lockfile, target {}.\n",
                              lock.created_by.empty() ? "envfix" : lock.created_by, target.id);
  o += "# Install with: pip install --require-hashes -r <this file>\n";
  o += fmt::format("--index-url {}\n", strip_credentials(target.index));
  std::vector<LockedPackage> sorted = target.packages;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& p : sorted) o += fmt::format("{}=={} \\\n    --hash=sha256:{}\n", p.name, p.version, p.sha256);
  for (const auto& p : target.installed_only)
    o += fmt::format("# not installed by this file: {}=={} ({}); install it first from where it came\n", p.name, p.version,
                     p.provenance);
  return o;
}

namespace {

// Why a target id cannot be part of a file name ("" when it can).
std::string file_name_problem(std::string_view id) {
  if (id.empty()) return "is empty";
  if (id.find('/') != std::string_view::npos || id.find('\\') != std::string_view::npos) return "contains a path separator";
  if (id.find("..") != std::string_view::npos) return "contains '..'";
  for (char ch : id)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return "contains a control character";
  return {};
}

} // namespace

Expected<std::string> export_file_name(const LockTarget& target, bool pylock, std::string_view lockfile_path) {
  if (auto why = file_name_problem(target.id); !why.empty())
    return make_error(ErrorCode::invalid_input,
                      util::msg("{}: target id '{}' {}; --all names files after target ids", lockfile_path,
                                util::escape_control(target.id, false), why),
                      util::msg("export it alone with --target ID -o FILE, or regenerate the lockfile with `envfix lock`"));
  return pylock ? fmt::format("pylock.{}.toml", target.id) : fmt::format("requirements-{}.txt", target.id);
}

} // namespace envfix::lockfile
