#include "wheel/kernel_evidence.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "specs/name.hpp"
#include "util/cache_trust.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"

namespace envfix::wheel {

namespace fs = std::filesystem;
using nlohmann::json;

std::string BuildKey::to_string() const {
  return fmt::format("{} {} ({}, {})", project, version, variant.empty() ? "variant unknown" : variant, platform);
}

std::string platform_key(const std::vector<std::string>& platform_tags) {
  std::vector<std::string> t = platform_tags;
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  std::string out;
  for (const auto& p : t) out += (out.empty() ? "" : ".") + p;
  return out;
}

BuildKey build_key(const specs::WheelFilename& wf, std::string_view variant) {
  return {specs::normalize_name(wf.name), wf.version.to_string(), std::string(variant), platform_key(wf.platform_tags)};
}

namespace {

std::string key_text(const BuildKey& k) { return fmt::format("{}\n{}\n{}\n{}", k.project, k.version, k.variant, k.platform); }

json key_json(const BuildKey& k) {
  return {{"project", k.project}, {"version", k.version}, {"variant", k.variant}, {"platform", k.platform}};
}

bool is_sha256(std::string_view s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<json> parse_object(std::string_view text) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::optional<json> read_json(const fs::path& p) {
  auto text = util::read_trusted(p);
  if (!text) return std::nullopt;
  return parse_object(*text);
}

Expected<void> write_json(const fs::path& p, const json& j) {
  ENVFIX_TRY_VOID(util::create_directories(p.parent_path()));
  return util::write_file_atomic(p, j.dump());
}

// A string member, checked: nullopt when absent or of another type (never a type_error).
std::optional<std::string> str(const json& j, const char* k) {
  auto it = j.find(k);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// key_json read back: nullopt unless every member is a string.
std::optional<BuildKey> key_from_json(const json& j) {
  if (!j.contains("key") || !j["key"].is_object()) return std::nullopt;
  const auto& k = j["key"];
  auto project = str(k, "project"), version = str(k, "version"), variant = str(k, "variant"), platform = str(k, "platform");
  if (!project || !version || !variant || !platform) return std::nullopt;
  return BuildKey{*project, *version, *variant, *platform};
}

std::optional<BuildEvidence> build_from_json(const json& j) {
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array()) return std::nullopt;
  auto key = key_from_json(j);
  if (!key) return std::nullopt;
  BuildEvidence e;
  e.key = std::move(*key);
  e.source = str(j, "source").value_or("");
  e.sha256 = str(j, "sha256").value_or("");
  if (!e.sha256.empty() && !is_sha256(e.sha256)) return std::nullopt;
  for (const auto& f : j["files"]) {
    if (!f.is_object() || !f.contains("profile")) return std::nullopt;
    auto path = str(f, "path");
    if (!path) return std::nullopt;
    auto p = KernelProfile::from_json(f["profile"]);
    if (!p) return std::nullopt;
    e.files.push_back({*path, std::move(*p)});
  }
  return e;
}

// Belt to the checked reads above: a profile parser that still throws drops the record, never aborts.
template <class F>
auto checked(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

} // namespace

std::optional<BuildEvidence> parse_build_record(std::string_view text) {
  auto j = parse_object(text);
  if (!j) return std::nullopt;
  return checked([&] { return build_from_json(*j); });
}

namespace {

fs::path file_record(const fs::path& dir, std::string_view file_hash) {
  return dir / "files" / (util::sha256_hex(file_hash) + ".json");
}

// What a file record's MAC covers: the hash it is filed under and the profile, as stored.
std::string file_mac(std::string_view secret, std::string_view file_hash, const json& profile) {
  return util::hmac_sha256_hex(secret, fmt::format("envfix kernel evidence, file\n{}\n{}", file_hash, profile.dump()));
}

} // namespace

std::optional<KernelProfile> EvidenceStore::file(std::string_view file_hash) const {
  if (m_secret.empty()) return std::nullopt;
  auto j = read_json(file_record(m_dir, file_hash));
  if (!j || str(*j, "hash") != std::optional<std::string>(std::string(file_hash)) || !j->contains("profile")) return std::nullopt;
  const auto mac = str(*j, "mac");
  if (!mac || !util::equal_in_constant_time(*mac, file_mac(m_secret, file_hash, (*j)["profile"]))) return std::nullopt;
  return checked([&]() -> std::optional<KernelProfile> {
    auto p = KernelProfile::from_json((*j)["profile"]);
    if (!p) return std::nullopt;
    return *p;
  });
}

bool EvidenceStore::has_file(std::string_view file_hash) const {
  std::error_code ec;
  return fs::exists(fs::symlink_status(file_record(m_dir, file_hash), ec));
}

Expected<void> EvidenceStore::put_file(std::string_view file_hash, const KernelProfile& p) const {
  const auto profile = p.to_json();
  json j{{"hash", file_hash}, {"profile", profile}};
  if (!m_secret.empty()) j["mac"] = file_mac(m_secret, file_hash, profile);
  return write_json(file_record(m_dir, file_hash), j);
}

std::optional<BuildEvidence> EvidenceStore::build(std::string_view wheel_sha256) const {
  if (!is_sha256(wheel_sha256)) return std::nullopt;
  auto j = read_json(m_dir / "builds" / (std::string(wheel_sha256) + ".json"));
  if (!j) return std::nullopt;
  auto e = checked([&] { return build_from_json(*j); });
  if (!e || e->sha256 != wheel_sha256) return std::nullopt; // a record of another file
  return e;
}

Expected<void> EvidenceStore::put_build(const BuildEvidence& e) const {
  if (!e.sha256.empty() && !is_sha256(e.sha256)) return fail(ErrorCode::internal, "evidence: '{}' is not a sha256", e.sha256);
  json files = json::array();
  for (const auto& f : e.files) files.push_back({{"path", f.path}, {"profile", f.profile.to_json()}});
  json j{{"key", key_json(e.key)}, {"source", e.source}, {"files", files}};
  if (e.sha256.empty()) return write_json(m_dir / "installed" / (util::sha256_hex(key_text(e.key)) + ".json"), j);
  j["sha256"] = e.sha256;
  return write_json(m_dir / "builds" / (e.sha256 + ".json"), j);
}

std::vector<BuildEvidence> EvidenceStore::builds() const {
  std::vector<BuildEvidence> out;
  for (const char* sub : {"builds", "installed"}) {
    std::error_code ec;
    for (fs::directory_iterator it(m_dir / sub, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() != ".json") continue;
      auto j = read_json(it->path());
      if (!j) continue;
      auto e = checked([&] { return build_from_json(*j); });
      // A record is listed only under its own name: builds/<its sha256>, installed/<hash of its key>.
      const std::string stem = it->path().stem().string();
      if (e && (std::string_view(sub) == "builds" ? e->sha256 == stem
                                                  : e->sha256.empty() && stem == util::sha256_hex(key_text(e->key))))
        out.push_back(std::move(*e));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

namespace {

std::string observation_name(const RunObservation& o) {
  return util::sha256_hex(fmt::format("{}\n{}\n{}", key_text(o.key), o.record_sha256, o.cc.spec())) + ".json";
}

std::optional<RunObservation> observation_from_json(const json& j) {
  if (!j.contains("ran") || !j["ran"].is_boolean()) return std::nullopt;
  auto key = key_from_json(j);
  auto record = str(j, "record_sha256"), device_cc = str(j, "cc");
  if (!key || !record || !is_sha256(*record) || !device_cc) return std::nullopt;
  auto cc = specs::ComputeCapability::parse(*device_cc);
  if (!cc) return std::nullopt;
  return RunObservation{std::move(*key),
                        *record,
                        *cc,
                        str(j, "device").value_or(""),
                        j["ran"].get<bool>(),
                        str(j, "step").value_or(""),
                        str(j, "error").value_or(""),
                        str(j, "when").value_or(""),
                        str(j, "by").value_or("")};
}

} // namespace

Expected<void> EvidenceStore::put_observation(const RunObservation& o) const {
  if (!is_sha256(o.record_sha256)) return fail(ErrorCode::internal, "evidence: '{}' is not a sha256", o.record_sha256);
  return write_json(m_dir / "observations" / observation_name(o), {{"key", key_json(o.key)},
                                                                   {"record_sha256", o.record_sha256},
                                                                   {"cc", o.cc.spec()},
                                                                   {"device", o.device},
                                                                   {"ran", o.ran},
                                                                   {"step", o.step},
                                                                   {"error", o.error},
                                                                   {"when", o.when},
                                                                   {"by", o.by}});
}

std::vector<RunObservation> EvidenceStore::observations(const BuildKey& key, std::string_view record_sha256) const {
  std::vector<RunObservation> out;
  std::error_code ec;
  for (fs::directory_iterator it(m_dir / "observations", ec), end; !ec && it != end; it.increment(ec)) {
    auto j = read_json(it->path());
    if (!j) continue;
    auto o = checked([&] { return observation_from_json(*j); });
    // Listed only under its own name, and only for these files.
    if (o && it->path().filename() == observation_name(*o) && o->key == key && o->record_sha256 == record_sha256)
      out.push_back(std::move(*o));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.cc < b.cc; });
  return out;
}

std::string EvidenceMigration::to_string() const {
  return fmt::format("the kernel evidence store of an older envfix ({}) was migrated: {} file record{} kept as unsigned hints "
                     "(keyed by the file's hash; the file is read before it decides){}, {} build record{} keyed by name and "
                     "version dropped (a build's verdict is now "
                     "that of its own files; they are read again when needed)",
                     evidence_v1_dir_name, files_kept, files_kept == 1 ? "" : "s",
                     files_dropped ? fmt::format(", {} unreadable dropped", files_dropped) : std::string(), builds_dropped,
                     builds_dropped == 1 ? "" : "s");
}

Expected<std::optional<EvidenceMigration>> migrate_evidence_v1(const fs::path& cache_dir) {
  const fs::path old = cache_dir / evidence_v1_dir_name;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(old, ec))) return std::optional<EvidenceMigration>{};
  EvidenceMigration m;
  const EvidenceStore v2(cache_dir / evidence_dir_name, ""); // unsigned: v1's records are hints only
  for (fs::directory_iterator it(old / "files", ec), end; !ec && it != end; it.increment(ec)) {
    auto j = read_json(it->path());
    auto hash = j ? str(*j, "hash") : std::nullopt;
    // An entry names its own key, as v2's do (files/<sha256 of the hash>.json).
    std::optional<KernelProfile> profile;
    if (hash && it->path().filename() == util::sha256_hex(*hash) + ".json" && j->contains("profile"))
      profile = checked([&]() -> std::optional<KernelProfile> {
        auto p = KernelProfile::from_json((*j)["profile"]);
        if (!p) return std::nullopt;
        return *p;
      });
    if (!profile) {
      ++m.files_dropped;
      continue;
    }
    if (!v2.has_file(*hash)) ENVFIX_TRY_VOID(v2.put_file(*hash, *profile));
    ++m.files_kept;
  }
  ec.clear();
  for (fs::directory_iterator it(old / "builds", ec), end; !ec && it != end; it.increment(ec)) ++m.builds_dropped;
  ec.clear();
  fs::remove_all(old, ec);
  if (ec) return fail(ErrorCode::io, "cannot remove the old kernel evidence store {}: {}", old.string(), ec.message());
  return std::optional<EvidenceMigration>{m};
}

std::vector<ReadProfile> read_profiles(const std::vector<ProfileSource>& files, const EvidenceStore* store, unsigned threads) {
  threads = std::max(1u, threads);
  const std::size_t window =
      std::clamp<std::size_t>((std::size_t{128} << 20) / threads, std::size_t{4} << 20, std::size_t{32} << 20);
  std::vector<std::optional<ReadProfile>> out(files.size());
  (void)util::parallel_for(files.size(), threads, [&](std::size_t i) -> Expected<void> {
    const auto& f = files[i];
    if (store && !f.hash.empty())
      if (auto p = store->file(f.hash)) {
        out[i] = ReadProfile{std::move(*p), true};
        return {};
      }
    auto ks = read_kernels_file(f.path, window);
    if (!ks) {
      out[i] = ReadProfile{std::unexpected(std::move(ks.error())), false};
      return {};
    }
    auto p = KernelProfile::of(*ks);
    if (store && store->signs() && !f.hash.empty()) (void)store->put_file(f.hash, p); // unsigned, it would only replace
    out[i] = ReadProfile{std::move(p), false};
    return {};
  });
  std::vector<ReadProfile> result;
  result.reserve(out.size());
  for (auto& r : out) result.push_back(std::move(*r));
  return result;
}

EvidenceStore open_evidence_store(const std::filesystem::path& cache_dir) {
  static std::mutex mu;
  static std::set<std::filesystem::path> migrated;
  if (std::lock_guard lock(mu); migrated.insert(cache_dir).second) {
    auto m = migrate_evidence_v1(cache_dir);
    if (!m)
      util::cache_notice(m.error().message + " (kernel evidence of the older store not migrated)");
    else if (*m)
      util::cache_notice((*m)->to_string());
  }
  return EvidenceStore(cache_dir / evidence_dir_name, util::local_secret());
}

} // namespace envfix::wheel
