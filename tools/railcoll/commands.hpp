#pragma once
#include <string>
#include <vector>

namespace railcoll::cli {
// Each returns the process exit status: 0 ok, 1 failed check, 2 bad usage.
int cmd_algos(const std::vector<std::string>& args);
int cmd_show(const std::vector<std::string>& args);
int cmd_verify(const std::vector<std::string>& args);
int cmd_cluster(const std::vector<std::string>& args);  // cmd_cluster.cpp
int cmd_run(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_bench_torch(const std::vector<std::string>& args);  // cmd_bench_torch.cpp: bench --torch
int cmd_bench_reduce(const std::vector<std::string>& args);  // cmd_bench_reduce.cpp: bench --reduce
int cmd_sim(const std::vector<std::string>& args);
int cmd_reproduce(const std::vector<std::string>& args);  // railcoll sim reproduce
int cmd_goal(const std::vector<std::string>& args);       // cmd_goal.cpp
int cmd_calibrate(const std::vector<std::string>& args);  // cmd_calibrate.cpp
int cmd_info(const std::vector<std::string>& args);       // cmd_info.cpp: rails, transports, libfabric providers
int cmd_traffic(const std::vector<std::string>& args);    // cmd_traffic.cpp: background load
int cmd_doctor(const std::vector<std::string>& args);     // cmd_doctor.cpp: flight records read
int cmd_trace(const std::vector<std::string>& args);      // cmd_trace.cpp: traces merged, summed up, drawn
int cmd_report(const std::vector<std::string>& args);     // cmd_report.cpp: the current table of docs/results.md
int cmd_tune(const std::vector<std::string>& args), cmd_sim_tune(const std::vector<std::string>& args);  // cmd_tune.cpp
}  // namespace railcoll::cli
