#include "convert/export/exporter.h"
#include "convert/export/formats.h"

namespace iotape::convert {
namespace {

constexpr Exporter kExporters[] = {
    {"fio-iolog", "fio iolog v3, for fio --read_iolog (with --replay_redirect=DEV)",
     "queue and completion times, status, pid, process, flags; write-zeroes become writes", export_fio_iolog},
    {"blktrace", "blktrace binary (Q, D, C events); read it with blkparse -i - < FILE, btt",
     "cgroup, source index; sub-sector offsets", export_blktrace},
    {"blkparse", "blkparse's default text output (Q, D, C events)", "cgroup, source index; sub-sector offsets",
     export_blkparse},
    {"csv",
     "CSV with a header line, one row per IO: every field, flags as RWBS letters and as flag_bits, device_name "
     "(columns: iotape cat --help)",
     "nothing", export_csv},
    {"jsonl", "JSON lines: one object per IO, every field that is known, device_name",
     "name bytes that are not UTF-8, written as U+FFFD", export_jsonl},
};

}  // namespace

std::span<const Exporter> exporters() { return kExporters; }

const Exporter* find_exporter(std::string_view name) {
  for (const Exporter& e : exporters())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace iotape::convert
