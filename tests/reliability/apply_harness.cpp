#include "tests/reliability/apply_harness.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"
#include "tests/support/tree_manifest.hpp"

extern char** environ;

namespace envfix::testing {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path envfix_bin() {
  const char* b = std::getenv("ENVFIX_BIN");
  return b ? fs::path(b) : fs::path(ENVFIX_BINARY_DIR) / "cli/envfix";
}

std::string python3() { return util::find_in_path("python3").value_or("python3").string(); }

constexpr const char* kMatrices = R"YAML(schema: 1
frameworks:
  bulk:
    main_package: bulk
    default_mirror: "https://bulk.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
    source: "envfix tests/reliability/apply_harness.cpp"
    variants:
      cu128: {cuda: "12.8"}
    smoke:
      step_a: "import os, sys, time; p = os.environ.get('SMOKE_PIDFILE'); p and open(p, 'w').write(str(os.getpid())); time.sleep(float(os.environ.get('SMOKE_SLEEP', '0'))); w = os.environ.get('SMOKE_GATE'); [time.sleep(0.01) for _ in iter(lambda: bool(w) and not os.path.exists(w), False)]; g = os.environ.get('SMOKE_GRANDCHILD'); g and open(g, 'w').write(str(__import__('subprocess').Popen(['sleep', '1000']).pid)); e = os.environ.get('SMOKE_ENV_OUT'); e and open(e, 'w').write(repr(dict(os.environ))); os.environ.get('SMOKE_FAIL') and sys.exit('smoke fixture failure'); print('step A ok')"
      step_b: "import bulk; print('step B ok', bulk.VERSION)"
      cpu:
        step: "import os, sys, time; p = os.environ.get('SMOKE_PIDFILE'); p and open(p, 'w').write(str(os.getpid())); time.sleep(float(os.environ.get('SMOKE_SLEEP', '0'))); w = os.environ.get('SMOKE_GATE'); [time.sleep(0.01) for _ in iter(lambda: bool(w) and not os.path.exists(w), False)]; g = os.environ.get('SMOKE_GRANDCHILD'); g and open(g, 'w').write(str(__import__('subprocess').Popen(['sleep', '1000']).pid)); e = os.environ.get('SMOKE_ENV_OUT'); e and open(e, 'w').write(repr(dict(os.environ))); os.environ.get('SMOKE_FAIL') and sys.exit('smoke fixture failure'); print('step A ok')"
    releases:
      - versions: ["1.0.0", "2.0.0", "3.0.0"]
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim"}
)YAML";

json files_for(const std::string& pkg, const std::string& subdirs, int per_dir, int version) {
  json f = json::object();
  f[pkg + "/__init__.py"] = fmt::format("VERSION = {}\n", version);
  for (char d : subdirs) {
    f[fmt::format("{}/{}/__init__.py", pkg, d)] = "";
    for (int i = 0; i < per_dir; ++i)
      f[fmt::format("{}/{}/m{:03d}.py", pkg, d, i)] = fmt::format("# {} {} {}\nVALUE = {}\n", pkg, version, d, i * version);
  }
  return f;
}

std::string index_spec() {
  json pk = json::array();
  pk.push_back({{"name", "bulk"}, {"version", "1.0.0+cu128"}, {"files", files_for("bulk", "abc", 100, 1)}, {"pad_bytes", 16384}});
  pk.push_back({{"name", "bulk"},
                {"version", "2.0.0+cu128"},
                {"files", files_for("bulk", "abcdefgh", 50, 2)},
                {"pad_bytes", 1 << 20},
                {"requires_dist", {"helper==1.0"}}});
  pk.push_back({{"name", "helper"}, {"version", "1.0"}, {"files", files_for("helper", "ab", 20, 1)}});
  // A three-wheel set (bulk 3, helper, tail) for the SIGKILL trials (tests/reliability/test_apply_kill.cpp).
  pk.push_back({{"name", "bulk"},
                {"version", "3.0.0+cu128"},
                {"files", files_for("bulk", "abcdef", 60, 3)},
                {"pad_bytes", 1 << 19},
                {"requires_dist", {"helper==1.0", "tail==1.0"}}});
  pk.push_back({{"name", "tail"}, {"version", "1.0"}, {"files", files_for("tail", "abcd", 30, 1)}, {"pad_bytes", 1 << 18}});
  return json{{"simple_dir", "whl/cu128"}, {"files_dir", "whl/files"}, {"packages", pk}}.dump();
}

} // namespace

