// http_static's baseline: nginx, when it is installed, serving the same file
// as one process (master_process off: the process whose CPU time is read
// does all the work) with sendfile on, access_log off, and keep-alive
// connections never closed for their request count (keepalive_requests),
// as spindle-http's are not; otherwise nginx's defaults (no tcp_nopush, no
// open_file_cache). It runs as the current user from a configuration written
// into a temporary directory, which also holds its pid file, error log and
// temporary directories.

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

// The temporary-file directories of the modules this nginx has, in `dir`:
// one left out would make nginx create its built-in one (under /var/lib) at
// start-up, which only root may.
std::string temp_paths(const std::string& nginx, const std::filesystem::path& dir) {
  // nginx -V prints its configure arguments on stderr.
  Program version(nginx, {"-V"}, {.merge_stderr = true});
  const ProgramExit v = version.wait();
  check(v.ok(), "http_static: {} -V {}: {}", nginx, describe_status(v.status), v.out);
  std::string out = fmt::format("  client_body_temp_path {};\n", (dir / "client_body").string());
  for (std::string_view module :
       std::array<std::string_view, 4>{"proxy", "fastcgi", "uwsgi", "scgi"}) {
    if (v.out.find(fmt::format("--without-http_{}_module", module)) == std::string::npos) {
      out += fmt::format("  {}_temp_path {};\n", module, (dir / module).string());
    }
  }
  return out;
}

std::string config(const std::string& nginx, const std::filesystem::path& dir,
                   const std::filesystem::path& root, std::uint16_t port) {
  return fmt::format(R"(# spindle-perf http_static: nginx as one process serving {root}.
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
    listen 127.0.0.1:{port};
    root {root};
  }}
}}
)",
                     fmt::arg("dir", dir.string()), fmt::arg("root", root.string()),
                     fmt::arg("port", port), fmt::arg("temp", temp_paths(nginx, dir)));
}

}  // namespace

std::string nginx_missing() {
  if (std::string wrk = wrk_missing(); !wrk.empty()) return wrk;
  if (find_nginx().empty()) {
    return fmt::format(
        "nginx is not installed (no nginx on PATH or at {}; apt-get install nginx-light, or "
        "nginx)",
        kSbinNginx);
  }
  return "";
}

Row nginx_http_static(const Params& p) {
  const std::string nginx = find_nginx();
  check(!nginx.empty(), "http_static: {}", nginx_missing());
  const ScratchDir dir;
  const std::uint16_t port = free_loopback_port();
  const std::filesystem::path conf = dir.path() / "nginx.conf";
  write_text_file(conf, config(nginx, dir.path(), p.static_root, port), "http_static");
  return measure_http_static(p, "nginx",
                             {.exe = nginx,
                              .args = {"-p", dir.path().string() + "/", "-c", conf.string()},
                              .port = port,
                              .log = dir.path() / "error.log"});
}

}  // namespace spindle::perf
