#include "wheel/kernel_evidence.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "specs/name.hpp"
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

std::optional<json> read_json(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  auto text = util::read_file(p);
  if (!text) return std::nullopt;
  auto j = json::parse(*text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

Expected<void> write_json(const fs::path& p, const json& j) {
  ENVFIX_TRY_VOID(util::create_directories(p.parent_path()));
  return util::write_file_atomic(p, j.dump());
}

std::optional<BuildEvidence> build_from_json(const json& j) {
  if (!j.is_object() || !j.contains("key") || !j["key"].is_object() || !j.contains("files") || !j["files"].is_array())
    return std::nullopt;
  BuildEvidence e;
  const auto& k = j["key"];
  e.key = {k.value("project", ""), k.value("version", ""), k.value("variant", ""), k.value("platform", "")};
  e.source = j.value("source", "");
  for (const auto& f : j["files"]) {
    if (!f.is_object() || !f.contains("profile")) return std::nullopt;
    auto p = KernelProfile::from_json(f["profile"]);
    if (!p) return std::nullopt;
    e.files.push_back({f.value("path", ""), std::move(*p)});
  }
  return e;
}

} // namespace

std::optional<KernelProfile> EvidenceStore::file(std::string_view file_hash) const {
  auto j = read_json(m_dir / "files" / (util::sha256_hex(file_hash) + ".json"));
  if (!j || j->value("hash", "") != file_hash || !j->contains("profile")) return std::nullopt;
  auto p = KernelProfile::from_json((*j)["profile"]);
  if (!p) return std::nullopt;
  return *p;
}

Expected<void> EvidenceStore::put_file(std::string_view file_hash, const KernelProfile& p) const {
  return write_json(m_dir / "files" / (util::sha256_hex(file_hash) + ".json"),
                    {{"hash", file_hash}, {"profile", p.to_json()}});
}

std::optional<BuildEvidence> EvidenceStore::build(const BuildKey& key) const {
  auto j = read_json(m_dir / "builds" / (util::sha256_hex(key_text(key)) + ".json"));
  if (!j) return std::nullopt;
  auto e = build_from_json(*j);
  if (!e || e->key != key) return std::nullopt;
  return e;
}

Expected<void> EvidenceStore::put_build(const BuildEvidence& e) const {
  json files = json::array();
  for (const auto& f : e.files) files.push_back({{"path", f.path}, {"profile", f.profile.to_json()}});
  json j{{"key", {{"project", e.key.project}, {"version", e.key.version}, {"variant", e.key.variant}, {"platform", e.key.platform}}},
         {"source", e.source},
         {"files", files}};
  return write_json(m_dir / "builds" / (util::sha256_hex(key_text(e.key)) + ".json"), j);
}

std::vector<BuildEvidence> EvidenceStore::builds() const {
  std::vector<BuildEvidence> out;
  std::error_code ec;
  for (fs::directory_iterator it(m_dir / "builds", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    if (auto j = read_json(it->path()))
      if (auto e = build_from_json(*j)) out.push_back(std::move(*e));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

std::vector<ReadProfile> read_profiles(const std::vector<ProfileSource>& files, const EvidenceStore* store,
                                       unsigned threads) {
  threads = std::max(1u, threads);
  const std::size_t window = std::clamp<std::size_t>((std::size_t{128} << 20) / threads, std::size_t{4} << 20,
                                                     std::size_t{32} << 20);
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
    if (store && !f.hash.empty()) (void)store->put_file(f.hash, p);
    out[i] = ReadProfile{std::move(p), false};
    return {};
  });
  std::vector<ReadProfile> result;
  result.reserve(out.size());
  for (auto& r : out) result.push_back(std::move(*r));
  return result;
}

} // namespace envfix::wheel
