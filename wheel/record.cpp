#include "wheel/record.hpp"

#include <charconv>

#include <fmt/format.h>

#include "util/sha256.hpp"

namespace envfix::wheel {

namespace {

struct Row {
  std::vector<std::string> fields;
  std::size_t line = 0; // where the row starts
};

Error csv_error(std::string_view name, std::size_t line, std::string_view why, std::string_view text = {}) {
  std::string msg = fmt::format("{}:{}: {}", name, line, why);
  if (!text.empty()) msg += fmt::format(": '{}'", text);
  return Error{ErrorCode::invalid_input, std::move(msg), {}, {}};
}

// Python csv.reader (excel dialect, strict): ',' delimiter, '"' quote, "" inside quotes is a quote,
// quoted fields may span lines, rows end at \n, \r\n or \r. Blank lines yield no row.
Expected<std::vector<Row>> read_csv(std::string_view text, std::string_view name) {
  std::vector<Row> rows;
  Row row;
  std::string field;
  std::size_t line = 1;
  bool in_quotes = false;
  bool after_quote = false;  // the current field was quoted and its closing quote was seen
  bool field_started = false; // the row has content (so a trailing empty field counts)
  auto end_field = [&] {
    row.fields.push_back(std::move(field));
    field.clear();
    after_quote = false;
  };
  auto end_row = [&] {
    if (field_started || !row.fields.empty()) {
      end_field();
      rows.push_back(std::move(row));
    }
    row = Row{};
    field_started = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!field_started && row.fields.empty()) row.line = line;
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
          after_quote = true;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == ',') {
      field_started = true;
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_row();
      ++line;
    } else if (after_quote) {
      return std::unexpected(csv_error(name, line, "unexpected character after a closing quote",
                                       std::string(1, c)));
    } else if (c == '"' && field.empty()) {
      field_started = true;
      in_quotes = true;
    } else {
      field_started = true;
      field += c; // a quote inside an unquoted field is literal, as in Python
    }
  }
  if (in_quotes) return std::unexpected(csv_error(name, row.line, "unterminated quoted field"));
  end_row();
  return rows;
}

bool is_b64url(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}
bool is_algo_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

bool needs_quotes(std::string_view f) { return f.find_first_of(",\"\r\n") != std::string_view::npos; }

void write_field(std::string& out, std::string_view f) {
  if (!needs_quotes(f)) {
    out += f;
    return;
  }
  out += '"';
  for (char c : f) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

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

Expected<Record> Record::parse(std::string_view csv_text, std::string_view name_for_errors) {
  auto rows = ENVFIX_TRY(read_csv(csv_text, name_for_errors));
  Record record;
  record.entries.reserve(rows.size());
  for (auto& row : rows) {
    if (row.fields.size() != 3)
      return std::unexpected(
          Error(csv_error(name_for_errors, row.line,
                          fmt::format("expected 3 fields (path,hash,size), found {}", row.fields.size()),
                          fmt::format("{}", fmt::join(row.fields, ",")))));
    RecordEntry e;
    e.path = std::move(row.fields[0]);
    if (e.path.empty()) return std::unexpected(csv_error(name_for_errors, row.line, "empty path"));
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
            Error(csv_error(name_for_errors, row.line, "bad hash, expected <algorithm>=<urlsafe base64>", hash))
                .with_hint("RECORD hashes look like sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"));
      e.hash_algo = std::string(algo);
      e.hash_b64 = std::string(digest);
    }
    const std::string& size = row.fields[2];
    if (!size.empty()) {
      std::uint64_t v = 0;
      auto [p, ec] = std::from_chars(size.data(), size.data() + size.size(), v);
      if (ec != std::errc{} || p != size.data() + size.size())
        return std::unexpected(csv_error(name_for_errors, row.line, "bad size, expected a byte count", size));
      e.size = v;
    }
    record.entries.push_back(std::move(e));
  }
  return record;
}

std::string Record::to_string() const {
  std::string out;
  for (const auto& e : entries) {
    write_field(out, e.path);
    out += ',';
    write_field(out, e.hash_field());
    out += ',';
    if (e.size) out += std::to_string(*e.size);
    out += "\r\n";
  }
  return out;
}

const RecordEntry* Record::find(std::string_view path) const {
  for (const auto& e : entries)
    if (e.path == path) return &e;
  return nullptr;
}

} // namespace envfix::wheel
