// What a process holds that a communicator must give back when destroyed:
// open files, threads, mappings of railcoll's shared memory (a segment is
// unlinked at set-up, so only /proc/self/maps still shows it).
#pragma once
#include <dirent.h>

#include <fstream>
#include <string>
#include <thread>

struct ProcessHoldings {
  int files = 0, threads = 0, shm_maps = 0;

  static ProcessHoldings now() {
    // ThreadSanitizer starts a thread of its own at a process's first
    // pthread_create, which would count as left behind by whatever made the
    // first thread after `before`: one thread made and joined first.
    static const bool runtime_threads_started = [] {
      std::thread([] {}).join();
      return true;
    }();
    (void)runtime_threads_started;
    ProcessHoldings h;
    h.files = entries("/proc/self/fd");
    h.threads = entries("/proc/self/task");
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) h.shm_maps += line.find("/dev/shm/railcoll") != std::string::npos;
    return h;
  }
  bool operator==(const ProcessHoldings& o) const {
    return files == o.files && threads == o.threads && shm_maps == o.shm_maps;
  }
  // "open files 8 -> 9, threads 3 -> 3, shared-memory mappings 0 -> 0"
  std::string since(const ProcessHoldings& before) const {
    return "open files " + std::to_string(before.files) + " -> " + std::to_string(files) + ", threads " +
           std::to_string(before.threads) + " -> " + std::to_string(threads) + ", shared-memory mappings " +
           std::to_string(before.shm_maps) + " -> " + std::to_string(shm_maps);
  }

 private:
  static int entries(const char* dir) {  // the same offset (., .., the DIR's own fd) every time
    int n = 0;
    if (DIR* d = opendir(dir)) {
      while (readdir(d)) ++n;
      closedir(d);
    }
    return n;
  }
};
