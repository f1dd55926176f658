#include "core/schedule_io.hpp"

#include <iomanip>
#include <sstream>

#include <algorithm>

namespace railcoll {

namespace {

std::string span_text(const Span& sp, int self_rank, int self_node) {
  std::ostringstream o;
  bool own = sp.region == Region::Shared ? sp.owner == self_node : sp.owner == self_rank;
  if (!own) o << (sp.region == Region::Shared ? "n" : "r") << sp.owner << ".";
  o << region_name(sp.region) << "[" << sp.offset << "," << sp.offset + sp.length << ")";
  return o.str();
}

std::string counter_text(const CounterRef& c) {
  return (c.on_node ? "n" : "r") + std::to_string(c.owner) + ".c" + std::to_string(c.index);
}

std::string rail_text(int rail) { return rail == kStripe ? "stripe" : "rail " + std::to_string(rail); }

const char* hw_text(HwAssist hw) {
  return hw == HwAssist::Multicast ? "multicast" : hw == HwAssist::Combine ? "combine" : "";
}

// "allreduce of float, sum, root 0": the call's arguments that are not sizes.
std::string call_args_text(const Schedule& s) {
  if (traits(s.collective).reducing) return std::string(", ") + dtype_name(s.dtype) + " " + redop_name(s.redop);
  if (traits(s.collective).rooted) return ", root " + std::to_string(s.root);
  return "";
}

void span_json(std::ostream& o, const Span& sp) {
  o << "{\"region\":\"" << region_name(sp.region) << "\",\"owner\":" << sp.owner << ",\"offset\":" << sp.offset
    << ",\"length\":" << sp.length << "}";
}

template <class T>
void json_array(std::ostream& o, const std::vector<T>& v) {
  o << "[";
  for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
  o << "]";
}

}  // namespace

std::string schedule_title(const Schedule& s) {
  std::ostringstream o;
  o << collective_name(s.collective) << "/" << s.algorithm << " [" << s.topo.describe() << "; ";
  bool uniform = std::all_of(s.send_bytes.begin(), s.send_bytes.end(),
                             [&](uint64_t b) { return b == s.send_bytes[0]; });
  const Result result = traits(s.collective).result;
  const bool pairs_uniform = std::all_of(s.pair_bytes.begin(), s.pair_bytes.end(),
                                         [&](uint64_t b) { return b == s.pair_bytes[0]; });
  if (result == Result::RootBlock && s.root >= 0 && s.root < static_cast<int>(s.send_bytes.size()))
    o << s.send_bytes[s.root] << " B from root " << s.root;  // only the root sends
  else if (result == Result::RootBlocks && s.root >= 0 && s.root < static_cast<int>(s.send_bytes.size()))
    o << s.send_bytes[s.root] << " B from root " << s.root << " to scatter";
  else if (!s.pair_bytes.empty())
    o << (pairs_uniform ? std::to_string(s.pair_bytes[0]) + " B per pair of ranks" : "variable bytes per pair");
  else if (uniform && !s.send_bytes.empty())
    o << s.send_bytes[0] << " B per rank";
  else
    o << "variable bytes per rank";
  o << "]";
  return o.str();
}

std::string describe_op(const Schedule& s, int rank, int index) {
  std::ostringstream o;
  o << "op #" << index;
  if (rank < 0 || rank >= static_cast<int>(s.programs.size()) || index < 0 ||
      index >= static_cast<int>(s.programs[rank].size()))
    return o.str();
  const Op& op = s.programs[rank][index];
  o << " (step " << op.step << ": " << op_name(op.kind);
  if (op.kind == OpKind::Put) {
    o << " -> " << op.peer << ", ";
    if (op.rail == kStripe) o << "stripe"; else o << "rail " << op.rail;
    o << ", " << op.bytes() << " B";
  } else if (op.kind == OpKind::Copy || op.kind == OpKind::Reduce || op.kind == OpKind::ReduceBefore) {
    o << " " << op.bytes() << " B";
  } else if (op.kind == OpKind::Wait || op.kind == OpKind::Signal) {
    o << " " << (op.counter.on_node ? "n" : "r") << op.counter.owner << ".c" << op.counter.index;
    if (op.kind == OpKind::Wait) o << " >= " << op.value;
  }
  o << ")";
  return o.str();
}

std::string human_bytes(uint64_t b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  std::ostringstream o;
  if (u == 0 || v == static_cast<uint64_t>(v))
    o << static_cast<uint64_t>(v) << " " << unit[u];
  else
    o << std::setprecision(3) << v << " " << unit[u];
  return o.str();
}

void print_schedule_text(std::ostream& out, const Schedule& s) {
  const Topology& t = s.topo;
  out << schedule_title(s) << call_args_text(s) << ", striping above " << human_bytes(s.stripe_threshold) << "\n";
  out << "spans: region[begin,end) of the rank itself; rN. / nN. = of rank / node N\n";
  for (int r = 0; r < t.nranks(); ++r) {
    out << "rank " << r << " (node " << t.node_of(r) << ", local " << t.local_rank(r) << ")\n";
    int last_step = -1;
    for (const Op& op : s.programs[r]) {
      if (op.step != last_step)
        out << "  step " << std::left << std::setw(3) << op.step;
      else
        out << "          ";
      last_step = op.step;
      out << std::left << std::setw(7) << op_name(op.kind);
      int node = t.node_of(r);
      switch (op.kind) {
        case OpKind::Put:
          out << "-> " << std::setw(4) << op.peer << std::setw(8) << rail_text(op.rail) << std::setw(10)
              << human_bytes(op.bytes());
          for (size_t i = 0; i < op.segs.size(); ++i)
            out << (i ? ", " : "") << span_text(op.segs[i].src, r, node) << " -> "
                << span_text(op.segs[i].dst, r, node);
          out << "  notify " << counter_text(op.counter);
          if (op.hw != HwAssist::None) out << "  (hardware " << hw_text(op.hw) << ")";
          break;
        case OpKind::Copy:
        case OpKind::Reduce:
        case OpKind::ReduceBefore:
          out << std::setw(22) << human_bytes(op.bytes());
          for (size_t i = 0; i < op.segs.size(); ++i)
            out << (i ? ", " : "") << span_text(op.segs[i].src, r, node) << " -> "
                << span_text(op.segs[i].dst, r, node);
          break;
        case OpKind::Signal: out << counter_text(op.counter); break;
        case OpKind::Wait: out << counter_text(op.counter) << " >= " << op.value; break;
        case OpKind::Flush: out << "(until earlier puts stop reading their sources)"; break;
      }
      out << "\n";
    }
  }
  print_stats_text(out, s);
}

void print_stats_text(std::ostream& out, const Schedule& s) {
  ScheduleStats st = s.stats();
  out << "totals: " << st.comm_steps << " communication steps (steps 0.." << st.last_step << " in all), "
      << st.messages << " messages (at most " << st.max_messages_per_rank << " from one rank)\n";
  out << "  network: " << human_bytes(st.net_bytes) << " in all, at most " << human_bytes(st.max_net_bytes_sent_per_rank)
      << " sent by one rank, at most " << human_bytes(st.max_net_bytes_recv_per_node) << " received by one node\n";
  out << "  per rail (all ranks / busiest rank):";
  for (size_t i = 0; i < st.rail_bytes.size(); ++i)
    out << (i ? "," : "") << " rail " << i << " " << human_bytes(st.rail_bytes[i]) << " / "
        << human_bytes(st.max_rail_bytes_per_rank[i]);
  out << "\n  shared memory and local copies: " << human_bytes(st.shm_bytes);
  if (st.reduce_bytes) out << " (" << human_bytes(st.reduce_bytes) << " of them reduced)";
  out << "\n";
}

void print_schedule_json(std::ostream& o, const Schedule& s) {
  const Topology& t = s.topo;
  std::vector<int> node_of;
  for (int r = 0; r < t.nranks(); ++r) node_of.push_back(t.node_of(r));
  o << "{\"collective\":\"" << collective_name(s.collective) << "\",\"algorithm\":\"" << s.algorithm << "\",\"ranks\":" << t.nranks()
    << ",\"nodes\":" << t.nnodes() << ",\"rails\":" << t.rails() << ",\"stripe_threshold\":" << s.stripe_threshold
    << ",\"root\":" << s.root << ",\"dtype\":\"" << dtype_name(s.dtype) << "\",\"op\":\"" << redop_name(s.redop)
    << "\",\"node_of\":";
  json_array(o, node_of);
  o << ",\"send_bytes\":";
  json_array(o, s.send_bytes);
  o << ",\"programs\":[";
  for (int r = 0; r < t.nranks(); ++r) {
    o << (r ? "," : "") << "{\"rank\":" << r << ",\"ops\":[";
    for (size_t i = 0; i < s.programs[r].size(); ++i) {
      const Op& op = s.programs[r][i];
      o << (i ? "," : "") << "{\"op\":\"" << op_name(op.kind) << "\",\"step\":" << op.step;
      if (op.kind == OpKind::Put) {
        o << ",\"dst\":" << op.peer << ",\"bytes\":" << op.bytes() << ",\"rail\":";
        if (op.rail == kStripe) o << "\"stripe\""; else o << op.rail;
        if (op.hw != HwAssist::None) o << ",\"hw\":\"" << hw_text(op.hw) << "\"";
      }
      const bool local = op.kind == OpKind::Copy || op.kind == OpKind::Reduce || op.kind == OpKind::ReduceBefore;
      if (local) o << ",\"bytes\":" << op.bytes();
      if (op.kind != OpKind::Flush && !local)
        o << ",\"counter\":\"" << counter_text(op.counter) << "\"";
      if (op.kind == OpKind::Wait) o << ",\"value\":" << op.value;
      if (!op.segs.empty()) {
        o << ",\"segments\":[";
        for (size_t j = 0; j < op.segs.size(); ++j) {
          o << (j ? "," : "") << "{\"src\":";
          span_json(o, op.segs[j].src);
          o << ",\"dst\":";
          span_json(o, op.segs[j].dst);
          o << "}";
        }
        o << "]";
      }
      o << "}";
    }
    o << "]}";
  }
  ScheduleStats st = s.stats();
  o << "],\"totals\":{\"steps\":" << st.comm_steps << ",\"messages\":" << st.messages
    << ",\"max_messages_per_rank\":" << st.max_messages_per_rank << ",\"net_bytes\":" << st.net_bytes
    << ",\"max_net_bytes_sent_per_rank\":" << st.max_net_bytes_sent_per_rank
    << ",\"max_net_bytes_recv_per_node\":" << st.max_net_bytes_recv_per_node << ",\"shm_bytes\":" << st.shm_bytes
    << ",\"rail_bytes\":";
  json_array(o, st.rail_bytes);
  o << ",\"max_rail_bytes_per_rank\":";
  json_array(o, st.max_rail_bytes_per_rank);
  o << "}}\n";
}

}  // namespace railcoll
