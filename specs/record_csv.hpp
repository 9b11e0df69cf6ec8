#pragma once
// The CSV of a RECORD file (binary distribution format spec ".dist-info directory"; recording
// installed packages spec "The RECORD file"): rows as Python's csv module reads and writes them
// (excel dialect). The one RECORD CSV reader: wheel/record.cpp and probe/installed.cpp both use it.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::specs {

struct CsvRow {
  std::vector<std::string> fields;
  std::size_t line = 0; // 1-based line where the row starts
};

// Python csv.reader (strict): ',' delimiter, '"' quote, "" inside quotes is a quote, quoted fields
// may span lines, rows end at \n, \r\n or \r, a quote inside an unquoted field is literal. Blank
// lines yield no row. Errors name `name_for_errors` and the line ("RECORD:3: …"; "line 3: …"
// without a name, as specs::read_headers).
[[nodiscard]] Expected<std::vector<CsvRow>> read_csv(std::string_view text, std::string_view name_for_errors);

// One row as Python's csv.writer writes it (minimal quoting; a row of one empty field is `""`, so
// that it reads back as a row), ended by "\r\n".
void write_csv_row(std::string& out, const std::vector<std::string>& fields);

} // namespace envfix::specs
