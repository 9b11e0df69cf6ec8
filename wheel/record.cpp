#include "wheel/record.hpp"

#include <charconv>
#include <unordered_map>

#include <fmt/format.h>

#include "specs/record_csv.hpp"
#include "util/sha256.hpp"

namespace envfix::wheel {

namespace {

Error csv_error(std::string_view name, std::size_t line, const util::Message& why, std::string_view text = {}) {
  auto msg = util::msg("{}:{}: {}", name, line, why);
  if (!text.empty()) msg = util::msg("{}: '{}'", msg, text);
  return Error::made(ErrorCode::invalid_input, std::move(msg));
}

bool is_b64url(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}
bool is_algo_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

} // namespace

std::string RecordEntry::hash_field() const {
  if (hash_algo.empty()) return {};
  return hash_algo + "=" + hash_b64;
}

bool RecordEntry::matches(std::string_view content) const {
  if (hash_algo != "sha256") return false;
  if (size && *size != content.size()) return false;
  util::Sha256 h;
  h.update(content);
  return util::base64url_nopad(h.raw_digest()) == hash_b64;
}

RecordEntry RecordEntry::for_content(std::string path, std::string_view content) {
  util::Sha256 h;
  h.update(content);
  return RecordEntry{std::move(path), "sha256", util::base64url_nopad(h.raw_digest()), content.size()};
}

Expected<Record> Record::parse(std::string_view csv_text, std::string_view name_for_errors, RecordSource source) {
  auto rows = ENVFIX_TRY(specs::read_csv(csv_text, name_for_errors));
  Record record;
  record.entries.reserve(rows.size());
  for (auto& row : rows) {
    if (source == RecordSource::installed && !row.fields.empty() && row.fields.size() < 3) row.fields.resize(3);
    if (row.fields.size() != 3)
      return std::unexpected(
          Error(csv_error(name_for_errors, row.line, util::msg("expected 3 fields (path,hash,size), found {}", row.fields.size()),
                          fmt::format("{}", fmt::join(row.fields, ",")))));
    RecordEntry e;
    e.path = std::move(row.fields[0]);
    if (e.path.empty()) return std::unexpected(csv_error(name_for_errors, row.line, util::msg("empty path")));
    const std::string& hash = row.fields[1];
    if (!hash.empty()) {
      auto eq = hash.find('=');
      std::string_view algo = std::string_view(hash).substr(0, eq == std::string::npos ? 0 : eq);
      std::string_view digest = eq == std::string::npos ? std::string_view{} : std::string_view(hash).substr(eq + 1);
      bool ok = !algo.empty() && !digest.empty();
      for (char c : algo) ok = ok && is_algo_char(c);
      for (char c : digest) ok = ok && is_b64url(c);
      if (!ok)
        return std::unexpected(
            Error(csv_error(name_for_errors, row.line, util::msg("bad hash, expected <algorithm>=<urlsafe base64>"), hash))
                .with_hint(util::msg("RECORD hashes look like sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")));
      e.hash_algo = std::string(algo);
      e.hash_b64 = std::string(digest);
    }
    const std::string& size = row.fields[2];
    if (!size.empty()) {
      std::uint64_t v = 0;
      auto [p, ec] = std::from_chars(size.data(), size.data() + size.size(), v);
      if (ec != std::errc{} || p != size.data() + size.size())
        return std::unexpected(csv_error(name_for_errors, row.line, util::msg("bad size, expected a byte count"), size));
      e.size = v;
    }
    record.entries.push_back(std::move(e));
  }
  return record;
}

std::string Record::to_string() const {
  std::string out;
  for (const auto& e : entries)
    specs::write_csv_row(out, {e.path, e.hash_field(), e.size ? std::to_string(*e.size) : std::string()});
  return out;
}

const RecordEntry* Record::find(std::string_view path) const {
  for (const auto& e : entries)
    if (e.path == path) return &e;
  return nullptr;
}

bool same_build(const Record& installed, const Record& wheel) {
  std::unordered_map<std::string_view, const RecordEntry*> by_path; // torch's RECORD has ~15k rows
  for (const auto& e : installed.entries) by_path.emplace(e.path, &e);
  std::size_t compared = 0;
  for (const auto& e : wheel.entries) {
    if (e.hash_algo.empty()) continue;
    const auto top = std::string_view(e.path).substr(0, e.path.find('/'));
    if (top.ends_with(".dist-info") || top.ends_with(".data")) continue;
    const auto it = by_path.find(e.path);
    const RecordEntry* mine = it == by_path.end() ? nullptr : it->second;
    if (!mine || mine->hash_algo != e.hash_algo || mine->hash_b64 != e.hash_b64) return false;
    ++compared;
  }
  return compared > 0;
}

} // namespace envfix::wheel
