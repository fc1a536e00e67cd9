// The built-in profiles, in the documented profile format (docs/workloads.md).
#include "workloads/profile.h"

namespace iotape::workloads {

// storage-heavy / storage-light: the published statistics of the AnandTech
// Storage Bench 2011 Heavy and Light traces. Read share from the IO counts
// (2,168,893 of 3,952,340; 372,630 of 832,339). The seven published size
// buckets leave 12.6% and 18.1% unassigned: those IOs are made larger than
// 128 KiB, the one bucket the publication does not name. Heavy publishes only
// 59% at QD1 and a mean of ~4.6, so its other depths are chosen to give that
// mean. Idle gaps are capped at 25 ms as the benchmark replays them.
static const char* kStorageHeavy = R"({
  "name": "storage-heavy",
  "description": "AnandTech Storage Bench 2011 Heavy statistics: 55% reads, ~43% sequential, mean QD ~4.6, 59% at QD1",
  "span": "128GiB",
  "ios": 3952340,
  "device": {"latency": "50us", "bandwidth": "500MB/s", "parallelism": 4},
  "read": 54.876,
  "sizes": {"512-3584": 7.8, "4K": 29.2, "8K": 3.5, "16K": 10.3, "32K": 10.8, "64K": 4.1, "128K": 21.7,
            "132K-256K": 12.6},
  "sequential": 43,
  "qd": {"1": 59, "2": 9, "3": 6.5, "4-5": 6, "6-10": 7, "11-20": 7, "21-32": 4, "33-48": 1.5},
  "qd_run": 1,
  "idle": {"probability": 20, "mean": "2ms", "max": "25ms"}
})";

static const char* kStorageLight = R"({
  "name": "storage-light",
  "description": "AnandTech Storage Bench 2011 Light statistics: 45% reads, ~70% sequential, 73.4% at QD1",
  "span": "128GiB",
  "ios": 832339,
  "device": {"latency": "50us", "bandwidth": "500MB/s", "parallelism": 4},
  "read": 44.769,
  "sizes": {"512-3584": 6.2, "4K": 27.6, "8K": 2.4, "16K": 8.0, "32K": 6.5, "64K": 4.8, "128K": 26.4,
            "132K-256K": 18.1},
  "sequential": 70,
  "qd": {"1": 73.4, "2": 16.8, "3": 2.6, "4-5": 2.3, "6-10": 3.1, "11-20": 1.5, "21-32": 0.2, "33-48": 0.2},
  "qd_run": 1,
  "idle": {"probability": 40, "mean": "5ms", "max": "25ms"}
})";

// Review patterns. qd_run 0 keeps the queue full for the whole phase.
static const char* kSeqSteps = R"({
  "name": "seq-steps",
  "description": "Sequential read, then write, block size stepped up 4 KiB..1 MiB each minute at QD4",
  "span": "32GiB",
  "duration": "18m",
  "sequential": 100,
  "qd": 4,
  "qd_run": 0,
  "sweep": {"read": [100, 0], "sizes": ["4K", "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1M"]}
})";

static const char* kRand4kQd3 = R"({
  "name": "rand-4k-qd3",
  "description": "4 KiB random read for 3 minutes, then random write for 3 minutes, over 8 GiB at QD3",
  "span": "8GiB",
  "duration": "6m",
  "sizes": {"4K": 100},
  "qd": 3,
  "qd_run": 0,
  "sweep": {"read": [100, 0]}
})";

static const char* kRand4kQd32 = R"({
  "name": "rand-4k-qd32",
  "description": "4 KiB random read for 3 minutes, then random write for 3 minutes, over 8 GiB at QD32",
  "span": "8GiB",
  "duration": "6m",
  "sizes": {"4K": 100},
  "qd": 32,
  "qd_run": 0,
  "sweep": {"read": [100, 0]}
})";

static const char* kDatabase = R"({
  "name": "database",
  "description": "8 KiB random, read share 0..100% in 10% steps, each at QD 1..256",
  "span": "16GiB",
  "ios": 990000,
  "sizes": {"8K": 100},
  "qd_run": 0,
  "sweep": {"read": [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], "qd": [1, 2, 4, 8, 16, 32, 64, 128, 256]}
})";

// The classic IOMeter web-server and file-server access specifications.
static const char* kWebServer = R"({
  "name": "web-server",
  "description": "All reads, 512 B..512 KiB random (IOMeter web server mix), at QD 1, 4, 16, 64",
  "span": "16GiB",
  "ios": 400000,
  "read": 100,
  "sizes": {"512": 22, "1K": 15, "2K": 8, "4K": 23, "8K": 15, "16K": 2, "32K": 6, "64K": 7, "128K": 1, "512K": 1},
  "qd_run": 0,
  "sweep": {"qd": [1, 4, 16, 64]}
})";

static const char* kFileServer = R"({
  "name": "file-server",
  "description": "80% reads, 512 B..64 KiB random (IOMeter file server mix), at QD 1, 4, 16, 64",
  "span": "16GiB",
  "ios": 400000,
  "read": 80,
  "sizes": {"512": 10, "1K": 5, "2K": 5, "4K": 60, "8K": 2, "16K": 4, "32K": 4, "64K": 10},
  "qd_run": 0,
  "sweep": {"qd": [1, 4, 16, 64]}
})";

static const char* kZones = R"({
  "name": "zones",
  "description": "1, 2, 3, then 4 threads each reading 128 KiB sequentially in its own zone, one IO in flight per thread",
  "span": "16GiB",
  "duration": "4m",
  "read": 100,
  "sizes": {"128K": 100},
  "sequential": 100,
  "qd_run": 0,
  "phases": [
    {"name": "1 thread", "threads": 1, "qd": 1},
    {"name": "2 threads", "threads": 2, "qd": 2},
    {"name": "3 threads", "threads": 3, "qd": 3},
    {"name": "4 threads", "threads": 4, "qd": 4}
  ]
})";

const std::vector<BuiltinProfile>& builtin_profiles() {
  static const std::vector<BuiltinProfile> all = {
      {"storage-heavy", kStorageHeavy}, {"storage-light", kStorageLight}, {"seq-steps", kSeqSteps},
      {"rand-4k-qd3", kRand4kQd3},      {"rand-4k-qd32", kRand4kQd32},    {"database", kDatabase},
      {"web-server", kWebServer},       {"file-server", kFileServer},     {"zones", kZones},
  };
  return all;
}

}  // namespace iotape::workloads
