// RequestParser: Boost.Beast's HTTP/1 request parser (http::basic_parser,
// the base of http::request_parser) with handlers that keep only what the
// server routes on, so parsing a request allocates nothing. It is fed
// straight from the TcpStream's read buffer (peek/consume).
#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <string>

namespace spindle::apps::http {

namespace beast_http = boost::beast::http;

// What a request asks for, decided as soon as its request line is parsed.
// GET /metrics is the runtime's Prometheus text; with files served
// (serve_files()), GET of any other path is a file (kFile), else GET / is
// the hello response.
enum class Route : unsigned char { kHello, kMetrics, kFile, kNotFound, kMethodNotAllowed };

// One request: construct a new parser for each (Beast parsers do not reset).
// The body is counted and dropped. Not thread-safe.
class RequestParser final : public beast_http::basic_parser<true> {
 public:
  // Before the first put(): GET and HEAD of paths other than /metrics ask
  // for files (Route::kFile, with path()).
  void serve_files() noexcept { files_ = true; }

  Route route() const noexcept { return route_; }
  // Route::kFile: the request-target's path, still percent-encoded.
  const std::string& path() const noexcept { return path_; }
  bool head() const noexcept { return head_; }
  int version() const noexcept { return version_; }
  // The client sent "Expect: 100-continue" and waits for our go-ahead.
  bool expects_continue() const noexcept { return expect_continue_; }

 private:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  void on_request_impl(beast_http::verb method, string_view, string_view target, int version,
                       error_code&) override {
    version_ = version;
    head_ = method == beast_http::verb::head;
    // The path is what precedes '?' or '#'.
    const auto end = target.find_first_of("?#");
    const string_view path = end == string_view::npos ? target : target.substr(0, end);
    const bool get = method == beast_http::verb::get || head_;
    if (files_ && path != "/metrics") {
      route_ = get ? Route::kFile : Route::kMethodNotAllowed;
      if (get) path_.assign(path.data(), path.size());
    } else if (path != "/" && path != "/metrics") {
      route_ = Route::kNotFound;
    } else if (get) {
      route_ = path == "/" ? Route::kHello : Route::kMetrics;
    } else {
      route_ = Route::kMethodNotAllowed;
    }
  }
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(beast_http::field name, string_view, string_view value, error_code&) override {
    if (name == beast_http::field::expect && boost::beast::iequals(value, "100-continue"))
      expect_continue_ = true;
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(string_view body, error_code&) override { return body.size(); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override {
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  std::string path_;
  Route route_ = Route::kNotFound;
  bool files_ = false;
  int version_ = 11;
  bool head_ = false;
  bool expect_continue_ = false;
};

}  // namespace spindle::apps::http