// ---- manifest -------------------------------------------------------------------------------------

// One tree manifest for every test (tests/support/tree_manifest.hpp).
Manifest manifest(const fs::path& root) { return testing::tree_manifest(root); }

// ---- background envfix --------------------------------------------------------------------------

std::unique_ptr<BackgroundEnvfix> BackgroundEnvfix::start(const std::vector<std::string>& argv, const SpawnOptions& o,
                                                          const fs::path& log_dir) {
  auto b = std::unique_ptr<BackgroundEnvfix>(new BackgroundEnvfix());
  static int counter = 0;
  ++counter;
  b->m_out = log_dir / fmt::format("envfix-{}.out", counter);
  b->m_err = log_dir / fmt::format("envfix-{}.err", counter);
  // Everything the child needs is built before fork (no allocation after it).
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string s(*e);
    auto eq = s.find('=');
    if (eq != std::string::npos) env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (const auto& [k, v] : o.env) env[k] = v;
  std::vector<std::string> env_s;
  for (const auto& [k, v] : env)
    if (!v.empty() || !o.env.contains(k)) env_s.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  int out = ::open(b->m_out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = ::open(b->m_err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(out >= 0);
  REQUIRE(err >= 0);
  // Signals stay blocked from before the fork until the child has its default handlers: a signal
  // sent right after the fork (the "start+0" trials) must not run this test binary's handlers
  // (doctest's crash report) in the child, which then printed "test case CRASHED" for a parent
  // that was fine. Delivered after the unblock, it kills the child as it would kill envfix.
  sigset_t all, before;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &before);
  pid_t pid = ::fork();
  if (pid != 0) ::sigprocmask(SIG_SETMASK, &before, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(out, 1);
    ::dup2(err, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (o.fsize_limit) {
      // Ignored (not defaulted) SIGXFSZ survives exec: a write past the limit then fails with EFBIG.
      ::signal(SIGXFSZ, SIG_IGN);
      struct rlimit rl = {*o.fsize_limit, *o.fsize_limit};
      ::setrlimit(RLIMIT_FSIZE, &rl);
    }
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
  b->m_pid = pid;
  return b;
}

BackgroundEnvfix::~BackgroundEnvfix() {
  if (m_pid > 0 && !m_reaped) {
    ::kill(m_pid, SIGKILL);
    ::waitpid(m_pid, &m_status, 0);
  }
}

bool BackgroundEnvfix::exited() {
  if (m_reaped) return true;
  pid_t w = ::waitpid(m_pid, &m_status, WNOHANG);
  if (w == m_pid) m_reaped = true;
  return m_reaped;
}

EnvfixRun BackgroundEnvfix::wait(std::chrono::milliseconds timeout) {
  EnvfixRun r;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exited()) {
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, &m_status, 0);
      m_reaped = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(m_status)) r.rc = WEXITSTATUS(m_status);
  if (WIFSIGNALED(m_status)) r.term_signal = WTERMSIG(m_status);
  r.out = util::read_file(m_out).value_or("");
  r.err = util::read_file(m_err).value_or("");
  return r;
}

std::string BackgroundEnvfix::err_so_far() const { return util::read_file(m_err).value_or(""); }

// ---- the world --------------------------------------------------------------------------------------

ApplyWorld::ApplyWorld() {
  m_root = util::make_temp_dir({}, "envfix-reliability-apply").value();
  auto s = build_index(m_root / "index", index_spec());
  REQUIRE_MESSAGE(s, (s ? "" : s.error().render()));
  auto n = NginxServer::start({.root = m_root / "index"});
  REQUIRE_MESSAGE(n, (n ? "" : n.error().render()));
  m_nginx = std::move(*n);
  fs::create_directories(m_root / "matrices");
  REQUIRE(util::write_file_atomic(m_root / "matrices/bulk.yaml", kMatrices, 0644));
}

ApplyWorld::~ApplyWorld() {
  m_nginx.reset();
  std::error_code ec;
  fs::remove_all(m_root, ec);
}

fs::path ApplyWorld::make_venv_at(const fs::path& dir) {
  auto r =
      util::run_process({python3(), "-m", "venv", "--without-pip", dir.string()}, {.timeout = std::chrono::seconds(600)}).value();
  REQUIRE_MESSAGE(r.ok(), r.err);
  return dir;
}

fs::path ApplyWorld::venv(const std::string& name) { return make_venv_at(m_root / name); }

std::vector<std::string> ApplyWorld::envfix_argv(std::vector<std::string> args) const {
  std::vector<std::string> a{envfix_bin().string()};
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

std::vector<std::string> ApplyWorld::apply_argv(const fs::path& venv, const std::string& version, const fs::path& cache,
                                                std::vector<std::string> extra) const {
  std::vector<std::string> a{"apply",
                             "bulk==" + version,
                             "--framework",
                             "bulk",
                             "--matrices",
                             (m_root / "matrices").string(),
                             "--mirror",
                             m_nginx->https_url(),
                             "--gpu",
                             "sm_90",
                             "--driver",
                             "580.65.06",
                             "--python",
                             (venv / "bin/python").string(),
                             "--yes",
                             "--lockfile",
                             (m_root / "envfix.lock").string(),
                             "--cache-dir",
                             (cache.empty() ? this->cache() : cache).string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return envfix_argv(a);
}

std::map<std::string, std::string> ApplyWorld::base_env() const {
  // An empty value unsets (see BackgroundEnvfix::start).
  std::map<std::string, std::string> e{{"SSL_CERT_FILE", m_nginx->ca_file().string()}, {"NO_COLOR", "1"}};
  for (const char* k :
       {"REQUESTS_CA_BUNDLE", "PIP_FIND_LINKS", "VIRTUAL_ENV", "CONDA_PREFIX", "ENVFIX_GPU", "ENVFIX_DRIVER", "ENVFIX_INDEX_URL",
        "ENVFIX_MATRICES", "ENVFIX_CACHE_DIR", "ENVFIX_OFFLINE", "ENVFIX_PYTHON", "ENVFIX_MIRROR", "ENVFIX_LINK_MODE",
        "SMOKE_SLEEP", "SMOKE_FAIL", "SMOKE_PIDFILE", "SMOKE_GRANDCHILD", "SMOKE_ENV_OUT", "SMOKE_GATE"})
    e[k] = "";
  return e;
}

std::unique_ptr<BackgroundEnvfix> ApplyWorld::spawn(const std::vector<std::string>& argv, const SpawnOptions& o) {
  SpawnOptions so = o;
  auto env = base_env();
  for (const auto& [k, v] : o.env) env[k] = v;
  so.env = env;
  return BackgroundEnvfix::start(argv, so, m_root);
}

EnvfixRun ApplyWorld::run(const std::vector<std::string>& argv, const SpawnOptions& o, std::chrono::seconds timeout) {
  auto b = spawn(argv, o);
  auto r = b->wait(timeout);
  std::string cmd;
  for (std::size_t i = 1; i < argv.size() && i < 3; ++i) cmd += " " + argv[i];
  MESSAGE("envfix" << cmd << " … -> rc " << r.rc << " sig " << r.term_signal << "\n" << r.err);
  return r;
}

std::optional<std::string> enter_private_mount_namespace() {
  static std::optional<std::optional<std::string>> done;
  if (done) return *done;
  if (::geteuid() != 0)
    done = std::optional<std::string>("not root");
  else if (::unshare(CLONE_NEWNS) != 0)
    done = std::optional<std::string>(fmt::format("unshare(CLONE_NEWNS): {}", std::strerror(errno)));
  else if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    done = std::optional<std::string>(fmt::format("mount --make-rprivate /: {}", std::strerror(errno)));
  else
    done = std::optional<std::string>();
  return *done;
}

} // namespace envfix::testing
