#include <doctest/doctest.h>

#include <fstream>

#include <fmt/format.h>

#include "util/env.hpp"
#include "util/parallel.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

using namespace envfix;

namespace {
Expected<int> parse_positive(int v) {
  if (v <= 0) return fail(ErrorCode::invalid_input, "not positive: {}", v);
  return v;
}
Expected<int> twice(int v) {
  int x = ENVFIX_TRY(parse_positive(v));
  return 2 * x;
}
} // namespace

TEST_SUITE("unit/util/util") {
  TEST_CASE("every Env value has its name, in order, and docs/environment.md lists each") {
    const auto& vars = util::known_env_vars();
    REQUIRE(vars.size() == static_cast<std::size_t>(util::Env::uv_no_config) + 1);
    const auto doc = util::read_file(std::filesystem::path(ENVFIX_SOURCE_DIR) / "docs/environment.md");
    REQUIRE(doc);
    for (std::size_t i = 0; i < vars.size(); ++i) {
      CAPTURE(vars[i].name);
      CHECK(vars[i].id == static_cast<util::Env>(i));
      CHECK(util::env_name(vars[i].id) == vars[i].name);
      CHECK(doc->find(fmt::format("| `{}` |", vars[i].name)) != std::string::npos);
    }
    ::setenv("ENVFIX_THREADS", "3", 1);
    CHECK(util::get_env(util::Env::threads) == std::optional<std::string>("3"));
    CHECK(util::configured_threads() == 3u);
    for (const char* bad : {"0", "-2", "3x", "", "99999"}) {
      CAPTURE(bad);
      ::setenv("ENVFIX_THREADS", bad, 1);
      CHECK(util::configured_threads() == util::default_threads()); // never 0 threads
    }
    ::unsetenv("ENVFIX_THREADS");
    CHECK_FALSE(util::get_env(util::Env::threads));
    CHECK(util::configured_threads() == util::default_threads());

    ::setenv("ENVFIX_PAGE_DEADLINE", "90", 1);
    CHECK(util::seconds_from_env(util::Env::page_deadline).value() == std::chrono::milliseconds(90'000));
    ::setenv("ENVFIX_PAGE_DEADLINE", "1m", 1);
    auto bad = util::seconds_from_env(util::Env::page_deadline);
    REQUIRE(!bad);
    CHECK(bad.error().message.find("ENVFIX_PAGE_DEADLINE") != std::string::npos);
    ::setenv("ENVFIX_PAGE_DEADLINE", "", 1);
    CHECK(util::seconds_from_env(util::Env::page_deadline).value() == std::nullopt);
    ::unsetenv("ENVFIX_PAGE_DEADLINE");
    CHECK(util::seconds_from_env(util::Env::page_deadline).value() == std::nullopt);
  }

  TEST_CASE("Error propagation and rendering") {
    CHECK(twice(4).value() == 8);
    auto e = twice(-1);
    REQUIRE(!e);
    CHECK(e.error().code == ErrorCode::invalid_input);
    Error wrapped = Error(e.error()).context("reading pins").with_hint("use a positive number");
    CHECK(wrapped.render() == "error: reading pins\n  caused by: not positive: -1\nhint: use a positive number\n");
  }

  TEST_CASE("sha256 and base64url match known vectors") {
    CHECK(util::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(util::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    util::Sha256 h;
    h.update("a");
    h.update("bc");
    CHECK(h.hex_digest() == util::sha256_hex("abc"));
    // RECORD form of sha256("") (as pip writes it).
    std::string raw = util::Sha256().raw_digest();
    CHECK(util::base64url_nopad(raw) == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
    CHECK(util::base64url_decode("47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU").value() == raw);
    CHECK(!util::base64url_decode("ab$c"));
    // HMAC-SHA256, RFC 4231 test cases 1 and 2 (the MAC of the kernel evidence, wheel/kernel_evidence.hpp).
    CHECK(util::hmac_sha256_hex(std::string(20, '\x0b'), "Hi There") ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CHECK(util::hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    CHECK(util::equal_in_constant_time("abc", "abc"));
    CHECK_FALSE(util::equal_in_constant_time("abc", "abd"));
    CHECK_FALSE(util::equal_in_constant_time("abc", "abcd"));
  }

  TEST_CASE("atomic write replaces content and leaves no temp files") {
    auto dir = util::make_temp_dir({}, "envfix-test").value();
    auto p = dir / "f.txt";
    REQUIRE(util::write_file_atomic(p, "one"));
    REQUIRE(util::write_file_atomic(p, "two"));
    CHECK(util::read_file(p).value() == "two");
    int n = 0;
    for ([[maybe_unused]] auto& ent : std::filesystem::directory_iterator(dir)) ++n;
    CHECK(n == 1);
    CHECK(!util::read_file(dir / "missing"));
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("subprocess captures output, exit codes and timeouts") {
    auto r = util::run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}).value();
    CHECK(r.out == "out\n");
    CHECK(r.err == "err\n");
    CHECK(r.exit_code == 3);
    util::SubprocessOptions o;
    o.timeout = std::chrono::milliseconds(300);
    auto t = util::run_process({"sh", "-c", "sleep 5"}, o).value();
    CHECK(t.timed_out);
    util::SubprocessOptions in;
    in.stdin_data = "hello";
    in.set_env["ENVFIX_T"] = "x";
    auto c = util::run_process({"sh", "-c", "cat; printf %s \"$ENVFIX_T\""}, in).value();
    CHECK(c.out == "hellox");
    CHECK(!util::run_process({"/nonexistent/binary"}));
  }
}

// docs/reliability.md §5, cases 6 and 8.
TEST_SUITE("unit/util/util") {
  TEST_CASE("security 6: escape_control makes terminal escapes visible and keeps text") {
    using envfix::util::escape_control;
    CHECK(escape_control("demo/\x1b]0;pwned\x07x.py") == "demo/\\x1b]0;pwned\\x07x.py");
    CHECK(escape_control("clear\x1b[2J\x1b[H") == "clear\\x1b[2J\\x1b[H");
    CHECK(escape_control("a\nb\tc") == "a\nb\tc");
    CHECK(escape_control("a\nb", false) == "a\\x0ab");
    CHECK(escape_control("caf\xc3\xa9 \xe2\x9c\x93") == "caf\xc3\xa9 \xe2\x9c\x93");
    CHECK(escape_control("csi\xc2\x9b"
                         "2J") == "csi\\u009b2J");
    CHECK(escape_control("bad\xff\xfe") == "bad\\xff\\xfe");
    CHECK(escape_control("del\x7f") == "del\\x7f");
    // cli's own colours pass when asked; anything else after ESC does not.
    CHECK(escape_control("\x1b[1;31merror\x1b[0m", true, true) == "\x1b[1;31merror\x1b[0m");
    CHECK(escape_control("\x1b[2J\x1b]0;t\x07", true, true) == "\\x1b[2J\\x1b]0;t\\x07");
  }

  TEST_CASE("security 8: subprocess output is capped, head and tail kept, the drop counted") {
    envfix::util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(2);
    o.max_output = 1 << 20;
    // `yes` prints forever: it is stopped by the timeout, the output capped however much it wrote.
    auto r = envfix::util::run_process({"yes", "envfix"}, o);
    REQUIRE(r);
    CHECK(r->timed_out);
    CHECK(r->out.size() < (1u << 20) + 200);
    CHECK(r->out.starts_with("envfix\nenvfix\n"));
    // A known 8 MB written and ended (no timeout: the count is the bytes, not the machine's speed).
    o.timeout = std::chrono::seconds(300);
    auto big = envfix::util::run_process({"sh", "-c", "yes envfix | head -c 8000000"}, o);
    REQUIRE(big);
    CHECK(big->ok());
    CHECK(big->out.size() < (1u << 20) + 200);
    CHECK(big->out_dropped > (6u << 20));
    CHECK(big->out_dropped < 8000000);
    CHECK(big->out.starts_with("envfix\nenvfix\n"));
    CHECK(big->out.find("bytes of output dropped") != std::string::npos);
    // Small output is untouched.
    auto small = envfix::util::run_process({"printf", "a\\nb"}, {});
    REQUIRE(small);
    CHECK(small->out == "a\nb");
    CHECK(small->out_dropped == 0);
    // Tail kept: the last line of a long output is there.
    o.timeout = std::chrono::seconds(30);
    auto tail = envfix::util::run_process({"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo LAST"}, o);
    REQUIRE(tail);
    CHECK(tail->ok());
    CHECK(tail->out.ends_with("LAST\n"));
    CHECK(tail->out_dropped > 0);
  }
}
