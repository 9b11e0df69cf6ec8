// YAML → Knowledge. Every problem of every file is collected (file:line:column, the key path) and
// reported at once; unknown keys are errors; nothing falls back silently. yaml-cpp stays in this file.
#include <algorithm>
#include <set>

#include <yaml-cpp/yaml.h>

#include "matrices/knowledge.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

namespace envfix::matrices {

namespace {

const std::vector<std::string> k_platforms = {"linux_x86_64", "linux_aarch64", "windows_x86_64"};
const std::vector<std::string> k_channels = {"stable", "test", "nightly"};
const std::vector<std::string> k_kinds = {"cuda", "cpu", "rocm", "xpu"};

std::string join(const std::vector<std::string>& v) { return util::join(v, ", "); }

bool contains(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

} // namespace

class Loader {
public:
  explicit Loader(Knowledge& k) : m_k(k) {}

  void load_file(const Knowledge::SourceFile& f) {
    m_file = f.name;
    YAML::Node root;
    try {
      root = YAML::Load(f.text);
    } catch (const YAML::Exception& e) {
      // ParserException: the mark is where the syntax broke.
      problem_at(e.mark.line, e.mark.column, fmt::format("YAML syntax error: {}", e.msg));
      return;
    }
    try {
      load_root(root);
    } catch (const YAML::Exception& e) {
      // Should not happen (every access is type-checked first), but never let it escape.
      problem_at(e.mark.line, e.mark.column, fmt::format("unexpected YAML structure: {}", e.msg));
    }
  }

  void validate();

  std::vector<std::string> problems;

private:
  Knowledge& m_k;
  std::string m_file;
  // Names each file defined, to reject duplicates inside one file.
  std::set<std::string> m_gpu_names_this_file;

  // --- error helpers -------------------------------------------------------------------------
  void problem_at(int line0, int col0, std::string msg) {
    if (line0 < 0) { // yaml-cpp uses -1 for "no position"
      problems.push_back(fmt::format("{}: {}", m_file, msg));
      return;
    }
    problems.push_back(fmt::format("{}:{}:{}: {}", m_file, line0 + 1, col0 + 1, msg));
  }
  void problem(const YAML::Node& n, const std::string& path, std::string msg) {
    auto m = n.Mark();
    problem_at(m.line, m.column, fmt::format("{}: {}", path, msg));
  }
  SourceLocation where(const YAML::Node& n) const {
    auto m = n.Mark();
    return SourceLocation{m_file, m.line + 1, m.column + 1};
  }
  static std::string type_name(const YAML::Node& n) {
    switch (n.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
    }
  }
  bool expect_map(const YAML::Node& n, const std::string& path) {
    if (n.IsMap()) return true;
    problem(n, path, fmt::format("expected a mapping, found {}", type_name(n)));
    return false;
  }
  bool expect_list(const YAML::Node& n, const std::string& path) {
    if (n.IsSequence()) return true;
    problem(n, path, fmt::format("expected a list, found {}", type_name(n)));
    return false;
  }

  // Iterate a mapping: reject unknown and duplicate keys, call fn(key, value) for the known ones.
  template <class Fn>
  void each_key(const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed, Fn fn) {
    std::set<std::string> seen;
    for (auto kv : map) { // by value: yaml-cpp's operator-> proxy trips GCC 12's dangling-pointer check
      const YAML::Node key = kv.first;
      const YAML::Node value = kv.second;
      if (!key.IsScalar()) {
        problem(key, path, "keys must be strings");
        continue;
      }
      std::string k = key.Scalar();
      if (!seen.insert(k).second) {
        problem(key, path, fmt::format("duplicate key '{}'", k));
        continue;
      }
      if (!allowed.empty() && !contains(allowed, k)) {
        problem(key, path, fmt::format("unknown key '{}' (allowed: {})", k, join(allowed)));
        continue;
      }
      fn(k, value, key);
    }
  }
  // Iterate a mapping with free keys (names): duplicates rejected.
  template <class Fn>
  void each_entry(const YAML::Node& map, const std::string& path, Fn fn) {
    each_key(map, path, {}, fn);
  }

