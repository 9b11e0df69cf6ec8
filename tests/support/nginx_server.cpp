#include "tests/support/nginx_server.hpp"

#include <fmt/format.h>

#include "util/fs.hpp"
#include "util/subprocess.hpp"

#ifndef ENVFIX_SOURCE_DIR
#error "ENVFIX_SOURCE_DIR must be defined (envfix_test does it)"
#endif

namespace envfix::testing {

namespace fs = std::filesystem;

fs::path support_dir() { return fs::path(ENVFIX_SOURCE_DIR) / "tests" / "support"; }

namespace {

Expected<void> run_ok(const std::vector<std::string>& argv) {
  auto r = util::run_process(argv, {.timeout = std::chrono::seconds(60)});
  if (!r) return std::unexpected(r.error());
  if (!r->ok()) return fail(ErrorCode::subprocess, "{} failed ({}): {}", argv[0], r->exit_code, r->err);
  return {};
}

// CA + server certificate for 127.0.0.1/localhost.
Expected<void> make_certs(const fs::path& dir) {
  auto p = [&](const char* n) { return (dir / n).string(); };
  if (auto r =
          util::write_file_atomic(dir / "san.ext", "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                                   "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n");
      !r)
    return r;
  for (auto& argv : std::vector<std::vector<std::string>>{
           {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2",
            "-subj", "/CN=envfix test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
            "keyUsage=critical,keyCertSign,cRLSign"},
           {"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", p("server.key"), "-out", p("server.csr"), "-subj",
            "/CN=127.0.0.1"},
           {"openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"), "-CAcreateserial",
            "-out", p("server.pem"), "-days", "2", "-extfile", p("san.ext")},
       }) {
    if (auto r = run_ok(argv); !r) return r;
  }
  return {};
}

} // namespace

Expected<std::unique_ptr<NginxServer>> NginxServer::start(NginxOptions options) {
  std::unique_ptr<NginxServer> s(new NginxServer());
  s->m_options = std::move(options);
  s->m_prefix = ENVFIX_TRY(util::make_temp_dir({}, "envfix-nginx"));
  fs::create_directories(s->m_prefix / "logs");
  fs::create_directories(s->m_prefix / "tmp");
  if (auto r = make_certs(s->m_prefix); !r) return std::unexpected(r.error());
  s->m_ca = s->m_prefix / "ca.pem";
  s->m_access_log = s->m_prefix / "logs" / "access.log";
  // htpasswd line: user:{apr1 hash}
  auto hash = util::run_process({"openssl", "passwd", "-apr1", s->m_options.basic_password});
  if (!hash || !hash->ok()) return fail(ErrorCode::subprocess, "openssl passwd failed");
  std::string pw = hash->out;
  while (!pw.empty() && pw.back() == '\n') pw.pop_back();
  if (auto r = util::write_file_atomic(s->m_prefix / "htpasswd", s->m_options.basic_user + ":" + pw + "\n"); !r)
    return std::unexpected(r.error());

  std::string root = fs::absolute(s->m_options.root).string();
  for (int attempt = 0; attempt < 5; ++attempt) {
    s->m_http_port = ENVFIX_TRY(free_port());
    s->m_https_port = ENVFIX_TRY(free_port());
    if (s->m_https_port == s->m_http_port) continue;
    std::string prefix = s->m_prefix.string();
    std::string locations = fmt::format(R"(
    root {root};
    autoindex on;
    etag on;
    location /simple/ {{
      types {{ text/html html; application/vnd.pypi.simple.v1+json json; }}
      default_type text/html;
      try_files $uri$simple_index $uri/index.html $uri =404;
    }}
    location /private/ {{
      auth_basic "envfix";
      auth_basic_user_file {prefix}/htpasswd;
      types {{ text/html html; application/vnd.pypi.simple.v1+json json; application/octet-stream whl metadata; }}
      rewrite ^/private/(.*)$ /$1 break;
      try_files $uri$simple_index $uri/index.html $uri =404;
    }}
    location /redirect-http/ {{
      rewrite ^/redirect-http/(.*)$ http://127.0.0.1:{http}/$1 permanent;
    }}
    location /redirect/ {{
      rewrite ^/redirect/(.*)$ /$1 redirect;
    }}
    {extra}
)",
                                        fmt::arg("root", root), fmt::arg("prefix", prefix), fmt::arg("http", s->m_http_port),
                                        fmt::arg("extra", s->m_options.extra_server_conf));
    std::string conf = fmt::format(R"(
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 256; }}
http {{
  include /etc/nginx/mime.types;
  types {{ application/octet-stream whl metadata; }}
  default_type application/octet-stream;
  access_log {prefix}/logs/access.log;
  client_body_temp_path {prefix}/tmp/body;
  proxy_temp_path {prefix}/tmp/proxy;
  fastcgi_temp_path {prefix}/tmp/fastcgi;
  uwsgi_temp_path {prefix}/tmp/uwsgi;
  scgi_temp_path {prefix}/tmp/scgi;
  sendfile on;
  keepalive_requests 10000;
  map $http_accept $simple_index {{
    default index.html;
    "~application/vnd\.pypi\.simple\.v1\+json" index.json;
  }}
  server {{
    listen 127.0.0.1:{http};
    {locations}
  }}
  server {{
    listen 127.0.0.1:{https} ssl http2;
    ssl_certificate {prefix}/server.pem;
    ssl_certificate_key {prefix}/server.key;
    {locations}
  }}
}}
)",
                                   fmt::arg("prefix", prefix), fmt::arg("http", s->m_http_port),
                                   fmt::arg("https", s->m_https_port), fmt::arg("locations", locations));
    if (auto r = util::write_file_atomic(s->m_prefix / "nginx.conf", conf); !r) return std::unexpected(r.error());
    auto child =
        ChildProcess::spawn({"/usr/sbin/nginx", "-p", prefix, "-c", prefix + "/nginx.conf", "-e", prefix + "/logs/error.log"},
                            s->m_prefix / "logs" / "stderr.log");
    if (!child) return std::unexpected(child.error());
    s->m_child = std::make_unique<ChildProcess>(std::move(*child));
    // Generous: nginx listens within milliseconds; a loaded CI machine may take seconds.
    if (wait_for_port(s->m_http_port, std::chrono::seconds(60)) && wait_for_port(s->m_https_port, std::chrono::seconds(60)) &&
        s->m_child->running())
      return s;
    s->m_child->stop(); // port race or bad conf: try again with other ports
  }
  auto log = util::read_file(s->m_prefix / "logs" / "error.log");
  return fail(ErrorCode::subprocess, "nginx did not start: {}", log ? *log : std::string("(no error log)"));
}

