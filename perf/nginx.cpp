// http_static's and https's baseline: nginx, when it is installed, serving
// the same file as one process (master_process off: the process whose CPU
// time is read does all the work) with sendfile on, access_log off, and
// keep-alive connections never closed for their request count
// (keepalive_requests), as spindle-http's are not; otherwise nginx's
// defaults (no tcp_nopush, no open_file_cache). It runs as the current user
// from a configuration written into a temporary directory, which also holds
// its pid file, error log and temporary directories.
//
// Over TLS it listens with ssl and the prepared certificate, without session
// tickets or a session cache (ssl_session_tickets off, ssl_session_cache
// off), and with ssl_protocols TLSv1.2 TLSv1.3, as spindle-http accepts:
// nginx sets its protocol range itself, over OPENSSL_CONF's MinProtocol, and
// before 1.23.4 enables TLS 1.3 only when ssl_protocols names it. The suite,
// the group and the tickets are OPENSSL_CONF's (http_static.cpp).

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>
#include <string_view>

#include "http_static.hpp"
#include "measure.hpp"
#include "programs.hpp"
#include "scratch.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

constexpr std::string_view kSbinNginx = "/usr/sbin/nginx";

std::string find_nginx() {
  std::string nginx = find_on_path("nginx");
  if (nginx.empty() && ::access(std::string(kSbinNginx).c_str(), X_OK) == 0) nginx = kSbinNginx;
  return nginx;
}

// What nginx -V prints: its version and configure arguments.
std::string version_text(const std::string& nginx) {
  return run_capture(nginx, {"-V"}, {.merge_stderr = true});  // printed on stderr
}

// The temporary-file directories of the modules this nginx has, in `dir`:
// one left out would make nginx create its built-in one (under /var/lib) at
// start-up, which only root may.
std::string temp_paths(const std::string& nginx, const std::filesystem::path& dir) {
  const std::string version = version_text(nginx);
  std::string out = fmt::format("  client_body_temp_path {};\n", (dir / "client_body").string());
  for (std::string_view module :
       std::array<std::string_view, 4>{"proxy", "fastcgi", "uwsgi", "scgi"}) {
    if (version.find(fmt::format("--without-http_{}_module", module)) == std::string::npos) {
      out += fmt::format("  {}_temp_path {};\n", module, (dir / module).string());
    }
  }
  return out;
}

// The server block's TLS directives for `load`; none without tls.
std::string tls_directives(const Params& p, const HttpLoad& load) {
  if (!load.tls) return "";
  return fmt::format(
      "    ssl_certificate {};\n    ssl_certificate_key {};\n"
      "    ssl_protocols TLSv1.2 TLSv1.3;\n    ssl_session_tickets off;\n"
      "    ssl_session_cache off;\n",
      p.tls_certificate.string(), p.tls_key.string());
}

std::string config(const std::string& nginx, const std::filesystem::path& dir, const Params& p,
                   const HttpLoad& load, std::uint16_t port) {
  return fmt::format(R"(# spindle-perf {what}: nginx as one process serving {root}.
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{
  worker_connections 1024;
}}
http {{
  access_log off;
  sendfile on;
  keepalive_requests 1000000;
  default_type application/octet-stream;
{temp}  server {{
    listen 127.0.0.1:{port}{ssl};
    root {root};
{tls}  }}
}}
)",
                     fmt::arg("what", load.name), fmt::arg("dir", dir.string()),
                     fmt::arg("root", p.static_root.string()), fmt::arg("port", port),
                     fmt::arg("ssl", load.tls ? " ssl" : ""),
                     fmt::arg("tls", tls_directives(p, load)),
                     fmt::arg("temp", temp_paths(nginx, dir)));
}

}  // namespace

std::string nginx_missing(const HttpLoad& load) {
  if (std::string tools = load_missing(load); !tools.empty()) return tools;
  const std::string nginx = find_nginx();
  if (nginx.empty()) {
    return fmt::format(
        "nginx is not installed (no nginx on PATH or at {}; apt-get install nginx-light, or "
        "nginx)",
        kSbinNginx);
  }
  if (load.tls && version_text(nginx).find("--with-http_ssl_module") == std::string::npos) {
    return fmt::format("{} has no SSL module (nginx -V lists no --with-http_ssl_module)", nginx);
  }
  return "";
}

Row nginx_http(const Params& p, const HttpLoad& load) {
  const std::string nginx = find_nginx();
  check(!nginx.empty(), "{}: {}", load.name, nginx_missing(load));
  const ScratchDir dir;
  const std::uint16_t port = free_loopback_port();
  const std::filesystem::path conf = dir.path() / "nginx.conf";
  write_text_file(conf, config(nginx, dir.path(), p, load, port), load.name);
  return measure_http(p, load, "nginx",
                      {.exe = nginx,
                       .args = {"-p", dir.path().string() + "/", "-c", conf.string()},
                       .port = port,
                       .log = dir.path() / "error.log"});
}

}  // namespace spindle::perf
