// What the launcher verbs (`railcoll run`, `railcoll cluster run|mpirun`) share:
// the split at "--", the job options and the report of a failed job.
#pragma once
#include <string>
#include <vector>

#include "args.hpp"
#include "testbed/job.hpp"

namespace railcoll::cli {

// The job options every launcher verb takes.
extern const std::set<std::string> kJobFlags;   // --tag-output
extern const std::set<std::string> kJobValued;  // --timeout, --grace

// "OPTIONS -- PROG ARGS": the options; PROG ARGS go to *prog.
std::vector<std::string> split_at_dashes(const std::vector<std::string>& argv, std::vector<std::string>* prog);
// --timeout S (or `default_timeout`), --grace S, --tag-output.
testbed::JobOptions job_options(const Args& a, double default_timeout);
// Says why a failed job failed and every rank's status on stderr, and where
// the ranks' flight records are when `records` is given; returns the job's exit status.
int report_job(const std::string& verb, const testbed::JobResult& r, testbed::JobFlightRecords* records = nullptr);
// The line about a failed job's flight records ("railcoll VERB: the flight records of ..."), if any.
void report_records(const std::string& verb, const testbed::JobResult& r, testbed::JobFlightRecords& records, int ranks);

}  // namespace railcoll::cli