  std::optional<std::string> str(const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) return n.Scalar();
    problem(n, path, fmt::format("expected a string, found {}", type_name(n)));
    return std::nullopt;
  }
  std::string nonempty(const YAML::Node& n, const std::string& path) {
    auto s = str(n, path);
    if (s && s->empty()) problem(n, path, "must not be empty");
    return s.value_or("");
  }
  std::vector<std::string> str_list(const YAML::Node& n, const std::string& path) {
    std::vector<std::string> out;
    if (!expect_list(n, path)) return out;
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (auto s = str(n[i], fmt::format("{}[{}]", path, i))) out.push_back(*s);
    }
    return out;
  }
  std::optional<Confidence> confidence(const YAML::Node& n, const std::string& path) {
    auto s = str(n, path);
    if (!s) return std::nullopt;
    if (*s == "verified") return Confidence::verified;
    if (*s == "secondary") return Confidence::secondary;
    if (*s == "unverified") return Confidence::unverified;
    problem(n, path, fmt::format("unknown confidence '{}' (allowed: verified, secondary, unverified)", *s));
    return std::nullopt;
  }
  std::optional<specs::Version> version(const YAML::Node& n, const std::string& path) {
    auto s = str(n, path);
    if (!s) return std::nullopt;
    auto v = specs::Version::parse(*s);
    if (!v) {
      problem(n, path, fmt::format("invalid version '{}': {}", *s, v.error().message));
      return std::nullopt;
    }
    return *v;
  }
  std::optional<specs::CudaVersion> cuda_version(const YAML::Node& n, const std::string& path) {
    auto s = str(n, path);
    if (!s) return std::nullopt;
    auto v = specs::CudaVersion::parse(*s);
    if (!v) {
      problem(n, path, fmt::format("invalid CUDA version '{}': {}", *s, v.error().message));
      return std::nullopt;
    }
    return *v;
  }
  std::string driver(const YAML::Node& n, const std::string& path) {
    auto s = str(n, path);
    if (!s) return "";
    if (!is_driver_version(*s)) {
      problem(n, path, fmt::format("invalid driver version '{}' (expected digits and dots, e.g. 570.26)", *s));
      return "";
    }
    return *s;
  }
  std::optional<std::vector<specs::GpuArch>> arch_list(const YAML::Node& n, const std::string& path, specs::GpuArch::Kind kind) {
    if (!expect_list(n, path)) return std::nullopt;
    std::vector<specs::GpuArch> out;
    for (std::size_t i = 0; i < n.size(); ++i) {
      std::string p = fmt::format("{}[{}]", path, i);
      auto s = str(n[i], p);
      if (!s) continue;
      auto a = specs::GpuArch::parse(*s);
      if (!a) {
        problem(n[i], p, fmt::format("unknown arch: {}", a.error().message));
        continue;
      }
      if (a->kind != kind) {
        problem(n[i], p,
                fmt::format("'{}' is a {} target; this list takes {} targets ({})", *s, specs::to_string(a->kind),
                            specs::to_string(kind), kind == specs::GpuArch::Kind::sass ? "sm_XY" : "compute_XY"));
        continue;
      }
      if (std::find(out.begin(), out.end(), *a) != out.end()) {
        problem(n[i], p, fmt::format("'{}' listed twice", *s));
        continue;
      }
      out.push_back(*a);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // --- sections ------------------------------------------------------------------------------
  void load_root(const YAML::Node& root) {
    if (root.IsNull()) {
      problem_at(-1, -1, "empty file (expected at least 'schema: 1')");
      return;
    }
    if (!expect_map(root, "(top level)")) return;
    if (!root["schema"]) problem(root, "(top level)", "missing key 'schema' (write 'schema: 1')");
    each_key(root, "(top level)", {"schema", "frameworks", "cuda_toolkits", "gpus", "l4t"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               if (k == "schema") {
                 auto s = str(v, "schema");
                 if (s && *s != "1") problem(v, "schema", fmt::format("unsupported schema '{}' (this envfix reads 1)", *s));
               } else if (k == "frameworks") {
                 if (!expect_map(v, "frameworks")) return;
                 each_entry(v, "frameworks", [&](const std::string& name, const YAML::Node& fv, const YAML::Node& key) {
                   load_framework(name, fv, key);
                 });
               } else if (k == "cuda_toolkits") {
                 if (!expect_map(v, "cuda_toolkits")) return;
                 each_entry(v, "cuda_toolkits", [&](const std::string& name, const YAML::Node& tv, const YAML::Node& key) {
                   load_toolkit(name, tv, key);
                 });
               } else if (k == "gpus") {
                 if (!expect_list(v, "gpus")) return;
                 for (std::size_t i = 0; i < v.size(); ++i) load_gpu(v[i], fmt::format("gpus[{}]", i));
               } else if (k == "l4t") {
                 if (!expect_list(v, "l4t")) return;
                 for (std::size_t i = 0; i < v.size(); ++i) load_l4t(v[i], fmt::format("l4t[{}]", i));
               }
             });
  }

  void load_toolkit(const std::string& name, const YAML::Node& n, const YAML::Node& key) {
    std::string path = "cuda_toolkits." + name;
    auto ver = cuda_version(key, path);
    if (!expect_map(n, path) || !ver) return;
    CudaToolkit t;
    t.version = *ver;
    t.where = where(key);
    bool has_min = false, has_sass = false, has_source = false, has_conf = false;
    auto os_pair = [&](const YAML::Node& v, const std::string& p, std::string& lin, std::string& win) {
      if (!expect_map(v, p)) return;
      if (!v["linux"]) problem(v, p, "missing key 'linux'");
      each_key(v, p, {"linux", "windows"}, [&](const std::string& k, const YAML::Node& d, const YAML::Node&) {
        (k == "linux" ? lin : win) = driver(d, p + "." + k);
      });
    };
    each_key(n, path, {"min_driver", "updates", "minor_compat", "ptx_isa", "sass", "confidence", "source"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "min_driver") {
                 has_min = true;
                 os_pair(v, p, t.min_driver_linux, t.min_driver_windows);
               } else if (k == "updates") {
                 if (!expect_map(v, p)) return;
                 each_entry(v, p, [&](const std::string& u, const YAML::Node& uv, const YAML::Node&) {
                   std::pair<std::string, std::string> d;
                   os_pair(uv, p + "." + u, d.first, d.second);
                   t.updates[u] = d;
                 });
               } else if (k == "minor_compat") {
                 os_pair(v, p, t.minor_compat_linux, t.minor_compat_windows);
               } else if (k == "ptx_isa") {
                 t.ptx_isa = str(v, p).value_or("");
               } else if (k == "sass") {
                 has_sass = true;
                 t.sass = arch_list(v, p, specs::GpuArch::Kind::sass).value_or(std::vector<specs::GpuArch>{});
               } else if (k == "confidence") {
                 has_conf = true;
                 t.confidence = confidence(v, p).value_or(Confidence::unverified);
               } else if (k == "source") {
                 has_source = true;
                 t.source = nonempty(v, p);
               }
             });
    // A toolkit whose GA driver is not confirmed (13.4) may give only its minor-compatibility floor.
    if (!has_min && t.minor_compat_linux.empty()) problem(key, path, "missing key 'min_driver'");
    if (!has_sass) problem(key, path, "missing key 'sass'");
    if (!has_conf) problem(key, path, "missing key 'confidence'");
    if (!has_source) problem(key, path, "missing key 'source'");
    auto it =
        std::find_if(m_k.m_toolkits.begin(), m_k.m_toolkits.end(), [&](const CudaToolkit& x) { return x.version == t.version; });
    if (it != m_k.m_toolkits.end()) {
      if (it->where.file == m_file) {
        problem(key, path, fmt::format("duplicate toolkit (first defined at {})", it->where.to_string()));
        return;
      }
      *it = std::move(t); // a later file replaces the row
    } else {
      m_k.m_toolkits.push_back(std::move(t));
    }
  }

  void load_gpu(const YAML::Node& n, const std::string& path) {
    if (!expect_map(n, path)) return;
    specs::ComputeCapability cc;
    bool has_cc = false;
    std::vector<std::string> names, aliases, socs;
    std::string family, segment, source;
    Confidence conf = Confidence::unverified;
    bool has_conf = false, has_source = false, has_family = false;
    each_key(n, path, {"cc", "family", "segment", "names", "aliases", "soc", "confidence", "source"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "cc") {
                 auto s = str(v, p);
                 if (!s) return;
                 auto c = specs::ComputeCapability::parse(*s);
                 if (!c)
                   problem(v, p, fmt::format("invalid compute capability '{}': {}", *s, c.error().message));
                 else {
                   cc = *c;
                   has_cc = true;
                 }
               } else if (k == "family") {
                 has_family = true;
                 family = nonempty(v, p);
               } else if (k == "segment")
                 segment = str(v, p).value_or("");
               else if (k == "names")
                 names = str_list(v, p);
               else if (k == "aliases")
                 aliases = str_list(v, p);
               else if (k == "soc")
                 socs = str_list(v, p);
               else if (k == "confidence") {
                 has_conf = true;
                 conf = confidence(v, p).value_or(conf);
               } else if (k == "source") {
                 has_source = true;
                 source = nonempty(v, p);
               }
             });
    if (!n["cc"]) problem(n, path, "missing key 'cc'");
    if (!has_family) problem(n, path, "missing key 'family'");
    if (!has_conf) problem(n, path, "missing key 'confidence'");
    if (!has_source) problem(n, path, "missing key 'source'");
    if (names.empty()) problem(n, path, "missing or empty key 'names'");
    if (!has_cc) return;
    cc.tegra = segment == "jetson"; // Jetson parts are Tegra: their own SASS rule (specs/gpu_arch.hpp)
    for (const auto& nm : names) {
      GpuProduct g{nm, aliases, cc, family, segment, conf, source, socs};
      std::vector<std::string> keys = {normalize_gpu_name(nm)};
      for (const auto& a : aliases) keys.push_back(normalize_gpu_name(a));
      for (const auto& key : keys) {
        // The same name twice in one file is a typo unless it agrees (aliases repeat per entry).
        for (const auto& other : m_k.m_gpus) {
          if (other.cc == cc) continue;
          bool clash = normalize_gpu_name(other.name) == key;
          for (const auto& a : other.aliases) clash = clash || normalize_gpu_name(a) == key;
          if (clash && m_gpu_names_this_file.contains(key))
            problem(n, path, fmt::format("GPU name '{}' already maps to {} in this file", key, other.cc.to_string()));
        }
        m_gpu_names_this_file.insert(key);
      }
      m_k.m_gpus.push_back(std::move(g));
    }
  }

