// The specs readers of RFC 822 headers and RECORD CSV (specs/rfc822.hpp, specs/record_csv.hpp).
// Invariants: no crash; header lines increase and values carry no trailing whitespace; CSV rows
// written back with write_csv_row read back to the same fields.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "specs/record_csv.hpp"
#include "specs/rfc822.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto block = envfix::specs::read_headers(text, "F")) {
    std::size_t last = 0;
    for (const auto& h : block->headers) {
      if (h.line <= last || h.name.empty()) std::abort();
      last = h.line;
      if (!h.value.empty() && (h.value.back() == ' ' || h.value.back() == '\n')) std::abort();
      if (envfix::specs::unfold(h.value).find('\n') != std::string::npos) std::abort();
    }
    if (block->ended_at_non_header && block->body_line == 0) std::abort();
  }
  if (auto rows = envfix::specs::read_csv(text, "RECORD")) {
    std::string out;
    for (const auto& r : *rows) envfix::specs::write_csv_row(out, r.fields);
    auto again = envfix::specs::read_csv(out, "RECORD");
    if (!again || again->size() != rows->size()) std::abort();
    for (std::size_t i = 0; i < rows->size(); ++i)
      if ((*again)[i].fields != (*rows)[i].fields) std::abort();
  }
  return 0;
}
