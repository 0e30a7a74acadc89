// A small parser of the Prometheus text exposition format (version 0.0.4),
// for tests that check metrics_text(): samples with their labels, and the
// value of the series that match a name and some labels.
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spindle::test {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses every sample line (comments skipped). Throws std::runtime_error
// naming the line on a malformed one.
inline std::vector<Sample> parse_exposition(std::string_view text) {
  std::vector<Sample> out;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&] { return std::runtime_error("bad exposition line: " + std::string(line)); };
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = std::string(line.substr(0, i));
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const auto eq = line.find('=', i);
        if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"')
          throw bad();
        std::string key(line.substr(i, eq - i));
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) throw bad();
        s.labels.emplace(std::move(key), std::move(value));
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) throw bad();
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') throw bad();
    const std::string number(line.substr(i + 1));
    char* end = nullptr;
    s.value = std::strtod(number.c_str(), &end);
    if (end == number.c_str()) throw bad();
    out.push_back(std::move(s));
  }
  return out;
}

// The sum of the samples named `name` whose labels include `labels`; empty if
// there is none.
inline std::optional<double> metric_value(const std::vector<Sample>& samples, std::string_view name,
                                          const std::map<std::string, std::string>& labels = {}) {
  std::optional<double> sum;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) {
        match = false;
        break;
      }
    }
    if (match) sum = sum.value_or(0) + s.value;
  }
  return sum;
}

inline std::optional<double> metric_value(std::string_view text, std::string_view name,
                                          const std::map<std::string, std::string>& labels = {}) {
  return metric_value(parse_exposition(text), name, labels);
}

}  // namespace spindle::test