  void load_l4t(const YAML::Node& n, const std::string& path) {
    if (!expect_map(n, path)) return;
    L4tRelease r;
    bool has_cuda = false, has_conf = false;
    each_key(n, path, {"release", "jetpack", "cuda", "driver", "soc", "indexes", "confidence", "source"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "release")
                 r.release = nonempty(v, p);
               else if (k == "jetpack")
                 r.jetpack = nonempty(v, p);
               else if (k == "cuda") {
                 if (auto c = cuda_version(v, p)) {
                   r.cuda = *c;
                   has_cuda = true;
                 }
               } else if (k == "driver")
                 r.driver = driver(v, p);
               else if (k == "soc")
                 r.socs = str_list(v, p);
               else if (k == "indexes") {
                 if (!expect_map(v, p)) return;
                 each_entry(v, p, [&](const std::string& fw, const YAML::Node& u, const YAML::Node&) {
                   r.indexes[fw] = nonempty(u, p + "." + fw);
                 });
               } else if (k == "confidence") {
                 has_conf = true;
                 r.confidence = confidence(v, p).value_or(r.confidence);
               } else if (k == "source")
                 r.source = nonempty(v, p);
             });
    for (const char* need : {"release", "jetpack", "source"})
      if (!n[need]) problem(n, path, fmt::format("missing key '{}'", need));
    if (!has_cuda) problem(n, path, "missing key 'cuda'");
    if (!has_conf) problem(n, path, "missing key 'confidence'");
    // A later row of the same release (an --matrices override, loaded after the embedded files)
    // corrects the earlier one, as the README says overrides do.
    auto same = std::find_if(m_k.m_l4t.begin(), m_k.m_l4t.end(), [&](const L4tRelease& o) { return o.release == r.release; });
    if (same != m_k.m_l4t.end())
      *same = std::move(r);
    else
      m_k.m_l4t.push_back(std::move(r));
  }

  void load_framework(const std::string& name, const YAML::Node& n, const YAML::Node& key) {
    std::string path = "frameworks." + name;
    if (!expect_map(n, path)) return;
    auto it = std::find_if(m_k.m_frameworks.begin(), m_k.m_frameworks.end(), [&](const Framework& f) { return f.name == name; });
    if (it == m_k.m_frameworks.end()) {
      Framework f;
      f.name = name;
      f.where = where(key);
      m_k.m_frameworks.push_back(std::move(f));
      it = std::prev(m_k.m_frameworks.end());
    }
    Framework& f = *it;
    each_key(n, path,
             {"main_package", "companions", "optional_companions", "default_mirror", "channels", "nightly_coupling", "source",
              "variants", "smoke", "releases", "coupling", "support_ends"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "main_package")
                 f.main_package = nonempty(v, p);
               else if (k == "companions")
                 f.companions = str_list(v, p);
               else if (k == "optional_companions")
                 f.optional_companions = str_list(v, p);
               else if (k == "default_mirror")
                 f.default_mirror = nonempty(v, p);
               else if (k == "source")
                 f.source = nonempty(v, p);
               else if (k == "nightly_coupling") {
                 auto s = str(v, p);
                 if (s && *s != "same-build-date" && *s != "none")
                   problem(v, p, fmt::format("unknown nightly coupling '{}' (allowed: same-build-date, none)", *s));
                 else if (s)
                   f.nightly_coupling = *s == "none" ? "" : *s;
               } else if (k == "channels") {
                 if (!expect_map(v, p)) return;
                 each_key(v, p, k_channels, [&](const std::string& ch, const YAML::Node& tv, const YAML::Node&) {
                   std::string t = nonempty(tv, p + "." + ch);
                   if (!t.empty() && t.find("{mirror}") == std::string::npos && t.find("://") == std::string::npos)
                     problem(tv, p + "." + ch, fmt::format("template '{}' has neither {{mirror}} nor a URL scheme", t));
                   for (std::size_t at = t.find('{'); at != std::string::npos; at = t.find('{', at + 1)) {
                     auto close = t.find('}', at);
                     std::string ph = close == std::string::npos ? t.substr(at) : t.substr(at, close - at + 1);
                     if (ph != "{mirror}" && ph != "{variant}")
                       problem(tv, p + "." + ch, fmt::format("unknown placeholder '{}' (allowed: {{mirror}}, {{variant}})", ph));
                   }
                   f.channel_templates[ch] = t;
                 });
               } else if (k == "variants") {
                 if (!expect_map(v, p)) return;
                 each_entry(v, p, [&](const std::string& vn, const YAML::Node& vv, const YAML::Node& vkey) {
                   load_variant(f, vn, vv, vkey, p + "." + vn);
                 });
               } else if (k == "smoke") {
                 load_smoke(f, v, p);
               } else if (k == "releases") {
                 if (!expect_list(v, p)) return;
                 for (std::size_t i = 0; i < v.size(); ++i) load_release(f, v[i], fmt::format("{}[{}]", p, i));
               } else if (k == "coupling") {
                 if (!expect_list(v, p)) return;
                 for (std::size_t i = 0; i < v.size(); ++i) load_coupling(f, v[i], fmt::format("{}[{}]", p, i));
               } else if (k == "support_ends") {
                 if (!expect_list(v, p)) return;
                 for (std::size_t i = 0; i < v.size(); ++i) load_support_end(f, v[i], fmt::format("{}[{}]", p, i));
               }
             });
  }

  void load_variant(Framework& f, const std::string& name, const YAML::Node& n, const YAML::Node& key, const std::string& path) {
    if (!expect_map(n, path)) return;
    Variant v;
    v.name = name;
    v.where = where(key);
    bool explicit_kind = false;
    each_key(n, path, {"kind", "cuda", "rocm", "extra", "main_package", "packages", "kernels"},
             [&](const std::string& k, const YAML::Node& x, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "kind") {
                 auto s = str(x, p);
                 if (s && !contains(k_kinds, *s))
                   problem(x, p, fmt::format("unknown kind '{}' (allowed: {})", *s, join(k_kinds)));
                 else if (s) {
                   v.kind = *s;
                   explicit_kind = true;
                 }
               } else if (k == "cuda")
                 v.cuda = cuda_version(x, p);
               else if (k == "rocm")
                 v.rocm = nonempty(x, p);
               else if (k == "extra")
                 v.extra = str(x, p).value_or("");
               else if (k == "main_package")
                 v.main_package = nonempty(x, p);
               else if (k == "packages")
                 v.packages = str_list(x, p);
               else if (k == "kernels")
                 v.kernels = str_list(x, p);
             });
    if (!explicit_kind && !v.rocm.empty()) v.kind = "rocm";
    if (v.kind == "cuda" && !v.cuda && !n["cuda"])
      problem(key, path, "a CUDA variant needs 'cuda: \"X.Y\"' (or set 'kind: cpu|rocm|xpu')");
    if (v.kind != "cuda" && n["cuda"])
      problem(n["cuda"], path + ".cuda", fmt::format("a {} variant has no CUDA version", v.kind));
    auto it = std::find_if(f.variants.begin(), f.variants.end(), [&](const Variant& x) { return x.name == name; });
    if (it != f.variants.end())
      *it = std::move(v); // a later file redefines the variant
    else
      f.variants.push_back(std::move(v));
  }

  void load_smoke(Framework& f, const YAML::Node& n, const std::string& path) {
    if (!expect_map(n, path)) return;
    each_key(n, path, {"step_a", "step_b", "companions", "cpu", "model"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "step_a")
                 f.smoke.step_a = nonempty(v, p);
               else if (k == "step_b")
                 f.smoke.step_b = nonempty(v, p);
               else if (k == "companions")
                 load_checks(f.smoke.companions, v, p);
               else if (k == "model")
                 load_checks(f.smoke.model, v, p);
               else if (k == "cpu") {
                 if (!expect_map(v, p)) return;
                 each_key(v, p, {"step", "companions"}, [&](const std::string& ck, const YAML::Node& cv, const YAML::Node&) {
                   if (ck == "step")
                     f.smoke.cpu = nonempty(cv, p + ".step");
                   else
                     load_checks(f.smoke.cpu_companions, cv, p + ".companions");
                 });
               }
             });
  }

  void load_checks(std::map<std::string, std::string>& out, const YAML::Node& n, const std::string& path) {
    if (!expect_map(n, path)) return;
    each_entry(n, path,
               [&](const std::string& c, const YAML::Node& cv, const YAML::Node&) { out[c] = nonempty(cv, path + "." + c); });
  }

  void load_release(Framework& f, const YAML::Node& n, const std::string& path) {
    if (!expect_map(n, path)) return;
    Release r;
    r.where = where(n);
    bool override_rows = false, has_source = false, has_variants = false;
    each_key(n, path, {"versions", "nightly", "range", "channels", "python", "pypi_default", "source", "variants", "override"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "versions") {
                 if (!expect_list(v, p)) return;
                 for (std::size_t i = 0; i < v.size(); ++i)
                   if (auto ver = version(v[i], fmt::format("{}[{}]", p, i))) r.versions.push_back(*ver);
                 if (v.size() == 0) problem(v, p, "empty list");
               } else if (k == "nightly") {
                 r.nightly = version(v, p);
                 if (r.nightly && (r.nightly->is_prerelease() || r.nightly->has_local()))
                   problem(v, p, "name the final version the nightlies lead to, e.g. \"2.15.0\"");
               } else if (k == "range") {
                 auto s = str(v, p);
                 if (!s) return;
                 auto set = specs::SpecifierSet::parse(*s);
                 if (!set)
                   problem(v, p, fmt::format("invalid version range '{}': {}", *s, set.error().message));
                 else if (set->empty())
                   problem(v, p, "empty range");
                 else
                   r.range = *set;
               } else if (k == "channels") {
                 r.channels = str_list(v, p);
                 for (const auto& c : r.channels)
                   if (!contains(k_channels, c))
                     problem(v, p, fmt::format("unknown channel '{}' (allowed: {})", c, join(k_channels)));
               } else if (k == "python") {
                 r.python = str_list(v, p);
                 for (std::size_t i = 0; i < r.python.size(); ++i) {
                   const auto& t = r.python[i];
                   const bool ft = t.ends_with("t");
                   bool ok = t.size() >= 4 && (t.starts_with("cp") || t.starts_with("pp")) &&
                             std::all_of(t.begin() + 2, t.end() - (ft ? 1 : 0), [](char c) { return c >= '0' && c <= '9'; });
                   if (!ok)
                     problem(v[i], fmt::format("{}[{}]", p, i), fmt::format("invalid Python tag '{}' (e.g. cp312, cp314t)", t));
                   // PEP 703: free-threaded builds are CPython's, from 3.13 on (cp313t); "cp312t" is a typo.
                   else if (ft && (!t.starts_with("cp3") || t.size() < 6 || std::stoi(t.substr(3, t.size() - 4)) < 13))
                     problem(v[i], fmt::format("{}[{}]", p, i),
                             fmt::format(
                                 "invalid Python tag '{}': free-threaded builds (the t) are CPython 3.13 and later (cp313t)", t));
                 }
               } else if (k == "pypi_default")
                 r.pypi_default = str(v, p).value_or("");
               else if (k == "source") {
                 has_source = true;
                 r.source = nonempty(v, p);
               } else if (k == "override") {
                 auto s = str(v, p);
                 if (s && *s != "true" && *s != "false") problem(v, p, "expected true or false");
                 override_rows = s && *s == "true";
               } else if (k == "variants") {
                 has_variants = true;
                 if (!expect_map(v, p)) return;
                 each_entry(v, p, [&](const std::string& vn, const YAML::Node& vv, const YAML::Node& vkey) {
                   load_release_variant(r, vn, vv, vkey, p + "." + vn);
                 });
               }
             });
    int forms = (r.versions.empty() ? 0 : 1) + (r.nightly ? 1 : 0) + (r.range ? 1 : 0);
    int written = (n["versions"] ? 1 : 0) + (n["nightly"] ? 1 : 0) + (n["range"] ? 1 : 0);
    if (written == 0)
      problem(n, path, "missing key: one of 'versions', 'nightly', 'range'");
    else if (written > 1)
      problem(n, path, "give only one of 'versions', 'nightly', 'range'");
    if (!has_source) problem(n, path, "missing key 'source'");
    if (!has_variants) problem(n, path, "missing key 'variants'");
    if (r.channels.empty()) r.channels = {r.nightly ? "nightly" : "stable"};
    if (forms != 1) return;
    // Duplicates (across every file loaded so far) are typos unless the row says `override: true`,
    // in which case the earlier rows give those versions up.
    for (auto& other : f.releases) {
      for (const auto& v : r.versions) {
        auto pos = std::find(other.versions.begin(), other.versions.end(), v);
        if (pos == other.versions.end()) continue;
        if (override_rows)
          other.versions.erase(pos);
        else
          problem(n, path, fmt::format("duplicate release {} (already defined at {})", v.to_string(), other.where.to_string()));
      }
      if (r.nightly && other.nightly && *other.nightly == *r.nightly) {
        if (override_rows)
          other.nightly.reset();
        else
          problem(
              n, path,
              fmt::format("duplicate nightly line {} (already defined at {})", r.nightly->to_string(), other.where.to_string()));
      }
    }
    for (std::size_t i = 0; i < r.versions.size(); ++i)
      for (std::size_t j = i + 1; j < r.versions.size(); ++j)
        if (r.versions[i] == r.versions[j]) problem(n, path, fmt::format("release {} listed twice", r.versions[i].to_string()));
    std::erase_if(f.releases, [](const Release& x) { return x.versions.empty() && !x.nightly && !x.range; });
    f.releases.push_back(std::move(r));
  }

  void load_release_variant(Release& r, const std::string& name, const YAML::Node& n, const YAML::Node& key,
                            const std::string& path) {
    if (!expect_map(n, path)) return;
    ReleaseVariant rv;
    rv.variant = name;
    rv.where = where(key);
    each_key(n, path, k_platforms, [&](const std::string& plat, const YAML::Node& v, const YAML::Node& pkey) {
      std::string p = path + "." + plat;
      if (!expect_map(v, p)) return;
      ArchBuild b;
      b.platform = plat;
      b.where = where(pkey);
      bool has_conf = false, has_source = false;
      each_key(v, p, {"sass", "ptx", "confidence", "source"}, [&](const std::string& k, const YAML::Node& x, const YAML::Node&) {
        std::string q = p + "." + k;
        if (k == "sass")
          b.sass = arch_list(x, q, specs::GpuArch::Kind::sass);
        else if (k == "ptx")
          b.ptx = arch_list(x, q, specs::GpuArch::Kind::ptx);
        else if (k == "confidence") {
          has_conf = true;
          b.confidence = confidence(x, q).value_or(Confidence::unverified);
        } else if (k == "source") {
          has_source = true;
          b.source = nonempty(x, q);
        }
      });
      if (!has_conf) problem(v, p, "missing key 'confidence'");
      if (!has_source) problem(v, p, "missing key 'source'");
      // One list given means the other is known too (empty): "sass: [sm_90]" has no PTX.
      if (b.sass && !b.ptx) b.ptx = std::vector<specs::GpuArch>{};
      if (b.ptx && !b.sass) b.sass = std::vector<specs::GpuArch>{};
      rv.platforms.push_back(std::move(b));
    });
    if (rv.platforms.empty()) problem(key, path, fmt::format("no platform (give one of {})", join(k_platforms)));
    r.variants.push_back(std::move(rv));
  }

  // {from: "2.15.0", below: "7.5", variant: cu126, confidence: secondary, source: "…"}
  void load_support_end(Framework& f, const YAML::Node& n, const std::string& path) {
    if (!expect_map(n, path)) return;
    SupportEnd e;
    e.where = where(n);
    bool has_from = false, has_below = false, has_source = false, has_conf = false;
    each_key(n, path, {"from", "below", "variant", "confidence", "source"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "from") {
                 if (auto x = version(v, p)) {
                   e.from = *x;
                   has_from = true;
                 }
               } else if (k == "below") {
                 auto s = str(v, p);
                 if (!s) return;
                 auto c = specs::ComputeCapability::parse(*s);
                 if (!c)
                   problem(v, p, fmt::format("invalid compute capability '{}'", *s));
                 else {
                   e.below = *c;
                   has_below = true;
                 }
               } else if (k == "variant") {
                 e.variant = nonempty(v, p);
               } else if (k == "confidence") {
                 has_conf = true;
                 e.confidence = confidence(v, p).value_or(Confidence::unverified);
               } else if (k == "source") {
                 has_source = true;
                 e.source = nonempty(v, p);
               }
             });
    if (!has_from && !n["from"]) problem(n, path, "missing key 'from'");
    if (!has_below && !n["below"]) problem(n, path, "missing key 'below'");
    if (!has_conf) problem(n, path, "missing key 'confidence'");
    if (!has_source) problem(n, path, "missing key 'source'");
    f.support_ends.push_back(std::move(e));
  }

  void load_coupling(Framework& f, const YAML::Node& n, const std::string& path) {
    if (!expect_map(n, path)) return;
    Coupling c;
    c.where = where(n);
    bool has_source = false;
    each_key(n, path, {"version", "nightly", "date", "companions", "source"},
             [&](const std::string& k, const YAML::Node& v, const YAML::Node&) {
               std::string p = path + "." + k;
               if (k == "version")
                 c.version = version(v, p);
               else if (k == "nightly")
                 c.nightly = version(v, p);
               else if (k == "date")
                 c.date = str(v, p).value_or("");
               else if (k == "source") {
                 has_source = true;
                 c.source = nonempty(v, p);
               } else if (k == "companions") {
                 if (!expect_map(v, p)) return;
                 each_entry(v, p, [&](const std::string& name, const YAML::Node& cv, const YAML::Node&) {
                   std::string q = p + "." + name;
                   auto ver = version(cv, q);
                   if (ver) c.companions[name] = cv.Scalar();
                 });
               }
             });
    if (!has_source) problem(n, path, "missing key 'source'");
    if (!n["version"] && !n["nightly"]) problem(n, path, "missing key: one of 'version', 'nightly'");
    if (n["version"] && n["nightly"]) problem(n, path, "give only one of 'version', 'nightly'");
    for (const auto& o : f.coupling) {
      if (c.version && o.version && *c.version == *o.version)
        problem(n, path,
                fmt::format("duplicate coupling row for {} (already at {})", c.version->to_string(), o.where.to_string()));
    }
    f.coupling.push_back(std::move(c));
  }
};

