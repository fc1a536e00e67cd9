// Makes the synthetic traces of the replay benchmarks: 4 KiB random reads,
// evenly spaced at a given rate, optionally also as a fio iolog v3 so fio can
// replay the same IOs in the same run.
//
//   replay_gen OUT.iotape --ios N [--iops R] [--span BYTES] [--latency-us L]
//              [--fio-iolog OUT.log --fio-file /dev/loopN]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <random>

#include "format/writer.h"

int main(int argc, char** argv) {
  CLI::App app{"replay benchmark trace generator"};
  std::string out, iolog, fio_file;
  uint64_t ios = 1'000'000, span = 1ull << 30, iops = 100'000, latency_us = 20, block = 4096;
  app.add_option("OUT", out)->required();
  app.add_option("--ios", ios);
  app.add_option("--iops", iops, "issue rate: IOs are 1/iops apart");
  app.add_option("--span", span, "bytes of device the offsets cover");
  app.add_option("--latency-us", latency_us, "recorded completion after issue");
  app.add_option("--block", block);
  app.add_option("--fio-iolog", iolog, "also write the IOs as a fio iolog v3");
  app.add_option("--fio-file", fio_file, "device name in the iolog");
  CLI11_PARSE(app, argc, argv);

  iotape::v1::TraceHeader h;
  h.set_source(iotape::v1::SOURCE_SYNTH);
  h.set_clock(iotape::v1::CLOCK_DOMAIN_RELATIVE);
  auto* d = h.add_devices();
  d->set_name("bench");
  d->set_size_bytes(span);
  iotape::format::TraceWriter w(out, h);
  std::ofstream log;
  if (!iolog.empty()) {
    log.open(iolog);
    log << "fio version 3 iolog\n0 " << fio_file << " add\n0 " << fio_file << " open\n";
  }
  std::mt19937_64 rng(42);
  const uint64_t blocks = span / block;
  for (uint64_t i = 0; i < ios; ++i) {
    iotape::format::Io io;
    io.issue_ns = static_cast<int64_t>(i * 1'000'000'000ull / iops);
    io.complete_ns = io.issue_ns + static_cast<int64_t>(latency_us * 1000);
    io.offset = (rng() % blocks) * block;
    io.length = block;
    w.append(io);
    if (log.is_open())
      log << io.issue_ns / 1000 << ' ' << fio_file << " read " << io.offset << ' ' << io.length << '\n';
  }
  if (log.is_open()) log << (ios * 1'000'000ull / iops) << ' ' << fio_file << " close\n";
  w.close();
  std::printf("%s: %llu IOs\n", out.c_str(), static_cast<unsigned long long>(ios));
  return 0;
}
