// hook_floor: attaches bench/hook_floor.bpf.c's programs to the three block
// tracepoints iotape record uses and waits for SIGINT or SIGTERM. With
// --clock each program reads CLOCK_BOOTTIME once, as iotape's do. For
// bench/record_overhead.py: the IOPS ratio with these attached is the most any
// tracer on these hooks could reach on this machine.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench/hook_floor.skel.h"

int main(int argc, char** argv) {
  const bool clock = argc > 1 && std::string(argv[1]) == "--clock";
  if (argc > 2 || (argc == 2 && !clock)) {
    std::fprintf(stderr, "usage: hook_floor [--clock]\n");
    return 2;
  }
  // A shell starts background jobs with SIGINT ignored, and an ignored
  // signal never reaches sigwait.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, nullptr);

  hook_floor_bpf* skel = hook_floor_bpf__open();
  if (!skel) {
    std::fprintf(stderr, "hook_floor: cannot open the BPF object: %s\n", std::strerror(errno));
    return 1;
  }
  skel->rodata->read_clock = clock;
  int err = hook_floor_bpf__load(skel);
  if (err == 0) err = hook_floor_bpf__attach(skel);
  if (err != 0) {
    std::fprintf(stderr, "hook_floor: cannot load or attach: %s\n", std::strerror(-err));
    hook_floor_bpf__destroy(skel);
    return 1;
  }
  std::printf("hook_floor: attached%s\n", clock ? " (one clock read per program)" : "");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  hook_floor_bpf__destroy(skel);
  return 0;
}
