// file_randread's baseline: fio, when it is on PATH, reading the same file
// with the same block size and reads in flight: --ioengine=io_uring, buffered
// (--direct=0), the page cache kept (--invalidate=0), uniformly random blocks
// without fio's coverage map (--norandommap, as the fibers pick theirs). It
// runs as many jobs as spindle has workers, each with 32 / jobs in flight, so
// both use the same cores; its JSON report gives the IOPS.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "measure.hpp"
#include "programs.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

// The number `report[path...]`, or a PerfError naming what is missing.
double number_at(const nlohmann::json& report, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &report;
  std::string where;
  for (const char* key : path) {
    where += fmt::format("[\"{}\"]", key);
    check(at->is_object() && at->contains(key), "fio: no {} in its JSON report", where);
    at = &(*at)[key];
  }
  check(at->is_number(), "fio: {} is not a number in its JSON report", where);
  return at->get<double>();
}

}  // namespace

std::string fio_missing() {
  return find_on_path("fio").empty() ? "fio is not installed (no fio on PATH)" : "";
}

Row fio_file_randread(const Params& p) {
  const std::string fio = find_on_path("fio");
  check(!fio.empty(), "file_randread: {}", fio_missing());
  const std::size_t jobs = std::clamp<std::size_t>(p.workers, 1, kRandReadInFlight);
  const std::size_t depth = kRandReadInFlight / jobs;
  const std::uint64_t per_job = p.sizes.randread_reads / jobs;
  const std::uint64_t n = per_job * jobs;
  const std::string json = run_capture(
      fio, {"--name=r", fmt::format("--filename={}", randread_file(p).string()), "--rw=randread",
            "--bs=4k", "--ioengine=io_uring", fmt::format("--iodepth={}", depth), "--direct=0",
            fmt::format("--size={}", p.sizes.randread_bytes),
            // io_size lets a job read more than the file once; number_ios stops it.
            fmt::format("--io_size={}", per_job * 4096), fmt::format("--number_ios={}", per_job),
            "--time_based=0", fmt::format("--numjobs={}", jobs), "--group_reporting",
            "--norandommap", "--invalidate=0", "--output-format=json"});

  // One job entry (group_reporting): its error, its reads, its CPU share.
  const auto report = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  check(!report.is_discarded(), "fio: its report is not JSON: {}", json.substr(0, 200));
  check(report.contains("jobs") && report["jobs"].is_array() && report["jobs"].size() == 1,
        "fio: not one job in its JSON report");
  const nlohmann::json& job = report["jobs"][0];
  check(number_at(job, {"error"}) == 0, "fio: the job reports error {}", number_at(job, {"error"}));
  const double ios = number_at(job, {"read", "total_ios"});
  const double iops = number_at(job, {"read", "iops"});
  const double runtime_s = number_at(job, {"read", "runtime"}) / 1e3;
  check(ios == static_cast<double>(n) && iops > 0, "fio: {} of {} reads done", ios, n);
  // usr_cpu and sys_cpu: percent of the run time, summed over the jobs.
  const double cpu_s =
      (number_at(job, {"usr_cpu"}) + number_at(job, {"sys_cpu"})) / 100 * runtime_s;

  Row r = make_row("file_randread", "fio", p, n, {runtime_s, cpu_s}, "reads/s");
  r.rate = iops;  // fio's own figure: total_ios over its run time in ms
  r.set("jobs", static_cast<double>(jobs));
  r.set("iodepth", static_cast<double>(depth));
  r.set("file_mib", static_cast<double>(p.sizes.randread_bytes >> 20));
  return r;
}

}  // namespace spindle::perf
