// util/strings, util/url and the small fs helpers shared by every module (issue 21, item 5).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <map>
#include <string>

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"
#include "util/url.hpp"

using namespace envfix;

TEST_SUITE("unit/util/strings_url") {
  TEST_CASE("lower, iequals and trim are ASCII-only and leave other bytes alone") {
    CHECK(util::lower("Torch-CUDA_12") == "torch-cuda_12");
    CHECK(util::lower("\xc3\x84X") == "\xc3\x84x"); // UTF-8 'Ä' is not ASCII: kept as is
    CHECK(util::iequals("Requires-Dist", "requires-dist"));
    CHECK(!util::iequals("Name", "Names"));
    CHECK(!util::iequals("Name", "Nbme"));
    CHECK(util::trim(" \t\r\n x y \f\v\n") == "x y");
    CHECK(util::trim("   ").empty());
    CHECK(util::trim("") == "");
    CHECK(util::join({"a", "b", "c"}, ", ") == "a, b, c");
    CHECK(util::join({}, ", ").empty());
    // An empty part keeps its separators (the copies util::join replaced dropped the one after it).
    CHECK(util::join({"", "b", ""}, ",") == ",b,");
  }

  TEST_CASE("url_path_segments and same_url: the path's parts without query or fragment; trailing slashes do not count") {
    using V = std::vector<std::string>;
    CHECK(envfix::util::url_path_segments("https://h/packages/stable/cu130/") == V{"packages", "stable", "cu130"});
    CHECK(envfix::util::url_path_segments("https://h/whl/nightly/cu136?x=1#frag") == V{"whl", "nightly", "cu136"});
    CHECK(envfix::util::url_path_segments("https://h").empty());
    CHECK(envfix::util::same_url("https://h/simple/", "https://h/simple"));
    CHECK_FALSE(envfix::util::same_url("https://h/simple", "https://h/simple2"));
  }

  TEST_CASE("strip_credentials removes only the userinfo of the authority") {
    CHECK(util::strip_credentials("https://user:pa%40ss@host.org:8443/simple/") == "https://host.org:8443/simple/");
    CHECK(util::strip_credentials("https://tok@host/a@b") == "https://host/a@b");
    CHECK(util::strip_credentials("https://host/a@b") == "https://host/a@b");
    CHECK(util::strip_credentials("https://host?next=a@b") == "https://host?next=a@b"); // '@' in the query
    CHECK(util::strip_credentials("https://host#x@y") == "https://host#x@y");
    CHECK(util::strip_credentials("file:///tmp/x@y") == "file:///tmp/x@y");
    CHECK(util::strip_credentials("not a url @ all") == "not a url @ all");
    CHECK(util::redact_url("https://u:p@h/x") == "https://***@h/x");
    CHECK(util::redact_url("https://h/x") == "https://h/x");
    CHECK(util::url_scheme("HTTPS://h/x") == "https");
    CHECK(util::url_scheme("git+ssh://h") == "git+ssh");
    CHECK(util::url_scheme("/no/scheme").empty());
    CHECK(util::url_scheme(":x").empty());
  }

  TEST_CASE("round3 6: has_url_credentials finds a userinfo in any URL of a value; drop_index_credentials drops only those") {
    using envfix::util::has_url_credentials;
    CHECK(has_url_credentials("https://user:secret@host/simple"));
    CHECK(has_url_credentials("https://plain.invalid/simple https://__token__:t@extra.invalid/simple"));
    CHECK(has_url_credentials("--index-url=\"https://u:p@h/\""));
    CHECK(has_url_credentials("git+https://tok@github.com/x/y"));
    CHECK_FALSE(has_url_credentials("https://host/simple"));
    CHECK_FALSE(has_url_credentials("https://host/a@b")); // '@' in the path, not the authority
    CHECK_FALSE(has_url_credentials("user@example.com"));
    CHECK_FALSE(has_url_credentials(""));
    std::map<std::string, std::string> env{{"ENVFIX_MIRROR", "https://u:secret@m/"},
                                           {"PIP_INDEX_URL", "https://m/simple"},
                                           {"UV_DEFAULT_INDEX", "https://x:y@uv/"},
                                           {"HOME", "/root"}};
    envfix::util::drop_index_credentials(env);
    CHECK(env == std::map<std::string, std::string>{{"PIP_INDEX_URL", "https://m/simple"}, {"HOME", "/root"}});
  }

  TEST_CASE("current_umask reads the umask without changing it") {
    const mode_t old = ::umask(027);
    CHECK(util::current_umask() == 027u);
    ::umask(0);
    CHECK(util::current_umask() == 0u);
    CHECK(::umask(old) == 0); // still what was set last: reading it did not change it
  }

  TEST_CASE("write_all writes everything and reports the errno of a failing write") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::string data(100000, 'x'); // more than a pipe holds at once: short writes happen
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(fds[1]);
      std::size_t total = 0;
      char buf[4096];
      for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) total += static_cast<std::size_t>(n);
      ::_exit(total == 100000 ? 0 : 1);
    }
    ::close(fds[0]);
    CHECK(util::write_all(fds[1], data) == 0);
    ::close(fds[1]);
    int status = 0;
    REQUIRE(util::retry_eintr([&] { return ::waitpid(child, &status, 0); }) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(util::write_all(-1, "x") == EBADF);
  }

  TEST_CASE("retry_eintr calls again only on EINTR") {
    int calls = 0;
    auto r = util::retry_eintr([&] {
      ++calls;
      if (calls < 3) {
        errno = EINTR;
        return -1;
      }
      return 7;
    });
    CHECK(r == 7);
    CHECK(calls == 3);
    calls = 0;
    auto e = util::retry_eintr([&] {
      ++calls;
      errno = ENOENT;
      return -1;
    });
    CHECK(e == -1);
    CHECK(calls == 1);
  }

  TEST_CASE("a file error carries its errno as data") {
    auto r = util::read_file("/nonexistent-envfix-dir/x");
    REQUIRE(!r);
    REQUIRE(r.error().sys_errno.has_value());
    CHECK(*r.error().sys_errno == ENOENT);
    Error wrapped = Error(r.error()).context("reading the lockfile");
    CHECK(wrapped.sys_errno == ENOENT); // context keeps it
  }
}

// The fix commands doctor and verify print are pasted into a shell: what they quote must come back as
// the same word, checked by a real /bin/sh.
TEST_CASE("shell_quote: plain words unchanged; the shell reads quoted ones back as they were" *
          doctest::test_suite("unit/util/strings_url")) {
  CHECK(util::shell_quote("torch") == "torch");
  CHECK(util::shell_quote("--gpu") == "--gpu");
  CHECK(util::shell_quote("jax[cuda13]") == "'jax[cuda13]'");
  CHECK(util::shell_quote("") == "''");
  for (std::string w : {"a b", "it's", "$HOME", "x;rm -rf y", "~/venv", "`id`", "a\\b", "p&q|r"}) {
    auto r = util::run_process({"/bin/sh", "-c", "printf %s " + util::shell_quote(w)}).value();
    CHECK_MESSAGE(r.out == w, w);
  }
}