NginxServer::~NginxServer() {
  if (m_child) m_child->stop();
  std::error_code ec;
  if (!m_prefix.empty() && !std::getenv("ENVFIX_KEEP_TEST_SERVERS")) fs::remove_all(m_prefix, ec);
}

std::string NginxServer::http_url() const { return fmt::format("http://127.0.0.1:{}", m_http_port); }
std::string NginxServer::https_url() const { return fmt::format("https://127.0.0.1:{}", m_https_port); }
std::string NginxServer::access_log_text() const { return util::read_file(m_access_log).value_or(""); }

Expected<std::unique_ptr<FaultServer>> FaultServer::start(const fs::path& root, int lifetime_seconds) {
  std::unique_ptr<FaultServer> s(new FaultServer());
  auto dir = ENVFIX_TRY(util::make_temp_dir({}, "envfix-fault"));
  s->m_dir = dir;
  s->m_log = dir / "requests.log";
  auto child =
      ChildProcess::spawn({"python3", (support_dir() / "fault_server.py").string(), "--root", fs::absolute(root).string(),
                           "--lifetime", std::to_string(lifetime_seconds), "--log", s->m_log.string()},
                          dir / "stderr.log");
  if (!child) return std::unexpected(child.error());
  s->m_child = std::make_unique<ChildProcess>(std::move(*child));
  auto line = s->m_child->read_line(std::chrono::seconds(60)); // generous: a loaded machine
  if (!line || !line->starts_with("PORT "))
    return fail(ErrorCode::subprocess, "fault_server.py did not start: {}",
                util::read_file(dir / "stderr.log").value_or("(no stderr)"));
  s->m_port = std::stoi(line->substr(5));
  return s;
}

FaultServer::~FaultServer() {
  if (m_child) m_child->stop();
  std::error_code ec;
  if (!m_dir.empty() && !std::getenv("ENVFIX_KEEP_TEST_SERVERS")) fs::remove_all(m_dir, ec);
}

std::string FaultServer::url() const { return fmt::format("http://127.0.0.1:{}", m_port); }
std::string FaultServer::fault_url(std::string_view spec, std::string_view path) const {
  return fmt::format("{}/fault/{}/{}", url(), spec, path);
}
std::string FaultServer::log_text() const { return util::read_file(m_log).value_or(""); }

Expected<std::string> build_index(const fs::path& out_dir, std::string_view spec_json) {
  auto r = util::run_process({"python3", (support_dir() / "index_builder.py").string(), "-", out_dir.string()},
                             {.timeout = std::chrono::seconds(300), .stdin_data = std::string(spec_json)});
  if (!r) return std::unexpected(r.error());
  if (!r->ok()) return fail(ErrorCode::subprocess, "index_builder.py failed ({}): {}", r->exit_code, r->err);
  return r->out;
}

} // namespace envfix::testing
