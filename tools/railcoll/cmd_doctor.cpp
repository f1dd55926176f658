// railcoll doctor DIR: reads every rank's flight record in DIR (the runtime's
// flight recorder, src/runtime/observe/flight_recorder.cpp, writes them) and
// says in a few lines which ranks are behind, in which call and step, and what
// the others wait for. PyTorch's flight-recorder analyser
// (torch/distributed/flight_recorder) is the model: find the last call every
// rank took part in, the ranks that never reached the next one, the ranks
// that disagree about a call, and the rank the waiting ones wait for.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"

namespace railcoll::cli {

namespace {

struct Entry {
  uint64_t call = 0;
  std::string state, kind, what, detail, cause;
  double start = 0, end = 0;
  int op = -1, step = -1, peer = -1, rail = -1;
};

struct Record {
  int rank = -1, size = 0, node = -1;
  std::string comm, reason;
  std::vector<Entry> calls;  // oldest first
  const Entry* last() const { return calls.empty() ? nullptr : &calls.back(); }
  const Entry* at(uint64_t call) const {
    for (auto& e : calls)
      if (e.call == call) return &e;
    return nullptr;
  }
};

// The ranks that the records of call `call` name as being in another call:
// the runtime's "rank N is in a different call than this rank" (the finder's
// own failure, and every abort that relays it).
std::set<int> accused_of_another_call(const std::vector<Record>& recs, uint64_t call) {
  static const std::string kTail = " is in a different call";
  std::set<int> out;
  for (auto& r : recs) {
    const Entry* e = r.at(call);
    if (!e) continue;
    for (size_t at = e->detail.find(kTail); at != std::string::npos; at = e->detail.find(kTail, at + 1)) {
      size_t digits = at;
      while (digits > 0 && std::isdigit(static_cast<unsigned char>(e->detail[digits - 1]))) --digits;
      if (digits < at && digits >= 5 && e->detail.compare(digits - 5, 5, "rank ") == 0)
        out.insert(std::stoi(e->detail.substr(digits, at - digits)));
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

// One file: "railcoll-flight 1", the header line, the column line, the calls.
bool read_record(const std::filesystem::path& path, Record* r, std::string* err) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line.rfind("railcoll-flight 1", 0) != 0) return *err = "not a flight record", false;
  if (!std::getline(in, line)) return *err = "no header", false;
  std::istringstream h(line);
  std::string key, value;
  while (h >> key >> value) {
    if (key == "rank") r->rank = std::stoi(value);
    if (key == "size") r->size = std::stoi(value);
    if (key == "node") r->node = std::stoi(value);
    if (key == "comm") r->comm = value;
    if (key == "reason") r->reason = value;
  }
  std::getline(in, line);  // the column names
  while (std::getline(in, line)) {
    auto f = split(line, '\t');
    if (f.size() < 14) continue;
    Entry e;
    e.call = std::stoull(f[0]);
    e.state = f[1];
    e.start = std::stod(f[2]);
    e.end = std::stod(f[3]);
    e.op = std::stoi(f[6]);
    e.kind = f[8];
    e.step = std::stoi(f[9]);
    e.peer = std::stoi(f[10]);
    e.rail = std::stoi(f[11]);
    e.what = f[12];
    e.detail = f[13];
    if (f.size() > 14) e.cause = f[14];
    r->calls.push_back(e);
  }
  if (r->rank < 0) return *err = "no rank in the header", false;
  return true;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    // Runs of consecutive ranks as a range: "ranks 0-3, 5".
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (i ? ", " : "") + std::to_string(ranks[i]);
    if (j > i + 1) s += "-" + std::to_string(ranks[j]), i = j;
  }
  return s;
}

std::string rail_text(int rail) {
  return rail == -1 ? "the node's memory" : rail < -1 ? "every rail" : "rail " + std::to_string(rail);
}

// Where an entry got to: "op #4 (wait, step 1)".
std::string where(const Entry& e) {
  if (e.op < 0) return "before its first op";
  if (e.kind == "-") return "after its last op";
  return "op #" + std::to_string(e.op) + " (" + e.kind + ", step " + std::to_string(e.step) + ")";
}


int diagnose(const std::string& comm, const std::vector<Record>& recs) {
  int size = 0;
  for (auto& r : recs) size = std::max(size, r.size);
  std::set<int> have;
  for (auto& r : recs) have.insert(r.rank);
  std::vector<int> missing;
  for (int r = 0; r < size; ++r)
    if (!have.count(r)) missing.push_back(r);
  std::cout << "communicator " << comm << ": " << size << " ranks, records of " << recs.size();
  if (!missing.empty()) std::cout << " (none from " << ranks_text(missing) << ")";
  std::cout << "\n";

  uint64_t frontier = 0;
  for (auto& r : recs)
    if (r.last()) frontier = std::max(frontier, r.last()->call);
  if (frontier == 0) {
    std::cout << "no rank recorded a call\n";
    return 0;
  }
  std::vector<std::string> culprits;

  // Ranks that disagree about a call: the first such call.
  for (uint64_t c = 1; c <= frontier; ++c) {
    std::map<std::string, std::vector<int>> by_what;
    for (auto& r : recs)
      if (const Entry* e = r.at(c)) by_what[e->what].push_back(r.rank);
    if (by_what.size() < 2) continue;
    // The odd ones are the fewest. Where two groups are as few (the other
    // ranks had not entered the call yet: 1 against 1), the rank that found the
    // disagreement says whom it found in another call ("rank N is in a different
    // call", relayed in its peers' aborts): that rank's group is the odd one.
    const std::set<int> accused = accused_of_another_call(recs, c);
    std::cout << "call " << c << ": the ranks disagree:";
    size_t fewest = SIZE_MAX;
    bool fewest_accused = false;
    std::string odd;
    for (auto& [what, ranks] : by_what) {
      std::cout << " " << ranks_text(ranks) << " called " << what << ";";
      const bool is_accused = std::any_of(ranks.begin(), ranks.end(), [&](int r) { return accused.count(r) > 0; });
      if (ranks.size() < fewest || (ranks.size() == fewest && is_accused && !fewest_accused)) {
        fewest = ranks.size(), fewest_accused = is_accused;
        odd = ranks_text(ranks) + " (called " + what + ")";
      }
    }
    std::cout << "\n";
    culprits.push_back(odd);
    break;
  }

  // Who took part in the last call, and how far each got.
  std::vector<int> in_frontier, behind;
  double first_failure = 0;
  for (auto& r : recs) {
    const Entry* e = r.at(frontier);
    if (!e) {
      behind.push_back(r.rank);
      continue;
    }
    in_frontier.push_back(r.rank);
    if (e->state == "failed" && e->end > 0 && (first_failure == 0 || e->end < first_failure)) first_failure = e->end;
  }
  const Entry* sample = nullptr;
  for (auto& r : recs)
    if ((sample = r.at(frontier))) break;
  std::cout << "last call: " << frontier << " (" << sample->what << "), reached by " << ranks_text(in_frontier)
            << "\n";
  std::vector<std::string> stopped_behind;
  for (int rank : behind) {
    for (auto& r : recs) {
      if (r.rank != rank) continue;
      const Entry* e = r.last();
      std::cout << "rank " << rank << " is behind: "
                << (e ? "its last call is " + std::to_string(e->call) + " (" + e->state + ", " + where(*e) + ")"
                      : std::string("it recorded no call"))
                << "\n";
      const std::string culprit =
          "rank " + std::to_string(rank) + " (behind, in call " + (e ? std::to_string(e->call) : std::string("none")) + ")";
      // One whose last call failed was stopped there by another's failure
      // (a peer that died mid-call): a weaker suspect than a rank that left no record.
      (e && e->state == "failed" ? stopped_behind : culprits).push_back(culprit);
    }
  }
  // Ranks that entered the last call only after others had given it up.
  for (auto& r : recs) {
    const Entry* e = r.at(frontier);
    if (e && first_failure > 0 && e->start > first_failure) {
      std::cout << "rank " << r.rank << " entered call " << frontier << " late: " << (e->start - first_failure)
                << " s after the first rank gave it up\n";
      culprits.push_back("rank " + std::to_string(r.rank) + " (late into call " + std::to_string(frontier) + ")");
    }
  }
  for (int rank : missing) culprits.push_back("rank " + std::to_string(rank) + " (left no record: it died, or was killed)");
  culprits.insert(culprits.end(), stopped_behind.begin(), stopped_behind.end());

  // What the ranks in the last call waited for, grouped.
  std::map<std::string, std::vector<int>> waits;
  std::map<std::string, int> waited_for;  // "rank P on rail R" -> how many ranks that timed out waited for it
  std::map<std::string, int> causes;
  for (auto& r : recs) {
    const Entry* e = r.at(frontier);
    if (!e || e->state == "done") continue;
    std::string w = e->state + " at " + where(*e);
    if (e->peer >= 0) {
      const std::string whom = "rank " + std::to_string(e->peer) + " on " + rail_text(e->rail);
      w += ", waiting for " + whom;
      // Ranks aborted by another's failure record where they were, not whom it was about.
      if (e->detail.rfind("rank " + std::to_string(r.rank) + " timed out", 0) == 0) ++waited_for[whom];
    }
    waits[w].push_back(r.rank);
    if (!e->cause.empty()) ++causes[e->cause];
  }
  for (auto& [w, ranks] : waits) std::cout << ranks_text(ranks) << ": " << w << "\n";
  if (!causes.empty()) {
    auto best = std::max_element(causes.begin(), causes.end(), [](auto& a, auto& b) { return a.second < b.second; });
    std::cout << "the timeouts' likely cause: " << best->first << "\n";
  }
  if (culprits.empty() && !waited_for.empty()) {
    auto most = std::max_element(waited_for.begin(), waited_for.end(),
                                 [](auto& a, auto& b) { return a.second < b.second; });
    culprits.push_back(most->first + " (waited for by " + std::to_string(most->second) + " rank" +
                       (most->second > 1 ? "s" : "") + " that timed out)");
  }
  if (culprits.empty())
    std::cout << "no rank is behind\n";
  else
    std::cout << "likely culprit: " << culprits.front() << "\n";
  return 0;
}

}  // namespace

int cmd_doctor(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "usage: railcoll doctor DIR\n";
    return 2;
  }
  std::map<std::string, std::vector<Record>> by_comm;
  std::error_code ec;
  for (auto& f : std::filesystem::directory_iterator(args[0], ec)) {
    const std::string name = f.path().filename().string();
    if (name.rfind("flight-", 0) != 0 || f.path().extension() != ".txt") continue;
    Record r;
    std::string err;
    try {
      if (!read_record(f.path(), &r, &err)) {
        std::cerr << "railcoll doctor: " << f.path().string() << ": " << err << "\n";
        continue;
      }
    } catch (const std::exception& e) {
      std::cerr << "railcoll doctor: " << f.path().string() << ": malformed (" << e.what() << ")\n";
      continue;
    }
    by_comm[r.comm].push_back(std::move(r));
  }
  if (ec) {
    std::cerr << "railcoll doctor: " << args[0] << ": " << ec.message() << "\n";
    return 1;
  }
  if (by_comm.empty()) {
    std::cerr << "railcoll doctor: no flight records (flight-*.txt) in " << args[0] << "\n";
    return 1;
  }
  for (auto& [comm, recs] : by_comm) {
    std::sort(recs.begin(), recs.end(), [](const Record& a, const Record& b) { return a.rank < b.rank; });
    diagnose(comm, recs);
  }
  return 0;
}

}  // namespace railcoll::cli
