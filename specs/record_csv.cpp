#include "specs/record_csv.hpp"

#include <fmt/format.h>

namespace envfix::specs {
namespace {

Error csv_error(std::string_view name, std::size_t line, const util::Message& why, std::string_view text = {}) {
  auto msg = name.empty() ? util::msg("line {}: {}", line, why) : util::msg("{}:{}: {}", name, line, why);
  if (!text.empty()) msg = util::msg("{}: '{}'", msg, text);
  return Error::made(ErrorCode::invalid_input, std::move(msg));
}

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

Expected<std::vector<CsvRow>> read_csv(std::string_view text, std::string_view name) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string field;
  std::size_t line = 1;
  bool in_quotes = false;
  bool after_quote = false;   // the current field was quoted and its closing quote was seen
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
    row = CsvRow{};
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
      return std::unexpected(csv_error(name, line, util::msg("unexpected character after a closing quote"), std::string(1, c)));
    } else if (c == '"' && field.empty()) {
      field_started = true;
      in_quotes = true;
    } else {
      field_started = true;
      field += c;
    }
  }
  if (in_quotes) return std::unexpected(csv_error(name, row.line, util::msg("unterminated quoted field")));
  end_row();
  return rows;
}

void write_csv_row(std::string& out, const std::vector<std::string>& fields) {
  if (fields.size() == 1 && fields[0].empty()) {
    out += "\"\"\r\n";
    return;
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    write_field(out, fields[i]);
  }
  out += "\r\n";
}

} // namespace envfix::specs
