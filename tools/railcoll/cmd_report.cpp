// railcoll report results DIR... [--into FILE]: the current table of
// docs/results.md from the records railcoll bench wrote (--json, with their
// context), one directory per regime (scripts/results.sh makes them).
#include <fstream>
#include <iostream>
#include <sstream>

#include "args.hpp"
#include "bench/results_table.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "usage.hpp"

namespace railcoll::cli {

namespace {

constexpr const char* kBegin = "<!-- results:begin (railcoll report results; do not edit by hand) -->";
constexpr const char* kEnd = "<!-- results:end -->";

// `file` with the text between the markers replaced by `table` (the markers
// and the table put after the first heading when the file has none yet).
std::string with_table(const std::string& file, const std::string& table) {
  const std::string block = std::string(kBegin) + "\n" + table + "\n" + kEnd + "\n";
  size_t begin = file.find(kBegin), end = file.find(kEnd);
  if (begin != std::string::npos && end != std::string::npos && end > begin)
    return file.substr(0, begin) + block + file.substr(file.find('\n', end) + 1);
  size_t heading_end = file.rfind("# ", 0) == 0 ? file.find('\n') + 1 : 0;
  return file.substr(0, heading_end) + "\n" + block + file.substr(heading_end);
}

}  // namespace

int cmd_report(const std::vector<std::string>& argv) {
  Args a(argv, {}, {"into"});
  if (a.positional().size() < 2 || a.positional()[0] != "results")
    throw UsageError("expects: railcoll report results DIR... [--into FILE] (railcoll report --help)");
  std::vector<bench::ResultRegime> regimes;
  for (size_t i = 1; i < a.positional().size(); ++i) regimes.push_back(bench::read_regime(a.positional()[i]));
  std::ostringstream table;
  bench::write_results_table(table, regimes);
  if (!a.has("into")) {
    std::cout << table.str();
    return 0;
  }
  const std::string path = a.str("into");
  std::ifstream in(path);
  std::stringstream old;
  if (in) old << in.rdbuf();
  std::ofstream out(path);
  out << with_table(old.str(), table.str());
  if (!out.flush()) throw InputError("cannot write " + path);
  std::cout << "railcoll report: the table of " << regimes.size() << " regime" << (regimes.size() == 1 ? "" : "s")
            << " is in " << path << "\n";
  return 0;
}

}  // namespace railcoll::cli
