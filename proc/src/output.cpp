#include "spindle/proc/output.hpp"

#include "spindle/sched/context.hpp"

namespace spindle::process {

Result<Output> output(const std::vector<std::string>& argv, Options options, Timeout timeout) {
  const Timeout until = Timeout::at(timeout.deadline());
  options.std_out = Stdio::kPipe;
  options.std_err = Stdio::kPipe;
  auto child = spawn(argv, options);
  if (!child) return failure(child.error());
  child->std_in().close();
  // The stderr reader owns its Pipe: if this call returns early it may
  // outlive the call; it ends at the end of stream the kill brings, or
  // with this fiber (its parent).
  auto err =
      spindle::spawn([pipe = std::move(child->std_err()), until]() mutable -> Result<std::string> {
        std::string text;
        if (auto r = pipe.read_to_end(text, until); !r) return failure(r.error());
        return text;
      });
  Output result;
  if (auto r = child->std_out().read_to_end(result.out, until); !r) {
    err.abort();
    return failure(r.error());
  }
  auto err_text = err.join();
  if (!err_text) return failure(err_text.error());
  if (!*err_text) return failure(err_text->error());
  result.err = std::move(**err_text);
  auto status = child->wait(until);
  if (!status) return failure(status.error());
  result.status = *status;
  return result;
}

}  // namespace spindle::process
