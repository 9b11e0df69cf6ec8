// The one RFC 822 header reader (specs/rfc822.hpp) and the one RECORD CSV reader (specs/record_csv.hpp).
#include <doctest/doctest.h>

#include <string>

#include "specs/record_csv.hpp"
#include "specs/rfc822.hpp"

namespace specs_rfc822_csv_test {

using namespace envfix;
using namespace envfix::specs;

TEST_SUITE("unit/specs/rfc822_csv") {
  TEST_CASE("read_headers keeps continuation lines, as the core metadata spec's compat32 parser") {
    auto b = read_headers("Name: demo\r\nSummary: one\r\n  two\r\n\tthree\r\nVersion: 1.0\r\n\r\nbody text\n").value();
    REQUIRE(b.headers.size() == 3);
    CHECK(b.headers[1].name == "Summary");
    CHECK(b.headers[1].value == "one\n  two\n\tthree");
    CHECK(unfold(b.headers[1].value) == "one two three");
    CHECK(b.headers[2].line == 5);
    CHECK(b.body == "body text\n");
    CHECK(b.body_line == 7);
    CHECK(!b.ended_at_non_header);
    REQUIRE(b.find("version"));
    CHECK(b.find("VERSION")->value == "1.0");
    CHECK(b.find("Requires-Dist") == nullptr);
  }

  TEST_CASE("read_headers: the first value wins in find, a non-header line starts the body") {
    auto b = read_headers("Name: a\nName: b\nthis is no header\nX: y\n").value();
    REQUIRE(b.headers.size() == 2);
    CHECK(b.find("name")->value == "a");
    CHECK(b.ended_at_non_header);
    CHECK(b.body_line == 3);
    CHECK(b.body == "this is no header\nX: y\n");
    auto none = read_headers("").value();
    CHECK(none.headers.empty());
    CHECK(none.body_line == 0);
  }

  TEST_CASE("read_headers refuses a continuation line before any header, naming the input and line") {
    auto e = read_headers("  indented\nName: x\n", "demo.whl:demo-1.0.dist-info/WHEEL");
    REQUIRE(!e);
    CHECK(e.error().code == ErrorCode::invalid_input);
    CHECK(e.error().message.starts_with("demo.whl:demo-1.0.dist-info/WHEEL:1: continuation line"));
    CHECK(read_headers("\tx\n").error().message.starts_with("line 1: "));
  }

  TEST_CASE("read_csv follows Python's csv rules") {
    auto rows = read_csv("a,b,c\r\n\"q,1\",\"say \"\"hi\"\"\",\n\n\"multi\nline\",x,1\rlast,,", "RECORD").value();
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].fields == std::vector<std::string>{"a", "b", "c"});
    CHECK(rows[0].line == 1);
    CHECK(rows[1].fields == std::vector<std::string>{"q,1", "say \"hi\"", ""});
    CHECK(rows[2].fields == std::vector<std::string>{"multi\nline", "x", "1"});
    CHECK(rows[2].line == 4);
    CHECK(rows[3].fields == std::vector<std::string>{"last", "", ""});
    CHECK(rows[3].line == 6);
    // A quote inside an unquoted field is literal.
    CHECK(read_csv("a\"b,c\n", "R").value()[0].fields[0] == "a\"b");
  }

  TEST_CASE("read_csv errors name the file and line") {
    auto e = read_csv("ok,,\n\"open,x\n", "demo/RECORD");
    REQUIRE(!e);
    CHECK(e.error().message == "demo/RECORD:2: unterminated quoted field");
    auto after = read_csv("a,\"b\"x,c\n", "RECORD");
    REQUIRE(!after);
    CHECK(after.error().message == "RECORD:1: unexpected character after a closing quote: 'x'");
    CHECK(read_csv("\"x", "").error().message == "line 1: unterminated quoted field");
  }

  TEST_CASE("write_csv_row writes what read_csv reads back") {
    std::vector<std::vector<std::string>> rows = {
        {"pkg/a.py", "sha256=abc", "12"}, {"we,ird \"name\"", "", ""}, {"line\nbreak", "x", ""}, {""}};
    std::string text;
    for (const auto& r : rows) write_csv_row(text, r);
    CHECK(text.starts_with("pkg/a.py,sha256=abc,12\r\n\"we,ird \"\"name\"\"\",,\r\n"));
    auto back = read_csv(text, "RECORD").value();
    REQUIRE(back.size() == rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) CHECK(back[i].fields == rows[i]);
  }
}

} // namespace specs_rfc822_csv_test