// Cross-file checks, after every file is merged: the invariants that catch typos.
void Loader::validate() {
  auto at = [&](const SourceLocation& w, const std::string& msg) {
    problems.push_back(fmt::format("{}: {}", w.to_string(), msg));
  };
  for (const auto& f : m_k.m_frameworks) {
    std::string path = "frameworks." + f.name;
    if (f.main_package.empty()) at(f.where, path + ": missing key 'main_package'");
    if (f.default_mirror.empty()) at(f.where, path + ": missing key 'default_mirror'");
    if (f.channel_templates.empty()) at(f.where, path + ": missing key 'channels'");
    if (f.variants.empty()) at(f.where, path + ": missing key 'variants'");
    if (f.releases.empty()) at(f.where, path + ": no 'releases'");
    if (f.source.empty()) at(f.where, path + ": missing key 'source'");
    if (f.smoke.step_a.empty() || f.smoke.step_b.empty()) at(f.where, path + ": 'smoke' needs step_a and step_b");
    for (const auto& [key, checks] :
         {std::pair{"smoke.companions", &f.smoke.companions}, std::pair{"smoke.cpu.companions", &f.smoke.cpu_companions}})
      for (const auto& [c, code] : *checks)
        if (!contains(f.companions, c) && !contains(f.optional_companions, c))
          at(f.where, fmt::format("{}.{}: '{}' is not a companion of {}", path, key, c, f.name));
    if (f.smoke.cpu.empty() && !f.smoke.cpu_companions.empty())
      at(f.where, path + ".smoke.cpu: companion checks need a 'step' for the framework itself");
    for (const auto& c : f.companions)
      if (!f.smoke.companions.contains(c))
        at(f.where, fmt::format("{}.smoke: no check for companion '{}' (each companion runs its own GPU kernel)", path, c));
    for (const auto& v : f.variants) {
      if (v.cuda && !m_k.toolkit(*v.cuda))
        at(v.where, fmt::format("{}.variants.{}: CUDA {} has no cuda_toolkits row (minimum driver unknown)", path, v.name,
                                v.cuda->to_string()));
    }
    for (const auto& r : f.releases) {
      for (const auto& c : r.channels)
        if (!f.channel_templates.contains(c))
          at(r.where, fmt::format("{}: release {} is on channel '{}', which the framework does not define", path, r.label(), c));
      if (!r.pypi_default.empty() && !r.variant(r.pypi_default))
        at(r.where, fmt::format("{}: release {}: pypi_default '{}' is not one of its variants", path, r.label(), r.pypi_default));
      for (const auto& rv : r.variants) {
        const Variant* var = f.variant(rv.variant);
        if (!var) {
          at(rv.where, fmt::format("{}: release {}: unknown variant '{}' (declare it under frameworks.{}.variants)", path,
                                   r.label(), rv.variant, f.name));
          continue;
        }
        const CudaToolkit* tk = var->cuda ? m_k.toolkit(*var->cuda) : nullptr;
        for (const auto& b : rv.platforms) {
          if (var->kind != "cuda" && b.known() && (!b.sass->empty() || !b.ptx->empty()))
            at(b.where,
               fmt::format("{}: release {} {}: {} variant with CUDA arch lists", path, r.label(), rv.variant, var->kind));
          if (!tk) continue;
          for (const auto* list : {&b.sass, &b.ptx}) {
            if (!*list) continue;
            for (const auto& a : **list)
              if (!tk->can_target(a))
                at(b.where, fmt::format("{}: release {} {}.{}: CUDA {} cannot build {}", path, r.label(), rv.variant, b.platform,
                                        tk->version.to_string(), a.to_string()));
          }
        }
      }
    }
    for (const auto& e : f.support_ends)
      if (!e.variant.empty() && !f.variant(e.variant))
        at(e.where, fmt::format("{}.support_ends: variant '{}' is not declared under variants", path, e.variant));
    for (const auto& c : f.coupling) {
      for (const auto& [name, ver] : c.companions)
        if (!contains(f.companions, name) && !contains(f.optional_companions, name))
          at(c.where, fmt::format("{}.coupling: '{}' is not a companion of {}", path, name, f.name));
      if (c.version && !f.release(*c.version))
        at(c.where,
           fmt::format("{}.coupling: {} {} is not a release of {} (typo?)", path, f.name, c.version->to_string(), f.name));
      if (c.nightly) {
        bool found = std::any_of(f.releases.begin(), f.releases.end(),
                                 [&](const Release& r) { return r.nightly && *r.nightly == *c.nightly; });
        if (!found) at(c.where, fmt::format("{}.coupling: no nightly line {} in releases", path, c.nightly->to_string()));
      }
    }
  }
  for (const auto& t : m_k.m_toolkits) {
    if (!t.min_driver_linux.empty() && !t.minor_compat_linux.empty() &&
        compare_driver_versions(t.minor_compat_linux, t.min_driver_linux) > 0)
      at(t.where, fmt::format("cuda_toolkits.{}: minor_compat {} is above min_driver {}", t.version.to_string(),
                              t.minor_compat_linux, t.min_driver_linux));
  }
}

Expected<Knowledge> Knowledge::load_from(const std::vector<SourceFile>& files) {
  Knowledge k;
  Loader loader(k);
  for (const auto& f : files) loader.load_file(f);
  if (loader.problems.empty()) loader.validate();
  if (!loader.problems.empty()) {
    Error e{
        ErrorCode::invalid_input,
        fmt::format("invalid matrices data: {} problem{}", loader.problems.size(), loader.problems.size() == 1 ? "" : "s"),
        loader.problems,
        "fix the YAML named above (schema: matrices/README.md); an override directory comes from --matrices or ENVFIX_MATRICES"};
    return std::unexpected(std::move(e));
  }
  return k;
}

} // namespace envfix::matrices
