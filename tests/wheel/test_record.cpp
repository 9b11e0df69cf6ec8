#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "wheel/record.hpp"

namespace wheel_record_test {

using namespace envfix;
using namespace envfix::wheel;

namespace {
const std::filesystem::path k_dist_info = ENVFIX_FIXTURES_DIR "/gpu-h200/dist-info";

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}
} // namespace

TEST_SUITE("unit/wheel/record") {

  TEST_CASE("Record parses every real RECORD of the H200 fixture and writes it back") {
    std::size_t files = 0;
    for (const auto& dir : std::filesystem::directory_iterator(k_dist_info)) {
      auto path = dir.path() / "RECORD";
      auto text = util::read_file(path);
      REQUIRE(text);
      CAPTURE(path.string());
      auto rec = Record::parse(*text, path.string());
      REQUIRE_MESSAGE(rec, (rec ? "" : rec.error().render()));
      CHECK(rec->entries.size() == count_lines(*text)); // one row per line, no blank lines in these
      // RECORD lists itself with no hash and no size.
      std::string self = dir.path().filename().string() + "/RECORD";
      const RecordEntry* own = rec->find(self);
      REQUIRE(own);
      CHECK(own->hash_algo.empty());
      CHECK(!own->size);
      // Every other non-.pyc row has sha256 and a size.
      for (const auto& e : rec->entries) {
        if (&e == own || e.path.ends_with(".pyc")) continue;
        CHECK(e.hash_algo == "sha256");
        CHECK(e.hash_b64.size() == 43);
        CHECK(e.size.has_value());
      }
      // Round trip: the written form parses back equal; CRLF files are reproduced byte for byte.
      auto again = Record::parse(rec->to_string(), "rewritten").value();
      CHECK(again.entries == rec->entries);
      if (text->find('\r') != std::string::npos) CHECK(rec->to_string() == *text);
      ++files;
    }
    CHECK(files == 5);
    auto torch = Record::parse(util::read_file(k_dist_info / "torch-2.11.0.dist-info" / "RECORD").value(), "torch").value();
    CHECK(torch.entries.size() == 11847);
    const RecordEntry* trun = torch.find("../../../bin/torchrun");
    REQUIRE(trun);
    CHECK(trun->hash_b64 == "DTQ3pOqLgQoFEPv4R6DoCHGA0FwkOVv0kXeCuQhVDEs");
    CHECK(trun->size == 314u);
  }

  TEST_CASE("Record verifies the hashes of real files (the INSTALLER of the fixture)") {
    for (const char* d : {"torchaudio-2.11.0.dist-info", "torchvision-0.26.0.dist-info"}) {
      auto dir = k_dist_info / d;
      auto rec = Record::parse(util::read_file(dir / "RECORD").value(), "RECORD").value();
      for (const char* f : {"INSTALLER", "METADATA", "WHEEL"}) {
        CAPTURE(f);
        const RecordEntry* e = rec.find(std::string(d) + "/" + f);
        REQUIRE(e);
        auto content = util::read_file(dir / f).value();
        CHECK(e->matches(content));
        CHECK(!e->matches(content + "x"));
        CHECK(RecordEntry::for_content(e->path, content) == *e);
      }
    }
  }

  TEST_CASE("Record follows Python csv rules: quotes, commas, CRLF, blank lines") {
    auto rec = Record::parse("\"a,b.py\",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\r\n"
                             "\r\n"
                             "\"say \"\"hi\"\".txt\",,\n"
                             "x\"y.py,,12\r"
                             "\"multi\nline\",,\n"
                             "last,,7",
                             "RECORD")
                   .value();
    REQUIRE(rec.entries.size() == 5);
    CHECK(rec.entries[0].path == "a,b.py");
    CHECK(rec.entries[0].hash_algo == "sha256");
    CHECK(rec.entries[0].size == 0u);
    CHECK(rec.entries[1].path == "say \"hi\".txt");
    CHECK(rec.entries[1].hash_algo.empty());
    CHECK(!rec.entries[1].size);
    CHECK(rec.entries[2].path == "x\"y.py");
    CHECK(rec.entries[2].size == 12u);
    CHECK(rec.entries[3].path == "multi\nline");
    CHECK(rec.entries[4].path == "last");
    CHECK(rec.to_string() == "\"a,b.py\",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\r\n"
                             "\"say \"\"hi\"\".txt\",,\r\n"
                             "\"x\"\"y.py\",,12\r\n"
                             "\"multi\nline\",,\r\n"
                             "last,,7\r\n");
    CHECK(Record::parse(rec.to_string(), "again").value().entries == rec.entries);
    CHECK(Record::parse("", "empty").value().entries.empty());
  }

  TEST_CASE("Record errors name the file, the line and the bad text") {
    struct Row {
      const char* text;
      const char* needle;
    };
    for (Row r :
         {Row{"a,,1\nb,,\nc,,x1\n", "RECORD:3: bad size, expected a byte count: 'x1'"},
          Row{"a,,1\nb,sha256,1\n", "RECORD:2: bad hash"}, Row{"a,md5=,1\n", "RECORD:1: bad hash"},
          Row{"a,=abc,1\n", "RECORD:1: bad hash"}, Row{"a,sha256=ab+/,1\n", "RECORD:1: bad hash"},
          Row{"a,,1\r\nb,,\r\nc\r\n", "RECORD:3: expected 3 fields (path,hash,size), found 1: 'c'"},
          Row{"a,,1,extra\n", "RECORD:1: expected 3 fields"}, Row{"a,,1\n\"b,,1\n", "RECORD:2: unterminated quoted field"},
          Row{"\"a\"b,,1\n", "RECORD:1: unexpected character after a closing quote"}, Row{"a,,-1\n", "RECORD:1: bad size"},
          Row{",,1\n", "RECORD:1: empty path"}, Row{"\"x\ny\",,1\nz,,\n\nw,,q\n", "RECORD:5: bad size"}}) {
      CAPTURE(r.text);
      auto rec = Record::parse(r.text, "RECORD");
      REQUIRE(!rec);
      CHECK(rec.error().code == ErrorCode::invalid_input);
      CHECK_MESSAGE(rec.error().message.find(r.needle) != std::string::npos, rec.error().message);
    }
  }

  TEST_CASE("same_build: the installed files against the wheel's RECORD, not the name and version") {
    const std::string wheel_text = "evfw/__init__.py,sha256=AAAA,9\r\n"
                                   "evfw/lib/libk.so,sha256=BBBB,100\r\n"
                                   "evfw-3.0.0+cu128.dist-info/METADATA,sha256=CCCC,50\r\n"
                                   "evfw-3.0.0+cu128.data/scripts/evfw,sha256=DDDD,20\r\n"
                                   "evfw-3.0.0+cu128.dist-info/RECORD,,\r\n";
    const auto wheel = wheel::Record::parse(wheel_text, "wheel RECORD").value();
    // pip's installed RECORD: the same files, plus .pyc, INSTALLER, a rewritten METADATA hash and the
    // script moved to bin/ with another hash.
    auto installed = [](const std::string& so_hash) {
      return wheel::Record::parse("evfw/__init__.py,sha256=AAAA,9\n"
                                  "evfw/__pycache__/__init__.cpython-312.pyc,,\n"
                                  "evfw/lib/libk.so,sha256=" +
                                      so_hash +
                                      ",100\n"
                                      "evfw-3.0.0+cu128.dist-info/INSTALLER,sha256=EEEE,4\n"
                                      "evfw-3.0.0+cu128.dist-info/METADATA,sha256=FFFF,50\n"
                                      "../../../bin/evfw,sha256=GGGG,20\n",
                                  "installed RECORD", wheel::RecordSource::installed)
          .value();
    };
    CHECK(wheel::same_build(installed("BBBB"), wheel));
    CHECK_FALSE(wheel::same_build(installed("XXXX"), wheel)); // another build of the same version
    // A file of the wheel missing from the install is another build too.
    const auto fewer =
        wheel::Record::parse("evfw/__init__.py,sha256=AAAA,9\n", "installed", wheel::RecordSource::installed).value();
    CHECK_FALSE(wheel::same_build(fewer, wheel));
    // A wheel whose RECORD hashes nothing outside its metadata proves nothing.
    const auto bare = wheel::Record::parse("x-1.0.dist-info/METADATA,sha256=CCCC,50\n", "bare").value();
    CHECK_FALSE(wheel::same_build(installed("BBBB"), bare));
  }
} // TEST_SUITE

} // namespace wheel_record_test
